package proxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/events"
)

// scripted is an upstream body that returns one piece per Read (a piece
// larger than the caller's buffer over several), setting the clock to the
// piece's time first, then err.
type scripted struct {
	pieces []string
	atMs   []int
	clk    *setClock
	err    error
	reads  int
	closed bool
}

func (s *scripted) Read(p []byte) (int, error) {
	if len(s.pieces) == 0 {
		if s.err != nil {
			return 0, s.err
		}
		return 0, io.EOF
	}
	s.reads++
	if s.clk != nil {
		s.clk.Set(s.atMs[0])
	}
	n := copy(p, s.pieces[0])
	if s.pieces[0] = s.pieces[0][n:]; s.pieces[0] == "" {
		s.pieces, s.atMs = s.pieces[1:], s.atMs[1:]
	}
	return n, nil
}

func (s *scripted) Close() error { s.closed = true; return nil }

// drain reads r the way fasthttp does (one Read, one chunk and one flush)
// with a buffer of size bytes, and returns each chunk.
func drain(t *testing.T, r io.Reader, size int) []string {
	t.Helper()
	var out []string
	buf := make([]byte, size)
	for i := 0; i < 1000; i++ {
		n, err := r.Read(buf)
		if n > 0 {
			out = append(out, string(buf[:n]))
		}
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("read: %v", err)
		}
	}
	t.Fatal("the relay never ended")
	return nil
}

func TestRelayFlushesWholeEvents(t *testing.T) {
	a, b, c := "data: a\n\n", "data: b\n\n", "data: c\n\n"
	tests := []struct {
		name   string
		sse    bool
		size   int // the reader's buffer
		pieces []string
		want   []string // what each flush carries
	}{
		{"one event per read", true, 4096, []string{a, b, c}, []string{a, b, c}},
		{"several events in one read go in one flush", true, 4096, []string{a + b, c}, []string{a + b, c}},
		{"half an event waits for its rest", true, 4096, []string{"data: ", "a\n", "\n", b}, []string{a, b}},
		{"the start of the next event waits, the complete one goes", true, 4096,
			[]string{a + "data: ", "b\n\n" + c}, []string{a, b + c}},
		{"CRLF and CR line ends", true, 4096, []string{"data: a\r\n\r\ndata: b\r", "\rdata: c"},
			[]string{"data: a\r\n\r\n", "data: b\r\r", "data: c"}},
		{"a boundary split over two reads", true, 4096, []string{"data: a\n", "\ndata: b"}, []string{a, "data: b"}},
		{"an event larger than the buffer goes in pieces", true, 8,
			[]string{"data: 0123456789\n\n", b, c}, []string{"data: 01", "23456789", "\n\n", "data: b\n", "\n", "data: c\n", "\n"}},
		{"carry larger than the buffer", true, 8, []string{"data: a\n\ndata: 0123456789"},
			[]string{"data: a\n", "\n", "data: 01", "23456789"}},
		{"the end sends what is left", true, 4096, []string{a, "data: b"}, []string{a, "data: b"}},
		{"not an event stream: read by read", false, 4096, []string{`{"id":`, `"c"}`}, []string{`{"id":`, `"c"}`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			up := &scripted{pieces: append([]string(nil), tc.pieces...), atMs: make([]int, len(tc.pieces))}
			evs := make(chan events.Event, 1)
			p, _ := New("http://127.0.0.1:1", func(ev events.Event) { evs <- ev }, Options{})
			_, cancel := context.WithCancel(context.Background())
			r := &relay{p: p, ctx: context.Background(), cancel: cancel, body: up, status: 200, sse: tc.sse}
			got := drain(t, r, tc.size)
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("flushes\n got %q\nwant %q", got, tc.want)
			}
			if err := r.Close(); err != nil || !up.closed {
				t.Errorf("Close: %v, upstream closed %v", err, up.closed)
			}
		})
	}
}

// The meter stamps the first token with the time of the read that
// completed its event, not of the read that began it, and a relay closed
// before the upstream ended counts as cancelled.
func TestRelayMetersAsItSends(t *testing.T) {
	tok := `data: {"id":"c9","model":"m","choices":[{"index":0,"delta":{"content":"hi"}}]}`
	done := `data: {"id":"c9","model":"m","choices":[],"usage":{"prompt_tokens":4,"completion_tokens":2}}` + "\n\ndata: [DONE]\n\n"
	tests := []struct {
		name   string
		pieces []string
		atMs   []int
		err    error
		reads  int // Reads before Close; -1: to the end
		finish events.FinishReason
		ttft   float64
	}{
		{"token split over reads", []string{tok[:20], tok[20:] + "\n", "\n", done}, []int{5, 7, 9, 30}, nil, -1, events.FinishStop, 9},
		{"upstream broken mid-answer", []string{tok + "\n\n"}, []int{6}, errors.New("connection reset"), -1, events.FinishError, 6},
		{"client gone", []string{tok + "\n\n", done}, []int{6, 30}, nil, 1, events.FinishCancelled, 6},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			up := &scripted{pieces: tc.pieces, atMs: tc.atMs, clk: clk, err: tc.err}
			evs := make(chan events.Event, 1)
			p, _ := New("http://127.0.0.1:1", func(ev events.Event) { evs <- ev }, Options{Clock: clk})
			m := newMeter(t0, []byte(`{"model":"m","stream":true}`))
			m.sse = true
			r := &relay{p: p, ctx: context.Background(), cancel: func() {}, body: up, status: 200, m: m, sse: true}
			if tc.reads < 0 {
				drain(t, r, 4096)
			} else {
				buf := make([]byte, 4096)
				for i := 0; i < tc.reads; i++ {
					r.Read(buf)
				}
			}
			r.Close()
			r.Close() // a second Close publishes nothing more
			got := next(t, evs)
			if got.Finish != tc.finish || got.TTFTMs == nil || *got.TTFTMs != tc.ttft || got.RequestID != "c9" {
				t.Errorf("event %+v (ttft %s), want finish %s, ttft %v", got, fmtp(got.TTFTMs), tc.finish, tc.ttft)
			}
			if tc.finish == events.FinishStop && got.CompletionTokens != 2 {
				t.Errorf("usage not read: %+v", got)
			}
			select {
			case ev := <-evs:
				t.Errorf("a second event %+v", ev.Payload)
			default:
			}
		})
	}
}

// A complete event reaches the client while the upstream still holds the
// rest of the next one: the start of an event after it does not hold it
// back. The upstream writes one event and the start of the next in one
// flush, then waits until the test has read the first downstream.
func TestCompleteEventFlushedBeforeNextRead(t *testing.T) {
	first := `data: {"id":"c1","model":"m","choices":[{"index":0,"delta":{"content":"a"}}]}` + "\n\n"
	second := `data: {"id":"c1","model":"m","choices":[{"index":0,"delta":{"content":"b"}}]}` + "\n\n"
	seen, gone := make(chan struct{}), make(chan struct{})
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, first+second[:10])
		w.(http.Flusher).Flush()
		select {
		case <-seen:
		case <-gone: // the test failed; let Close return
			return
		}
		io.WriteString(w, second[10:]+"data: [DONE]\n\n")
	}))
	defer upstream.Close()
	defer close(gone)
	base, evs := start(t, upstream.URL, nil)

	resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got := make(chan string, 1)
	rd := bufio.NewReader(resp.Body)
	go func() {
		var ev strings.Builder
		for {
			line, err := rd.ReadString('\n')
			ev.WriteString(line)
			if err != nil || line == "\n" {
				break
			}
		}
		got <- ev.String()
	}()
	select {
	case ev := <-got:
		if ev != first {
			t.Fatalf("first event %q, want %q", ev, first)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the complete event was held back until the next one completes")
	}
	close(seen)
	rest, _ := io.ReadAll(rd)
	if want := second + "data: [DONE]\n\n"; string(rest) != want {
		t.Errorf("rest %q, want %q", rest, want)
	}
	if ev := next(t, evs); ev.Finish != events.FinishStop || ev.TTFTMs == nil {
		t.Errorf("event %+v", ev)
	}
}
