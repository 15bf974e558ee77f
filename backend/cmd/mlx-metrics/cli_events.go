package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/ingest"
	"github.com/mlx-bun/mlx-metrics/shared/clock"
	"github.com/mlx-bun/mlx-metrics/shared/events"
	"github.com/mlx-bun/mlx-metrics/shared/plural"
)

func runEvents(ctx context.Context, args []string) error {
	return eventsCmd(ctx, args, osEnv())
}

func eventsCmd(ctx context.Context, args []string, env cliEnv) error {
	if len(args) == 0 {
		return usageErr("missing subcommand (replay)")
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintln(env.stderr, "usage: mlx-metrics events replay [flags] FILE\n\n"+
			"Works with recorded serving events.\n\n"+
			"subcommands:\n  replay     post a recorded NDJSON event file to a running backend\n\n"+
			"example:\n  mlx-metrics events replay --speed 10 session.ndjson")
		return nil
	}
	if args[0] != "replay" {
		return usageErr("unknown subcommand %q (want replay)", args[0])
	}
	return replayCmd(ctx, args[1:], env)
}

func replayCmd(ctx context.Context, args []string, env cliEnv) error {
	fs := flag.NewFlagSet("events replay", flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	server := fs.String("server", defaultServer(), "backend `URL` (env MLX_METRICS_SERVER)")
	speed := fs.Float64("speed", 0, "pace by the events' at, `FACTOR` times as fast as recorded (1 as recorded, 10 ten times faster); 0 sends at once")
	batch := fs.Int("batch", 500, "send at most `N` events per POST")
	token := fs.String("token", envFirst("MLX_METRICS_EVENTS_TOKEN", "MLX_METRICS_TOKEN"), "bearer `TOKEN` for POST /events (env MLX_METRICS_EVENTS_TOKEN, else MLX_METRICS_TOKEN)")
	asRecorded := fs.Bool("as-recorded", false, "send the events' recorded at; by default they are moved to now (the backend refuses live events over a day old)")
	fs.Usage = func() {
		fmt.Fprintln(env.stderr, "usage: mlx-metrics events replay [--server URL] [--speed FACTOR] [--batch N] [--as-recorded] FILE\n\n"+
			"Posts a recorded NDJSON event file (- for stdin) to a running backend's /api/metrics/events,\n"+
			"in the host's flat event form, each event moved in time to when it is sent (keeping the gaps).\n"+
			"Every line is validated first; nothing is sent if one is bad.\n\n"+
			"examples:\n"+
			"  mlx-metrics events replay session.ndjson\n"+
			"  mlx-metrics events replay --speed 1 --server http://127.0.0.1:7878 session.ndjson\n"+
			"  cat session.ndjson | mlx-metrics events replay -\n\nflags:")
		fs.PrintDefaults()
	}
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if err := exactlyOne(pos, "FILE"); err != nil {
		return err
	}
	if !(*speed >= 0) || *batch < 1 { // !(>=) refuses NaN too
		return usageErr("--speed must be >= 0 and --batch >= 1")
	}
	c, err := newClient(*server, *token)
	if err != nil {
		return err
	}
	evs, err := readEventFile(pos[0])
	if err != nil {
		return err
	}
	if len(evs) == 0 {
		return fmt.Errorf("%s holds no events", pos[0])
	}
	// The timeline is the core events': another type's at is never
	// checked by the backend, and one far away would stretch the replay or
	// shift every core event out of bounds. Such an event keeps the time of
	// the core event before it (the first core event's, before any).
	ats := make([]int64, len(evs))
	first := int64(0)
	for _, ev := range evs {
		if ev.Payload != nil {
			first = ev.At
			break
		}
	}
	for i, ev := range evs {
		switch {
		case ev.Payload != nil:
			ats[i] = ev.At
		case i > 0:
			ats[i] = ats[i-1]
		default:
			ats[i] = first
		}
	}

	prog := newProgress(env, "replay", len(evs))
	defer prog.done()
	clk := env.clk()
	start := clk.Now()
	due := func(i int) time.Time {
		if *speed == 0 {
			return start
		}
		return start.Add(time.Duration(float64(ats[i]-ats[0]) * float64(time.Millisecond) / *speed))
	}
	// Each event goes out stamped when it is due; sent at once, the last
	// one is now and the gaps before it are kept.
	lines := make([][]byte, len(evs))
	for i, ev := range evs {
		if !*asRecorded {
			if *speed == 0 {
				ev.At = ats[i] + start.UnixMilli() - ats[len(ats)-1]
			} else {
				ev.At = due(i).UnixMilli()
			}
			if ev.At <= 0 {
				return fmt.Errorf("event %d would be stamped before 1970; use --as-recorded", i+1)
			}
		}
		if lines[i], err = json.Marshal(ev); err != nil {
			return fmt.Errorf("event %d: %w", i+1, err)
		}
	}
	var accepted, ignored, rejected int
	for i := 0; i < len(lines); {
		if err := clock.SleepUntil(ctx, clk, due(i)); err != nil {
			return fmt.Errorf("stopped after %d of %s: %w", i, plural.Count(len(lines), "event", "events"), err)
		}
		// Send together what is due now, up to a batch.
		j := i + 1
		for now := clk.Now(); j < len(lines) && j-i < *batch && !due(j).After(now); j++ {
		}
		reply, err := c.PostEvents(ctx, append(bytes.Join(lines[i:j], []byte("\n")), '\n'))
		if err != nil {
			return fmt.Errorf("after %d of %s: %w", i, plural.Count(len(lines), "event", "events"), err)
		}
		accepted += reply.Accepted
		ignored += reply.Ignored
		rejected += reply.Rejected
		reportRejections(env, i, reply)
		i = j
		prog.set(i)
	}
	prog.done()
	// Ignored: valid events of other types (catalog.changed, job.state), which the store does not reduce.
	fmt.Fprintf(env.stdout, "replayed %s: %d accepted, %d ignored, %d rejected\n", plural.Count(len(lines), "event", "events"), accepted, ignored, rejected)
	if rejected > 0 {
		return fmt.Errorf("the backend rejected %s", plural.Count(rejected, "event", "events"))
	}
	return nil
}

// envFirst is the first of the environment variables that is set.
func envFirst(keys ...string) string {
	for _, k := range keys {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	return ""
}

// readEventFile reads and validates every line; blank lines are skipped.
func readEventFile(path string) (evs []events.Event, err error) {
	var r io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), events.MaxLineBytes+1)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		ev, err := events.Parse(line)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", filepath.Base(path), n, err)
		}
		evs = append(evs, ev)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", filepath.Base(path), err)
	}
	return evs, nil
}

// reportRejections prints why the backend refused events of a batch that
// began at event first (events are numbered from 1 in the file's order).
func reportRejections(env cliEnv, first int, reply ingest.Reply) {
	for _, r := range reply.Errors {
		where := "event ?"
		if r.Line > 0 {
			where = fmt.Sprintf("event %d", first+r.Line)
		}
		if r.Field != "" {
			where += ": " + r.Field
		}
		fmt.Fprintf(env.stderr, "rejected %s: %s\n", termLine(where), termLine(r.Reason))
	}
	if reply.Truncated {
		fmt.Fprintln(env.stderr, "rejected: more reasons than the backend lists")
	}
}
