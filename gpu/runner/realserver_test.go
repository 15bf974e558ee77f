package runner

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/gpu/loadgen/ssetest"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// The phases of realPhases tell the fake server's requests apart by
// max_tokens: decode 12, the TTFT phases 8, the concurrent streams 10.
var realPhases = bench.Phases{DecodeRuns: 3, DecodeTokens: 12, ColdPromptTokens: 50, ColdRuns: 1, WarmRuns: 1,
	LongContextTokens: -1, Concurrency: 2, ConcurrentTokens: 10}

// reply is how the fake answers one request.
type reply struct {
	status   int    // not 0: this HTTP error instead of a stream
	tokens   int    // generated; fewer than asked is an early stop
	perChunk int    // tokens a chunk
	finish   string // "" cuts the stream short
	context  int    // not 0: prompts truncated to it
}

// fakeOllama is an OpenAI-compatible server on 127.0.0.1 writing ollama's
// shapes (ssetest.Ollama); answer picks the reply to the nth request
// (from 1) of a kind: "decode", "ttft" or "chat". Chunks are 10 ms apart,
// the time of generating them (as the reference engine's timedRate), so
// that a stream arrives in more than one read.
func fakeOllama(t *testing.T, answer func(kind string, n int, asked int) reply) *httptest.Server {
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			w.Write([]byte(`{"object":"list","data":[{"id":"tiny","object":"model"}]}`))
			return
		}
		var req struct {
			Prompt    string `json:"prompt"`
			MaxTokens int    `json:"max_tokens"`
			Messages  []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		chat := strings.HasSuffix(r.URL.Path, "/chat/completions")
		kind, prompt := "ttft", req.Prompt
		switch {
		case chat:
			kind, prompt = "chat", req.Messages[0].Content
		case req.MaxTokens == realPhases.DecodeTokens:
			kind = "decode"
		}
		mu.Lock()
		seen[kind]++
		rp := answer(kind, seen[kind], req.MaxTokens)
		mu.Unlock()
		if rp.status != 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(rp.status)
			w.Write([]byte(`{"error":{"message":"llama runner process has terminated: exit status 2","type":"api_error"}}`))
			return
		}
		words := len(strings.Fields(prompt))
		if rp.context > 0 {
			words = min(words, rp.context)
		}
		w.Header().Set("Content-Type", "text/event-stream")
		o := ssetest.Ollama{Chat: chat, Texts: ssetest.Texts(rp.tokens, rp.perChunk), Finish: rp.finish, Prompt: words, Completion: rp.tokens}
		for i, c := range o.Chunks() {
			if i > 0 {
				time.Sleep(10 * time.Millisecond)
			}
			w.Write([]byte(c))
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// full is a whole stream of what was asked, one token a chunk.
func full(asked int) reply { return reply{tokens: asked, perChunk: 1, finish: "length"} }

// A real server's ways are each recorded as what happened, the phase's
// figures from what was measured: one early stop, cut stream or error
// never loses a phase, and report.md says what a figure is computed from.
func TestRealServerWays(t *testing.T) {
	tests := []struct {
		name   string
		answer func(kind string, n, asked int) reply
		status bench.CellStatus
		// figures measured (non-nil medians) and not
		measured, unmeasured []string
		problems             []string // each in report.md
		notes                map[string]string
		errs                 map[string]string
		// decode is the true decode rate (0: not checked): 3 tokens a
		// chunk 10 ms apart is 300 tok/s, not the 11 tokens over 30 ms
		// that counting all but one token gives.
		decode float64
		// console is a line the run prints (its progress), when not "".
		console string
	}{
		{"ollama's shapes, several tokens a chunk",
			func(kind string, n, asked int) reply { return reply{tokens: asked, perChunk: 3, finish: "length"} },
			bench.CellMeasured, []string{"decode", "ttft_cold", "ttft_warm", "aggregate"}, nil,
			[]string{"phase decode: several tokens a chunk (36 tokens in 12 chunks): the decode rate takes the first chunk to hold the mean"},
			map[string]string{bench.PhaseDecode: "12 tokens in 4 chunks"}, nil, 300,
			// ollama's usage has no prompt_tokens_details: its prefix cache
			// served the warm prompt, and "0 cached" would say it did not.
			"prompt tokens; the server reports no cached count)"},
		{"ignores ignore_eos and stops early",
			func(kind string, n, asked int) reply {
				switch {
				case kind == "decode" && n%3 == 1: // each attempt's first run
					return reply{tokens: 1, perChunk: 1, finish: "stop"}
				case kind == "decode", kind == "chat" && n == 2:
					return reply{tokens: 6, perChunk: 1, finish: "stop"}
				}
				return full(asked)
			},
			bench.CellMeasured, []string{"decode", "aggregate"}, nil,
			[]string{"phase decode: 1 of 3 runs failed (first: decode rate unmeasurable: 1 token in 1 chunk); its figures are from the other 2",
				"phase decode: 3 of 3 runs stopped early, at 1 (stop), 6 (stop), 6 (stop) of 12 tokens: their rates are over the tokens generated",
				"phase concurrent: 1 of 2 runs stopped early, at 6 (stop) of 10 tokens"},
			map[string]string{bench.PhaseDecode: "stopped early: 6 of 12 tokens (finish reason stop)", bench.PhaseConcurrent: "stopped early: 6 of 10 tokens"},
			map[string]string{bench.PhaseDecode: "decode rate unmeasurable: 1 token in 1 chunk"}, 0, ""},
		{"cuts streams short",
			func(kind string, n, asked int) reply {
				if kind == "decode" && n%3 == 2 || kind == "chat" && n%2 == 1 {
					return reply{tokens: 5, perChunk: 1}
				}
				return full(asked)
			},
			bench.CellMeasured, []string{"decode", "aggregate"}, nil,
			[]string{"phase decode: 1 of 3 runs failed (first: the stream ended after 5 chunks with no finish reason, no [DONE] and no usage: the server cut it short)",
				"phase concurrent: 1 of 2 runs failed"},
			map[string]string{bench.PhaseConcurrent: "the aggregate counts 1 of 2 streams (a lower bound): stream "}, // which stream the server saw first is not fixed
			map[string]string{bench.PhaseDecode: "the server cut it short"}, 0, ""},
		{"truncates the prompt to its context",
			func(kind string, n, asked int) reply { r := full(asked); r.context = 40; return r },
			bench.CellMeasured, []string{"decode", "ttft_cold", "prefill_1k"}, nil,
			[]string{"phase cold-ttft: the server truncated the prompt in 1 of 1 run (40 prompt tokens counted for 50 words sent): prefill rates are over the tokens it counted"},
			map[string]string{bench.PhaseColdTTFT: "prompt truncated: 40 prompt tokens counted for 50 words sent"}, nil, 0, ""},
		{"answers a run with an error",
			func(kind string, n, asked int) reply {
				if kind == "decode" && n%3 == 2 {
					return reply{status: http.StatusInternalServerError}
				}
				return full(asked)
			},
			bench.CellMeasured, []string{"decode"}, nil,
			[]string{"phase decode: 1 of 3 runs failed (first: HTTP 500 Internal Server Error: llama runner process has terminated: exit status 2); its figures are from the other 2"},
			nil, map[string]string{bench.PhaseDecode: "HTTP 500"}, 0, ""},
		{"answers a phase with an error",
			func(kind string, n, asked int) reply {
				if kind == "ttft" {
					return reply{status: http.StatusInternalServerError}
				}
				return full(asked)
			},
			bench.CellFailed, nil, []string{"decode", "ttft_cold"},
			[]string{"phase cold-ttft failed (attempt 2, giving up): cold TTFT run 1: HTTP 500"},
			nil, map[string]string{bench.PhaseColdTTFT: "HTTP 500"}, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := fakeOllama(t, tt.answer)
			plan := bench.Plan{Scope: bench.ScopeAll, Cells: []bench.Cell{attachedCell("ollama", srv.URL+"/v1")}, Phases: realPhases}
			out := &syncBuffer{}
			rec, dir := runPlan(t, context.Background(), plan, out)
			c := rec.Cells[0]
			if c.Status != tt.status {
				t.Fatalf("cell %s (%s), want %s; problems %q", c.Status, c.Note, tt.status, c.Problems)
			}
			cc := bench.CompactCellOf(c)
			for _, keys := range []struct {
				keys []string
				want bool
			}{{tt.measured, true}, {tt.unmeasured, false}} {
				for _, k := range keys.keys {
					f, _ := bench.FigureByKey(k)
					if got := f.Get(cc) != nil; got != keys.want {
						t.Errorf("%s measured %v, want %v (cell %+v)", k, got, keys.want, cc)
					}
				}
			}
			if d := cc.DecodeTokensPerSecond; tt.decode > 0 && (d == nil || !physical(*d, tt.decode, 0.1, 10, true)) {
				t.Errorf("decode %s tok/s, want about %v", figure(bench.Figures[0], cc), tt.decode)
			}
			if tt.console != "" && !strings.Contains(out.String(), tt.console) {
				t.Errorf("the run did not print %q:\n%s", tt.console, out.String())
			}
			report, _ := os.ReadFile(filepath.Join(dir, "report.md"))
			for _, p := range tt.problems {
				if !strings.Contains(string(report), p) {
					t.Errorf("report.md lacks %q:\n%s", p, report)
				}
			}
			for phase, want := range tt.notes {
				if !anySample(c.Samples, phase, func(s bench.Sample) bool { return s.Error == "" && strings.Contains(s.Note, want) }) {
					t.Errorf("no measured %s sample noting %q: %+v", phase, want, c.Samples)
				}
			}
			for phase, want := range tt.errs {
				if !anySample(c.Samples, phase, func(s bench.Sample) bool { return strings.Contains(s.Error, want) }) {
					t.Errorf("no %s sample with the error %q: %+v", phase, want, c.Samples)
				}
			}
		})
	}
}

func anySample(samples []bench.Sample, phase string, ok func(bench.Sample) bool) bool {
	for _, s := range samples {
		if s.Phase == phase && ok(s) {
			return true
		}
	}
	return false
}
