package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/events"
)

// backfill fills the backend's window with span of traffic before now, so
// that the charts hold what they hold for a panel left open (a full
// timeline) from the first frame: the reference engine's recorded traffic
// (the file at recording, its last span, moved to end just before now)
// and the posted models' at one sample of each every 5 s, the timeline's
// interval.
func backfill(ctx context.Context, base, recording string, f *feeder, span time.Duration) error {
	now := time.Now().UnixMilli()
	if err := postRecording(ctx, base, recording, span, now-2000); err != nil {
		return err
	}
	if f.models == 0 {
		return nil
	}
	if err := f.post(ctx, f.loads(now-span.Milliseconds()-2000)); err != nil {
		return err
	}
	var batch []events.Event
	for at := now - span.Milliseconds(); at < now; at += 5000 {
		batch = append(batch, f.second(at)...)
		if len(batch) >= 20000 {
			if err := f.post(ctx, batch); err != nil {
				return err
			}
			batch = nil
		}
	}
	if len(batch) > 0 {
		return f.post(ctx, batch)
	}
	return nil
}

// postRecording posts the recording's last span of events, moved in time
// with their gaps kept so that the newest is at end.
func postRecording(ctx context.Context, base, path string, span time.Duration, end int64) error {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	zr, err := gzip.NewReader(file)
	if err != nil {
		return err
	}
	var evs []map[string]any
	var newest int64
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		d := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		d.UseNumber()
		var ev map[string]any
		if err := d.Decode(&ev); err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
		n, _ := ev["at"].(json.Number)
		at, err := n.Int64()
		if err != nil {
			return fmt.Errorf("%s: at %v", path, ev["at"])
		}
		ev["at"] = at
		newest = max(newest, at)
		evs = append(evs, ev)
	}
	if err := sc.Err(); err != nil {
		return err
	}
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	n := 0
	for _, ev := range evs {
		at := ev["at"].(int64)
		if newest-at > span.Milliseconds() && ev["type"] != string(events.TypeModelLoad) {
			continue
		}
		ev["at"] = at - newest + end
		if err := enc.Encode(ev); err != nil {
			return err
		}
		n++
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/metrics/events", &body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	var reply struct{ Accepted, Rejected int }
	json.NewDecoder(res.Body).Decode(&reply)
	if res.StatusCode != http.StatusOK || reply.Rejected > 0 || reply.Accepted != n {
		return fmt.Errorf("posting the recording: %s, %+v of %d", res.Status, reply, n)
	}
	return nil
}
