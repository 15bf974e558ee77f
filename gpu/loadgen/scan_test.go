package loadgen

import (
	"encoding/json"
	"testing"
	"time"
)

// scanCases are chunks as servers send them, and ones made to trip the
// scanner; want -1 means it must decline (Unmarshal reads the chunk).
var scanCases = []struct {
	name, chunk string
	want        int
}{
	{"reference engine completion", `{"id":"cmpl-1","object":"text_completion","created":1764000000,"model":"reference-sim","choices":[{"index":0,"text":" word","logprobs":null,"finish_reason":null}]}`, 1},
	{"reference engine chat", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" word"},"finish_reason":null}]}`, 1},
	{"role chunk", `{"id":"a","choices":[{"delta":{"role":"assistant","content":""}}]}`, 0},
	{"python json.dumps spacing", `{"id": "a", "choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": null}]}`, 1},
	{"reasoning", `{"id":"a","choices":[{"delta":{"reasoning_content":"think","content":null}}]}`, 1},
	{"escaped text", `{"id":"a","choices":[{"text":"\u00e9\n\"q\""}]}`, 1},
	{"two choices", `{"id":"a","choices":[{"text":"x"},{"text":""},{"delta":{"content":"y"}}]}`, 2},
	{"empty finish reason", `{"id":"a","choices":[{"text":"x","finish_reason":""}]}`, 1},
	{"nested unknowns", `{"id":"a","x":{"y":[1,-2.5e3,true,false,null,{"z":"\\"}]},"choices":[{"text":"x","logprobs":{"tokens":["a"]}}]}`, 1},
	{"upper-case keys", `{"ID":"a","Choices":[{"Text":"x"}]}`, 1},
	{"finish reason", `{"id":"a","choices":[{"text":"","finish_reason":"stop"}]}`, -1},
	{"usage", `{"id":"a","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1}}`, -1},
	{"error", `{"error":{"message":"boom"}}`, -1},
	{"server timing", `{"id":"a","choices":[],"server_timing":{"received_unix_ns":1,"first_token_unix_ns":2}}`, -1},
	{"duplicate choices", `{"id":"a","choices":[{"text":"x"}],"choices":[]}`, -1},
	{"duplicate text, case apart", `{"id":"a","choices":[{"text":"x","TEXT":""}]}`, -1},
	{"escaped key", `{"id":"a","choices":[{"t\u0065xt":"x"}]}`, -1},
	{"non-ASCII key", `{"id":"a","choices":[{"tέxt":"x"}]}`, -1},
	{"text of a number", `{"id":"a","choices":[{"text":5}]}`, -1},
	{"a null choice", `{"id":"a","choices":[null]}`, -1},
	{"trailing data", `{"id":"a","choices":[]} x`, -1},
	{"control byte in a string", "{\"id\":\"a\",\"choices\":[{\"text\":\"a\x01\"}]}", -1},
	{"bad number", `{"id":"a","n":01,"choices":[]}`, -1},
	{"truncated", `{"id":"a","choices":[{"text":"x"`, -1},
	{"not an object", `["x"]`, -1},
}

func TestScanTokenChunk(t *testing.T) {
	for _, tt := range scanCases {
		t.Run(tt.name, func(t *testing.T) {
			n, ok := scanTokenChunk([]byte(tt.chunk))
			if tt.want < 0 {
				if ok {
					t.Fatalf("scanned (%d), want it declined", n)
				}
				return
			}
			if !ok || n != tt.want {
				t.Fatalf("scanTokenChunk = %d, %v; want %d, true", n, ok, tt.want)
			}
			checkAgainstUnmarshal(t, []byte(tt.chunk), n)
		})
	}
}

// FuzzScanTokenChunk holds the scanner to json.Unmarshal: whatever it
// accepts, Unmarshal reads as a chunk with no usage, error, timing or
// finish reason, and the same number of choices with text.
func FuzzScanTokenChunk(f *testing.F) {
	for _, tt := range scanCases {
		f.Add([]byte(tt.chunk))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if n, ok := scanTokenChunk(data); ok {
			checkAgainstUnmarshal(t, data, n)
		}
	})
}

func checkAgainstUnmarshal(t *testing.T, data []byte, n int) {
	t.Helper()
	var ch chunk
	if err := json.Unmarshal(data, &ch); err != nil {
		t.Fatalf("scanned %q (%d with text) but Unmarshal refuses it: %v", data, n, err)
	}
	if ch.Usage != nil || ch.Error != nil || ch.ServerTiming != nil {
		t.Fatalf("scanned %q, which carries usage, an error or timing", data)
	}
	with := 0
	for _, c := range ch.Choices {
		if c.FinishReason != nil && *c.FinishReason != "" {
			t.Fatalf("scanned %q, which has a finish reason", data)
		}
		if c.Text != "" || c.Delta.Content != "" || c.Delta.ReasoningContent != "" {
			with++
		}
	}
	if with != n {
		t.Fatalf("scanned %q: %d choices with text, Unmarshal finds %d", data, n, with)
	}
}

// BenchmarkAddTokenChunk is the client's cost per token chunk.
func BenchmarkAddTokenChunk(b *testing.B) {
	data := []byte(scanCases[0].chunk)
	r := Result{ID: "cmpl-1"}
	at := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		if err := r.add(data, at); err != nil {
			b.Fatal(err)
		}
	}
}
