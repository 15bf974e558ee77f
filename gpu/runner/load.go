package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mlx-bun/mlx-metrics/gpu/load"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// requestsDir holds the load phase's per-request records, in the run
// directory: one NDJSON file per point and repeat.
const requestsDir = "requests"

// load runs the cell's load phase (gpu/load). A retry measures the sweep
// anew and replaces the first attempt's points.
func (m *measurer) load(ctx context.Context, attempt int) ([]bench.Sample, error) {
	dir := filepath.Join(filepath.Dir(m.run.logDir), requestsDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("the requests directory could not be made: %w", pathless("mkdir", requestsDir, err))
	}
	files := fmt.Sprintf("%02d-%s", m.cell+1, unsafeName.ReplaceAllString(m.res.Key, "_"))
	if attempt > 1 {
		files += fmt.Sprintf("-a%d", attempt)
	}
	res, err := load.Run(ctx, load.Options{
		Client: m.client, Model: m.model, Load: *m.run.phases.Load,
		Nonce: m.nonce + fmt.Sprintf("-a%d", attempt),
		Dir:   dir, Files: files,
		// A loaded server queues requests: twice a lone request's
		// deadline, and a minute more.
		Timeout: func(promptTokens, maxTokens int) time.Duration {
			return 2*m.timeout(promptTokens, maxTokens) + time.Minute
		},
		Out: m.run.o.Out,
	})
	for i := range res.Points {
		res.Points[i].RequestsFile = requestsDir + "/" + res.Points[i].RequestsFile
	}
	m.res.LoadPoints, m.res.MaxRate = res.Points, res.MaxRate
	for _, lp := range res.Points {
		for _, p := range lp.Problems {
			if !strings.HasPrefix(p, "saturated") { // a sweep goes past saturation on purpose
				m.res.Problems = append(m.res.Problems, fmt.Sprintf("load point %d.%d: %s", lp.Point, lp.Repeat, p))
			}
		}
	}
	if mr := res.MaxRate; mr != nil {
		fmt.Fprintf(m.run.o.Out, "max rate: %g requests/s (%s)\n", mr.Rate, mr.Note)
	}
	return nil, err
}
