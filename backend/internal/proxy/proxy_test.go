package proxy

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
	"github.com/mlx-bun/mlx-metrics/shared/clock"
	"github.com/mlx-bun/mlx-metrics/shared/events"
)

// setClock is a test clock the fake upstream sets, in ms after t0.
type setClock struct{ *clock.Fake }

func (c setClock) Set(ms int) {
	c.Advance(t0.Add(time.Duration(ms) * time.Millisecond).Sub(c.Now()))
}
func newClock() *setClock      { return &setClock{clock.NewFake(t0)} }
func f64(v float64) *float64   { return &v }
func str(v float64) string     { b, _ := json.Marshal(v); return string(b) }
func ptrEq(a, b *float64) bool { return (a == nil && b == nil) || (a != nil && b != nil && *a == *b) }
func fmtp(p *float64) string {
	if p == nil {
		return "null"
	}
	return str(*p)
}

var t0 = time.UnixMilli(1764690000000)

// start serves the proxy to upstream on 127.0.0.1 and returns its URL and
// the events it publishes.
func start(t *testing.T, upstream string, clk *setClock) (string, chan events.Event) {
	t.Helper()
	var opts Options
	if clk != nil {
		opts.Clock = clk
	}
	return startWith(t, upstream, opts)
}

// startWith serves the proxy to upstream with opts on 127.0.0.1 and
// returns its URL and the events it publishes.
func startWith(t *testing.T, upstream string, opts Options) (string, chan events.Event) {
	t.Helper()
	evs := make(chan events.Event, 16)
	p, err := New(upstream, func(ev events.Event) { evs <- ev }, opts)
	if err != nil {
		t.Fatal(err)
	}
	url, _ := serve(t, p)
	return url, evs
}

// startStopping is start with a base context the test ends (serve
// stopping) with cancel.
func startStopping(t *testing.T, upstream string) (string, *fiber.App, chan events.Event, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	evs := make(chan events.Event, 1)
	p, err := New(upstream, func(ev events.Event) { evs <- ev }, Options{BaseContext: ctx})
	if err != nil {
		t.Fatal(err)
	}
	base, app := serve(t, p)
	return base, app, evs, cancel
}

// serve serves p on 127.0.0.1 until the test ends, and returns its URL and
// the app.
func serve(tb testing.TB, p *Proxy) (string, *fiber.App) {
	tb.Helper()
	// The proxy's row of the route table (app.Routes).
	app := server.New(server.Options{}, server.Route{Method: server.AnyMethod, Path: "/v1/*", Handler: p.Handle,
		Body: server.LargeBody, Streams: true, Token: server.ProxyToken})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	go app.Listener(ln)
	tb.Cleanup(func() { app.Shutdown() })
	return "http://" + ln.Addr().String(), app
}

func next(t *testing.T, evs chan events.Event) *events.RequestFinished {
	t.Helper()
	select {
	case ev := <-evs:
		return ev.Payload.(*events.RequestFinished)
	case <-time.After(5 * time.Second):
		t.Fatal("no request.finished event")
		return nil
	}
}

// sseChunks is what a vLLM-style upstream streams, with the clock reading
// (ms after the request) at which each chunk is written.
var sseChunks = []struct {
	atMs int
	data string
}{
	{10, `{"id":"chatcmpl-7","object":"chat.completion.chunk","model":"llama-8b","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`},
	{50, `{"id":"chatcmpl-7","object":"chat.completion.chunk","model":"llama-8b","choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}`},
	{70, `{"id":"chatcmpl-7","object":"chat.completion.chunk","model":"llama-8b","choices":[{"index":0,"delta":{"content":" world"},"finish_reason":null}]}`},
	{90, `{"id":"chatcmpl-7","object":"chat.completion.chunk","model":"llama-8b","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`},
	{95, `{"id":"chatcmpl-7","object":"chat.completion.chunk","model":"llama-8b","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":4}}}`},
	{100, `[DONE]`},
}

func TestStreamPassthroughFlushesEachChunk(t *testing.T) {
	clk := newClock()
	release := make(chan struct{})
	var gotReq *http.Request
	var gotBody []byte
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotReq = r
		gotBody, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Request-Id", "upstream-id-1")
		w.WriteHeader(http.StatusOK)
		for i, c := range sseChunks {
			clk.Set(c.atMs)
			io.WriteString(w, "data: "+c.data+"\n\n")
			w.(http.Flusher).Flush()
			if i < len(sseChunks)-1 {
				<-release // the client must see this chunk before the next exists
			}
		}
	}))
	defer upstream.Close()
	base, evs := start(t, upstream.URL+"/v1", clk)

	reqBody := `{"model":"llama-8b","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`
	req, _ := http.NewRequest("POST", base+"/v1/chat/completions?trace=1", strings.NewReader(reqBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-test")
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()

	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	for k, want := range map[string]string{
		"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Request-Id": "upstream-id-1",
	} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("response header %s = %q, want %q", k, got, want)
		}
	}
	rd := bufio.NewReader(resp.Body)
	for i, c := range sseChunks {
		var event strings.Builder
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				t.Fatalf("chunk %d: %v", i, err)
			}
			event.WriteString(line)
			if line == "\n" {
				break
			}
		}
		if want := "data: " + c.data + "\n\n"; event.String() != want {
			t.Fatalf("chunk %d = %q, want %q", i, event.String(), want)
		}
		if i < len(sseChunks)-1 {
			release <- struct{}{}
		}
	}
	if rest, _ := io.ReadAll(rd); len(rest) != 0 {
		t.Errorf("bytes after [DONE]: %q", rest)
	}

	// The upstream got the request as sent.
	if gotReq.URL.RequestURI() != "/v1/chat/completions?trace=1" {
		t.Errorf("upstream path %q", gotReq.URL.RequestURI())
	}
	if string(gotBody) != reqBody {
		t.Errorf("upstream body %q", gotBody)
	}
	if gotReq.Header.Get("Authorization") != "Bearer sk-test" {
		t.Errorf("Authorization not forwarded: %v", gotReq.Header)
	}
	if gotReq.Header.Get("X-Forwarded-For") != "127.0.0.1" {
		t.Errorf("X-Forwarded-For = %q", gotReq.Header.Get("X-Forwarded-For"))
	}

	got := next(t, evs)
	want := &events.RequestFinished{
		Model: "llama-8b", RequestID: "chatcmpl-7", Finish: events.FinishLength,
		PromptTokens: 12, CachedPromptTokens: 4, CompletionTokens: 3,
		TTFTMs: f64(50), DecodeTokensPerSecond: f64(2 / 0.050), TotalMs: 100,
	}
	checkEvent(t, got, want)
}

func checkEvent(t *testing.T, got, want *events.RequestFinished) {
	t.Helper()
	if got.Model != want.Model || got.RequestID != want.RequestID || got.Finish != want.Finish ||
		got.PromptTokens != want.PromptTokens || got.CachedPromptTokens != want.CachedPromptTokens ||
		got.CompletionTokens != want.CompletionTokens || got.TotalMs != want.TotalMs ||
		!ptrEq(got.TTFTMs, want.TTFTMs) || !ptrEq(got.DecodeTokensPerSecond, want.DecodeTokensPerSecond) ||
		got.QueueMs != nil || got.PrefillTokensPerSecond != nil {
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(want)
		t.Errorf("event\n got %s\nwant %s", gb, wb)
	}
	// What the proxy publishes must pass the wire validation, but for the
	// empty model of a request no model accepted, which the wire has no
	// form for (it stays on the bus).
	p := *got
	if p.Model == "" && p.Finish == events.FinishError {
		p.Model = "no-model"
	}
	b, _ := json.Marshal(events.Event{Type: events.TypeRequestFinished, At: 1, Payload: &p})
	if _, err := events.Parse(b); err != nil {
		t.Errorf("event does not validate: %v", err)
	}
}

func TestNonStreamedAnswers(t *testing.T) {
	tests := []struct {
		name        string
		method      string
		path        string
		reqBody     string
		status      int
		contentType string
		body        string
		want        *events.RequestFinished // nil: no event
	}{
		{
			name: "chat completion with usage", method: "POST", path: "/v1/chat/completions",
			reqBody: `{"model":"qwen","messages":[]}`, status: 200, contentType: "application/json",
			body: `{"id":"chatcmpl-9","model":"qwen","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":7,"completion_tokens":2,"total_tokens":9}}`,
			want: &events.RequestFinished{Model: "qwen", RequestID: "chatcmpl-9", Finish: "stop",
				PromptTokens: 7, CompletionTokens: 2, TotalMs: 40},
		},
		{
			name: "error status and body pass through", method: "POST", path: "/v1/completions",
			reqBody: `{"model":"qwen","prompt":"x","max_tokens":-1}`, status: 400, contentType: "application/json",
			body: `{"object":"error","message":"max_tokens must be at least 1, got -1.","type":"BadRequestError","param":null,"code":400}`,
			// Refused, so under no model.
			want: &events.RequestFinished{Model: "", RequestID: "proxy-1", Finish: "error", TotalMs: 40},
		},
		{
			// fasthttp reads no body for a 204: the answer is still complete.
			name: "no content, 204", method: "POST", path: "/v1/chat/completions",
			reqBody: `{"model":"qwen","messages":[]}`, status: 204,
			want: &events.RequestFinished{Model: "qwen", RequestID: "proxy-1", Finish: "stop", TotalMs: 40},
		},
		{
			name: "model list is not measured", method: "GET", path: "/v1/models", status: 200,
			contentType: "application/json", body: `{"object":"list","data":[{"id":"qwen","object":"model"}]}`,
		},
		{
			name: "no content type, 404", method: "DELETE", path: "/v1/files/abc", status: 404, body: "no such file",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != tc.method || r.URL.Path != tc.path {
					t.Errorf("upstream got %s %s", r.Method, r.URL.Path)
				}
				clk.Set(40)
				if tc.contentType != "" {
					w.Header().Set("Content-Type", tc.contentType)
				} else {
					w.Header()["Content-Type"] = nil // no sniffing: send none
				}
				w.Header().Add("Set-Cookie", "a=1")
				w.Header().Add("Set-Cookie", "b=2")
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			}))
			defer upstream.Close()
			base, evs := start(t, upstream.URL, clk)
			req, _ := http.NewRequest(tc.method, base+tc.path, strings.NewReader(tc.reqBody))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || string(body) != tc.body {
				t.Errorf("got %d %q, want %d %q", resp.StatusCode, body, tc.status, tc.body)
			}
			if got := resp.Header.Get("Content-Type"); got != tc.contentType {
				t.Errorf("Content-Type = %q, want %q", got, tc.contentType)
			}
			if got := resp.Header.Values("Set-Cookie"); len(got) != 2 {
				t.Errorf("Set-Cookie = %q, want both", got)
			}
			if tc.want == nil {
				select {
				case ev := <-evs:
					t.Errorf("unexpected event %+v", ev.Payload)
				default:
				}
				return
			}
			checkEvent(t, next(t, evs), tc.want)
		})
	}
}

func TestUpstreamDown(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + ln.Addr().String()
	ln.Close()
	base, evs := start(t, dead, nil)
	resp, err := http.Post(base+"/v1/completions?secret=s3", "application/json", strings.NewReader(`{"model":"m","prompt":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Error struct{ Message, Type string }
	}
	json.NewDecoder(resp.Body).Decode(&body)
	if resp.StatusCode != http.StatusBadGateway || body.Error.Type != "server_error" || body.Error.Message == "" {
		t.Errorf("got %d %+v, want 502 with a server_error body", resp.StatusCode, body)
	}
	if m := body.Error.Message; strings.Contains(m, "completions") || strings.Contains(m, "s3") {
		t.Errorf("the error echoes the client's path or query: %q", m)
	}
	if ev := next(t, evs); ev.Finish != events.FinishError || ev.Model != "" {
		t.Errorf("event %+v, want an error under no model (nothing accepted it)", ev)
	}
}

func TestClientCancellationReachesUpstream(t *testing.T) {
	upstreamGone := make(chan struct{})
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		// Stream tokens until the request is cancelled, bounded at 10 s.
		for i := 0; i < 10000; i++ {
			select {
			case <-r.Context().Done():
				close(upstreamGone)
				return
			case <-time.After(time.Millisecond):
			}
			io.WriteString(w, `data: {"id":"c1","model":"m","choices":[{"index":0,"delta":{"content":"tok"}}]}`+"\n\n")
			w.(http.Flusher).Flush()
		}
	}))
	defer upstream.Close()
	base, evs := start(t, upstream.URL, nil)

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"/v1/chat/completions",
		strings.NewReader(`{"model":"m","stream":true}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	cancel() // the client goes
	resp.Body.Close()

	select {
	case <-upstreamGone:
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream request was not cancelled")
	}
	if ev := next(t, evs); ev.Finish != events.FinishCancelled || ev.TTFTMs == nil {
		t.Errorf("event %+v, want cancelled with a TTFT", ev)
	}
}

func TestNewRejectsBadUpstream(t *testing.T) {
	tests := []struct {
		in, base string
		ok       bool
	}{
		{"http://127.0.0.1:8000", "http://127.0.0.1:8000", true},
		{"http://127.0.0.1:8000/v1/", "http://127.0.0.1:8000", true},
		{"https://gw.example/vllm/v1", "https://gw.example/vllm", true},
		{"127.0.0.1:8000", "", false},
		{"http://h:1/?x=1", "", false},
	}
	for _, tc := range tests {
		p, err := New(tc.in, func(events.Event) {}, Options{})
		if (err == nil) != tc.ok {
			t.Errorf("New(%q) err = %v", tc.in, err)
			continue
		}
		if tc.ok && p.Upstream() != tc.base {
			t.Errorf("New(%q).Upstream() = %q, want %q", tc.in, p.Upstream(), tc.base)
		}
	}
}

// A chunked answer that is not an event stream (a large JSON body written
// in pieces) streams through as well, and is still measured.
func TestChunkedAnswerStreamsAndIsMeasured(t *testing.T) {
	release := make(chan struct{})
	var gotHeader http.Header
	part1 := `{"id":"cmpl-3","model":"m","choices":[{"index":0,"text":"` + strings.Repeat("x", 100) + `",`
	part2 := `"finish_reason":"length"}],"usage":{"prompt_tokens":5,"completion_tokens":9,"total_tokens":14}}`
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotHeader = r.Header
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Connection", "X-Hop")
		w.Header().Set("X-Hop", "upstream-only")
		io.WriteString(w, part1)
		w.(http.Flusher).Flush() // no Content-Length: chunked
		<-release
		io.WriteString(w, part2)
	}))
	defer upstream.Close()
	base, evs := start(t, upstream.URL, nil)

	req, _ := http.NewRequest("POST", base+"/v1/completions", strings.NewReader(`{"model":"m","prompt":"p"}`))
	req.Header.Set("Connection", "keep-alive, X-Client-Hop")
	req.Header.Set("X-Client-Hop", "client-only")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	first := make([]byte, len(part1))
	if _, err := io.ReadFull(resp.Body, first); err != nil || string(first) != part1 {
		t.Fatalf("first part %q, %v", first, err)
	}
	close(release) // the second part exists only now
	rest, _ := io.ReadAll(resp.Body)
	if string(rest) != part2 {
		t.Errorf("second part %q", rest)
	}
	if resp.Header.Get("X-Hop") != "" {
		t.Errorf("a header the upstream's Connection names was forwarded")
	}
	if gotHeader.Get("X-Client-Hop") != "" {
		t.Errorf("a header the client's Connection names was forwarded")
	}
	ev := next(t, evs)
	if ev.Finish != events.FinishLength || ev.PromptTokens != 5 || ev.CompletionTokens != 9 || ev.RequestID != "cmpl-3" {
		t.Errorf("event %+v", ev)
	}
}

// A request body with a Content-Encoding reaches the upstream as the client
// encoded it, with the header that says so; the meter then takes the model
// from the answer.
func TestEncodedRequestBodyPassesUnchanged(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	io.WriteString(zw, `{"model":"m","prompt":"p"}`)
	zw.Close()
	sent := gz.Bytes()

	var gotBody []byte
	var gotEncoding string
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotBody, _ = io.ReadAll(r.Body)
		gotEncoding = r.Header.Get("Content-Encoding")
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"cmpl-1","model":"m","choices":[{"index":0,"text":"x","finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	}))
	defer upstream.Close()
	base, evs := start(t, upstream.URL, nil)

	req, _ := http.NewRequest("POST", base+"/v1/completions", bytes.NewReader(sent))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Content-Encoding", "gzip")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if !bytes.Equal(gotBody, sent) || gotEncoding != "gzip" {
		t.Errorf("upstream got body %q with Content-Encoding %q, want the %d gzip bytes sent", gotBody, gotEncoding, len(sent))
	}
	if ev := next(t, evs); ev.Model != "m" || ev.RequestID != "cmpl-1" {
		t.Errorf("event %+v", ev)
	}
}

// The base context ending (serve shutting down) cancels a stream in flight,
// so the server's graceful shutdown is not held open by a long generation.
func TestBaseContextEndsStreamsForShutdown(t *testing.T) {
	upstreamGone, release := make(chan struct{}), make(chan struct{})
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"id":"c1","model":"m","choices":[{"index":0,"delta":{"content":"tok"}}]}`+"\n\n")
		w.(http.Flusher).Flush()
		select { // a generation that would outlast the test
		case <-r.Context().Done():
			close(upstreamGone)
		case <-release: // the test failed; let Close return
		}
	}))
	defer upstream.Close()
	defer close(release)

	base, app, evs, cancel := startStopping(t, upstream.URL)

	resp, err := http.Post(base+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"m","stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}

	cancel() // serve's context ends
	shut := make(chan error, 1)
	go func() { shut <- app.Shutdown() }()
	select {
	case <-upstreamGone:
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream request was not cancelled")
	}
	if ev := next(t, evs); ev.Finish != events.FinishCancelled {
		t.Errorf("finish %q, want cancelled", ev.Finish)
	}
	io.Copy(io.Discard, resp.Body) // the client's answer ends
	select {
	case err := <-shut:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Shutdown still waits for the stream")
	}
}

// An unmeasured answer of known length (a file download) reaches the client
// as it arrives, with its length, rather than being held whole first.
func TestUnmeasuredAnswerOfKnownLengthStreams(t *testing.T) {
	part1, part2 := strings.Repeat("a", 64<<10), strings.Repeat("b", 64<<10)
	release := make(chan struct{})
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.Itoa(len(part1)+len(part2)))
		io.WriteString(w, part1)
		w.(http.Flusher).Flush()
		<-release
		io.WriteString(w, part2)
	}))
	defer upstream.Close()
	base, evs := start(t, upstream.URL, nil)

	// The headers and the first part must arrive while the upstream still
	// holds back the second.
	resp := firstPart(t, release, part1, func() (*http.Response, error) { return http.Get(base + "/v1/files/file-1/content") })
	defer resp.Body.Close()
	rest, err := io.ReadAll(resp.Body)
	if err != nil || string(rest) != part2 {
		t.Errorf("second part: %d bytes, %v", len(rest), err)
	}
	if resp.ContentLength != int64(len(part1)+len(part2)) {
		t.Errorf("Content-Length %d", resp.ContentLength)
	}
	select {
	case ev := <-evs:
		t.Errorf("unexpected event %+v", ev.Payload)
	default:
	}
}

// A measured answer of known length reaches the client as it arrives, with
// its length, rather than being held whole first: an upstream's answer of
// any size costs the proxy no more than the meter's bounded copy. One too
// large to meter is still relayed whole and counted, without its usage;
// one the upstream breaks off ends the client's answer short.
func TestMeasuredAnswerOfKnownLengthStreams(t *testing.T) {
	usage := `"usage":{"prompt_tokens":5,"completion_tokens":9}}`
	// More than fasthttp buffers before it writes an answer of known length.
	text := strings.Repeat("x", 64<<10)
	tests := []struct {
		name         string
		part1, part2 string
		broken       bool // the upstream cuts the connection instead of sending part2
		want         *events.RequestFinished
	}{
		{
			name:  "metered",
			part1: `{"id":"cmpl-4","model":"m","choices":[{"index":0,"text":"` + text,
			part2: `","finish_reason":"stop"}],` + usage,
			want: &events.RequestFinished{Model: "m", RequestID: "cmpl-4", Finish: events.FinishStop,
				PromptTokens: 5, CompletionTokens: 9, TotalMs: 40},
		},
		{
			name:  "too large to meter",
			part1: `{"id":"cmpl-5","model":"m","choices":[{"index":0,"text":"` + strings.Repeat("x", maxJSONBody),
			part2: `","finish_reason":"stop"}],` + usage,
			want:  &events.RequestFinished{Model: "m", RequestID: "proxy-1", Finish: events.FinishStop, TotalMs: 40},
		},
		{
			name:   "broken off",
			part1:  `{"id":"cmpl-6","model":"m","choices":[{"index":0,"text":"` + text,
			part2:  `"}]}`,
			broken: true,
			want:   &events.RequestFinished{Model: "m", RequestID: "proxy-1", Finish: events.FinishError, TotalMs: 40},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			release := make(chan struct{})
			upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Content-Length", strconv.Itoa(len(tc.part1)+len(tc.part2)))
				io.WriteString(w, tc.part1)
				w.(http.Flusher).Flush()
				<-release
				clk.Set(40)
				if tc.broken {
					panic(http.ErrAbortHandler) // the connection is cut
				}
				io.WriteString(w, tc.part2)
			}))
			defer upstream.Close()
			base, evs := start(t, upstream.URL, clk)

			// The headers and the first part must arrive while the
			// upstream still holds back the rest.
			resp := firstPart(t, release, tc.part1, func() (*http.Response, error) {
				return http.Post(base+"/v1/completions", "application/json", strings.NewReader(`{"model":"m","prompt":"p"}`))
			})
			defer resp.Body.Close()
			if resp.ContentLength != int64(len(tc.part1)+len(tc.part2)) {
				t.Errorf("Content-Length %d", resp.ContentLength)
			}
			rest, err := io.ReadAll(resp.Body)
			switch {
			case tc.broken && err == nil:
				t.Errorf("the answer broken off ended cleanly, after %q", rest)
			case !tc.broken && (err != nil || string(rest) != tc.part2):
				t.Errorf("second part: %d bytes, %v", len(rest), err)
			}
			checkEvent(t, next(t, evs), tc.want)
		})
	}
}

// An error never echoes more than a bounded part of what the upstream
// sent: net/http quotes a malformed header line whole.
func TestUpstreamErrorIsCut(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		buf.WriteString("HTTP/1.1 200 OK\r\n" + strings.Repeat("x", 1<<20) + "\r\n\r\n")
		buf.Flush()
	}))
	defer upstream.Close()
	base, evs := start(t, upstream.URL, nil)
	resp, err := http.Post(base+"/v1/completions", "application/json", strings.NewReader(`{"model":"m","prompt":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Error struct{ Message string }
	}
	json.NewDecoder(resp.Body).Decode(&body)
	m := body.Error.Message
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(m, "malformed") || len(m) > 512 {
		t.Errorf("got %d with a %d-byte message %.100q…, want 502 saying why in at most 512", resp.StatusCode, len(m), m)
	}
	if ev := next(t, evs); ev.Finish != events.FinishError {
		t.Errorf("event %+v, want an error", ev)
	}
}

// firstPart sends a request with do and returns its answer once its first
// part (want) has arrived, failing if that takes 5 s; then it closes
// release, which the upstream waits on before it sends the rest, so the
// rest exists only after the first part was read.
func firstPart(t *testing.T, release chan struct{}, want string, do func() (*http.Response, error)) *http.Response {
	t.Helper()
	type first struct {
		resp *http.Response
		err  error
	}
	firstc := make(chan first, 1)
	go func() {
		resp, err := do()
		if err == nil {
			b := make([]byte, len(want))
			if _, err = io.ReadFull(resp.Body, b); err == nil && string(b) != want {
				err = errors.New("first part differs")
			}
		}
		firstc <- first{resp, err}
	}()
	var f first
	select {
	case f = <-firstc:
	case <-time.After(5 * time.Second):
		close(release)
		t.Fatal("the first part did not arrive before the upstream finished")
	}
	close(release)
	if f.err != nil {
		t.Fatal(f.err)
	}
	return f.resp
}
