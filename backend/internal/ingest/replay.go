package ingest

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/events"
)

// replayBatch is how many events Replay publishes before waiting for the
// subscribers to catch up: a file is a bulk source and must not overrun
// the bus's bounded queues.
const replayBatch = 1024

// Replay publishes the events recorded in the NDJSON (or JSON array) file
// at path to b. With speed 0 it goes as fast as the subscribers take them;
// with speed s > 0 it keeps the recorded gaps between events' at, divided
// by s (1 is real time). Events keep their recorded at. Bad lines are
// counted in src and skipped, and the count not yet logged is logged when
// Replay returns. When ctx ends Replay stops reading and returns ctx's error.
func Replay(ctx context.Context, path string, src *Source, speed float64) error {
	defer src.FlushLog()
	clk, b := src.opts.Clock, src.bus
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var (
		n      int
		prevAt int64
		stop   error
	)
	err = Decode(ctxReader{ctx, f}, func(ev events.Event, pos Rejection) {
		if stop == nil {
			stop = ctx.Err()
		}
		if stop != nil {
			return
		}
		if speed > 0 && prevAt > 0 && ev.At > prevAt {
			b.Flush() // what came before is shown before the pause
			gap := time.Duration(float64(ev.At-prevAt) / speed * float64(time.Millisecond))
			if stop = clk.Sleep(ctx, gap); stop != nil {
				return
			}
		}
		if ev.At > prevAt {
			prevAt = ev.At
		}
		src.offer(ev, pos)
		if n++; n%replayBatch == 0 {
			b.Flush()
		}
	}, src.reject)
	b.Flush()
	if stop != nil {
		return stop
	}
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return nil
}

// ctxReader fails its reads once ctx ends, so a decoder reading a large
// file stops within one buffer instead of parsing the rest of it.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (r ctxReader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}
