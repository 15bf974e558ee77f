// Package loadgen is a streaming OpenAI-compatible client that measures
// what a serving benchmark needs from the chunks as they arrive: time to
// first token, decode rate between the first and the last token, and the
// token counts from the server's usage (never from the request).
package loadgen

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mlx-bun/mlx-metrics/shared/arrival"
	"github.com/mlx-bun/mlx-metrics/shared/clock"
	"github.com/mlx-bun/mlx-metrics/shared/sse"
)

// Endpoints.
const (
	Completions     = "completions"      // POST {base}/completions
	ChatCompletions = "chat/completions" // POST {base}/chat/completions
)

// Client streams requests to one OpenAI-compatible server.
type Client struct {
	base   string
	apiKey string
	http   *http.Client
	clock  clock.Clock
	// stamped: chunks are timed by their arrival stamps (arrival.go, shared/arrival),
	// true with the default transport and the real clock.
	stamped bool
}

// Options configure a Client. The zero value is the defaults.
type Options struct {
	// APIKey, when set, is sent as a bearer token.
	APIKey string
	// HTTP sends the requests; default: a transport sized for many
	// concurrent streams, without response compression (which would
	// buffer chunks), whose connections stamp each chunk's arrival on
	// Linux (see Result.Stamped).
	HTTP *http.Client
	// Clock is what the timings are read from (clock.Real when nil).
	Clock clock.Clock
}

// New returns a client of the API rooted at baseURL, e.g.
// http://127.0.0.1:8080/v1.
func New(baseURL string, opts Options) *Client {
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	_, realClock := opts.Clock.(clock.Real)
	stamped := opts.HTTP == nil && realClock
	if opts.HTTP == nil {
		opts.HTTP = &http.Client{Transport: &http.Transport{
			DialContext:         dialStamped(&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}),
			MaxIdleConns:        1024,
			MaxIdleConnsPerHost: 1024,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
		}}
	}
	return &Client{base: strings.TrimRight(baseURL, "/"), apiKey: opts.APIKey, http: opts.HTTP, clock: opts.Clock, stamped: stamped}
}

// Close drops idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

// Request is one streaming generation.
type Request struct {
	Endpoint  string // Completions or ChatCompletions
	Model     string
	Prompt    string
	MaxTokens int
	// Timeout bounds the whole request; 0 means none beyond ctx.
	Timeout time.Duration
	// ChunkTimes asks for every chunk with text's time (Result.ChunkAt),
	// for the gaps between them (ITL).
	ChunkTimes bool
	// KeepText asks for the generated text (Result.Text), its first
	// KeepText bytes; 0 keeps none.
	KeepText int
}

// Result is one measured stream.
type Result struct {
	Endpoint string
	ID       string
	Finish   string
	// From the last usage with a count in it (Result.add); HasUsage is
	// false when the server sent none, or only all-zero ones.
	HasUsage         bool
	PromptTokens     int64
	CompletionTokens int64
	CachedTokens     int64
	// CachedReported: the usage said how many prompt tokens were cached
	// (prompt_tokens_details). ollama's never does, though its prefix
	// cache serves a repeated prompt: CachedTokens 0 is then no count.
	CachedReported bool

	Start      time.Time // request sent
	FirstToken time.Time // first chunk with generated text arrived
	LastToken  time.Time // last chunk with generated text arrived
	End        time.Time // stream ended
	// ContentChunks counts chunks with generated text.
	ContentChunks int
	// ChunkAt is, when the request asked (ChunkTimes), each chunk with
	// text's time after Start, timed as FirstToken and LastToken are.
	ChunkAt []time.Duration
	// Done says the stream ended with [DONE]. One that ended without it
	// and without a finish reason was cut short by the server (Cut).
	Done bool
	// Stamped says FirstToken and LastToken are the kernel's receive
	// times of their chunks (Linux, the default transport), not the times
	// the client read them.
	Stamped bool
	// Text is the generated text, when the request asked (KeepText): at
	// most that many bytes, cut at a rune boundary.
	Text     string
	keepText int

	// ServerReceived and ServerFirstToken are the server's own stamps
	// (the reference engine's server_timing): when it got the request and
	// when it had flushed the first token. Zero from other servers.
	ServerReceived, ServerFirstToken time.Time
}

// ClientShare is the part of TTFT that is not the server's: sending the
// request, the network, reading and parsing the chunks (TTFT minus the
// server's received-to-first-token time). ok is false without the
// server's stamps. It compares the wall clocks of the two processes, so it
// means something only with both on one machine.
func (r Result) ClientShare() (d time.Duration, ok bool) {
	if r.ServerReceived.IsZero() || r.ServerFirstToken.IsZero() || r.FirstToken.IsZero() {
		return 0, false
	}
	return r.TTFT() - r.ServerFirstToken.Sub(r.ServerReceived), true
}

// TTFT is the time from sending the request to the first generated text.
func (r Result) TTFT() time.Duration { return r.FirstToken.Sub(r.Start) }

// Total is the request's whole duration.
func (r Result) Total() time.Duration { return r.End.Sub(r.Start) }

// DecodeTokensPerSecond is the completion tokens after the first chunk's
// over the time from the first chunk with text to the last; 0 when it
// cannot be told (one token, or everything in one chunk). A server that
// sends several tokens a chunk (llama.cpp's, ollama's) does not say how
// many the first held: the mean per chunk stands in for it, so the rate
// counts neither the first chunk's tokens nor one token only.
func (r Result) DecodeTokensPerSecond() float64 {
	d := r.LastToken.Sub(r.FirstToken)
	if r.CompletionTokens < 2 || d <= 0 {
		return 0
	}
	first := 1.0
	if r.ContentChunks > 0 {
		first = max(1, float64(r.CompletionTokens)/float64(r.ContentChunks))
	}
	return (float64(r.CompletionTokens) - first) / d.Seconds()
}

// Cut says the stream ended with neither a finish reason nor [DONE]: the
// server stopped it (ollama ends a generation that repeats itself so).
func (r Result) Cut() bool { return !r.Done && r.Finish == "" }

// PrefillTokensPerSecond is prompt tokens over TTFT: the prefill rate as a
// client sees it (queueing and the first decode step included).
func (r Result) PrefillTokensPerSecond() float64 {
	d := r.TTFT()
	if r.PromptTokens <= 0 || d <= 0 {
		return 0
	}
	return float64(r.PromptTokens) / d.Seconds()
}

// Do sends req with stream: true and reads the stream to its end.
func (c *Client) Do(ctx context.Context, req Request) (Result, error) {
	res := Result{Endpoint: req.Endpoint, keepText: req.KeepText}
	if req.ChunkTimes {
		res.ChunkAt = make([]time.Duration, 0, min(req.MaxTokens, 1<<16))
	}
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	body, err := requestBody(req)
	if err != nil {
		return res, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/"+req.Endpoint, bytes.NewReader(body))
	if err != nil {
		return res, err
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "text/event-stream")
	if c.apiKey != "" {
		hr.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	var conn arrival.Stamped
	if c.stamped {
		hr = hr.WithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
			GotConn: func(i httptrace.GotConnInfo) { conn, _ = i.Conn.(arrival.Stamped) },
		}))
	}
	res.Start = c.clock.Now()
	resp, err := c.http.Do(hr)
	if err != nil {
		return res, timeoutErr(ctx, req.Timeout, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return res, statusError(resp)
	}
	if err := c.read(resp.Body, &res, conn); err != nil {
		return res, timeoutErr(ctx, req.Timeout, err)
	}
	res.End = c.clock.Now()
	// Read past [DONE] to the end so the connection is kept for the next
	// request rather than closed.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if res.ContentChunks == 0 {
		return res, errors.New("the stream ended without generated text")
	}
	return res, nil
}

func timeoutErr(ctx context.Context, timeout time.Duration, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && timeout > 0 {
		return fmt.Errorf("timed out after %v: %w", timeout, err)
	}
	return err
}

// Hash identifies reqs by what they ask of a server, in order: SHA-256
// (hex, the first 16 bytes) of each body without its model name, so two
// servers' runs show request for request whether they were sent the same
// (a head-to-head's arms serve one model under names that may differ).
func Hash(reqs ...Request) string {
	h := sha256.New()
	for _, r := range reqs {
		r.Model = ""
		b, err := requestBody(r)
		if err != nil {
			b = []byte(err.Error())
		}
		h.Write(b)
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

func requestBody(req Request) ([]byte, error) {
	m := map[string]any{
		"model":          req.Model,
		"max_tokens":     req.MaxTokens,
		"stream":         true,
		"stream_options": map[string]any{"include_usage": true},
		// Generate exactly max_tokens where the server supports it (vLLM,
		// SGLang); others ignore the field.
		"ignore_eos":  true,
		"temperature": 0,
	}
	switch req.Endpoint {
	case Completions:
		m["prompt"] = req.Prompt
	case ChatCompletions:
		m["messages"] = []map[string]string{{"role": "user", "content": req.Prompt}}
	default:
		return nil, fmt.Errorf("unknown endpoint %q (want %q or %q)", req.Endpoint, Completions, ChatCompletions)
	}
	return json.Marshal(m)
}

// statusError reads an OpenAI-style error body into the error.
func statusError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	msg := strings.TrimSpace(string(b))
	if json.Unmarshal(b, &e) == nil && e.Error.Message != "" {
		msg = e.Error.Message
	}
	return fmt.Errorf("HTTP %s: %s", resp.Status, msg)
}

// chunk is the part of a streamed chunk the client reads, for both
// endpoints.
type chunk struct {
	ID      string `json:"id"`
	Choices []struct {
		Text  string `json:"text"`
		Delta struct {
			Content          string `json:"content"`
			ReasoningContent string `json:"reasoning_content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int64 `json:"prompt_tokens"`
		CompletionTokens    int64 `json:"completion_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
	ServerTiming *struct {
		ReceivedUnixNs   int64 `json:"received_unix_ns"`
		FirstTokenUnixNs int64 `json:"first_token_unix_ns"`
	} `json:"server_timing"`
}

// maxChunk bounds one data line of a stream.
const maxChunk = 16 << 20

// read parses server-sent events until [DONE] or the end of the body,
// timing each chunk by its arrival stamp on conn, when conn is not nil
// and gives one, or else by when it is read. Each data line is a chunk
// once it is read, not at its event's blank line (sse's NextField): so a
// chunk is timed by the line that carries it, and one a server ends the
// stream without its blank line still counts.
func (c *Client) read(body io.Reader, res *Result, conn arrival.Stamped) error {
	rd := sse.NewReader(body, sse.Options{Clock: c.clock, MaxBytes: maxChunk})
	for {
		f, err := rd.NextField()
		switch {
		case err == io.EOF:
			return nil
		case errors.Is(err, sse.ErrTooLong) && f.Name != "data":
			continue
		case errors.Is(err, sse.ErrTooLong):
			return fmt.Errorf("a stream chunk over %d bytes", maxChunk)
		case err != nil:
			return err
		case f.Name != "data":
			continue
		}
		readAt := f.At
		at, stamped := readAt, false
		if conn != nil {
			at, stamped = arrivedAt(readAt, conn)
		}
		if res.ContentChunks > 0 && !res.Stamped {
			// One request's tokens are timed on one clock: its first came
			// unstamped (read time, which a busy client can make late), so a
			// later stamp (arrival time) could come out before it.
			at, stamped = readAt, false
		}
		data := bytes.TrimSpace(f.Value)
		if bytes.Equal(data, []byte("[DONE]")) {
			res.Done = true
			return nil
		}
		first := res.ContentChunks == 0
		if err := res.add(data, at); err != nil {
			return err
		}
		if first && res.ContentChunks > 0 {
			res.Stamped = stamped
		}
	}
}

func (r *Result) add(data []byte, at time.Time) error {
	if r.ChunkAt != nil {
		defer func(before int) {
			if r.ContentChunks > before {
				r.ChunkAt = append(r.ChunkAt, at.Sub(r.Start))
			}
		}(r.ContentChunks)
	}
	// Token chunks, once the stream's id is known, without Unmarshal
	// (unless their text is asked for).
	if r.ID != "" && r.keepText == 0 {
		if n, ok := scanTokenChunk(data); ok {
			if n > 0 && r.ContentChunks == 0 {
				r.FirstToken = at
			}
			if n > 0 {
				r.LastToken = at
			}
			r.ContentChunks += n
			return nil
		}
	}
	var ch chunk
	if err := json.Unmarshal(data, &ch); err != nil {
		return fmt.Errorf("unreadable stream chunk %.200q: %v", data, err)
	}
	if ch.Error != nil {
		return fmt.Errorf("the server reported an error mid-stream: %s", ch.Error.Message)
	}
	if r.ID == "" {
		r.ID = ch.ID
	}
	for _, choice := range ch.Choices {
		if r.keepText > 0 {
			r.Text = keep(r.Text, choice.Text+choice.Delta.Content, r.keepText)
		}
		if choice.Text != "" || choice.Delta.Content != "" || choice.Delta.ReasoningContent != "" {
			if r.ContentChunks == 0 {
				r.FirstToken = at
			}
			r.LastToken = at
			r.ContentChunks++
		}
		if choice.FinishReason != nil && *choice.FinishReason != "" {
			r.Finish = *choice.FinishReason
		}
	}
	if st := ch.ServerTiming; st != nil && st.ReceivedUnixNs > 0 && st.FirstTokenUnixNs >= st.ReceivedUnixNs {
		r.ServerReceived, r.ServerFirstToken = time.Unix(0, st.ReceivedUnixNs), time.Unix(0, st.FirstTokenUnixNs)
	}
	// The last usage with a count wins: OpenAI sends one, last; vLLM's
	// continuous stats grow chunk by chunk; ollama's completions send an
	// all-zero one on every chunk and the counts in the last, which a
	// stream it cuts short never sends. An all-zero usage is a
	// placeholder, never counts that replace real ones.
	if u := ch.Usage; u != nil && (u.PromptTokens != 0 || u.CompletionTokens != 0) {
		r.HasUsage = true
		r.PromptTokens, r.CompletionTokens, r.CachedTokens = u.PromptTokens, u.CompletionTokens, 0
		r.CachedReported = u.PromptTokensDetails != nil
		if r.CachedReported {
			r.CachedTokens = u.PromptTokensDetails.CachedTokens
		}
	}
	return nil
}

// keep appends more to text up to limit bytes, cut at a rune boundary.
func keep(text, more string, limit int) string {
	if len(text)+len(more) <= limit {
		return text + more
	}
	more = more[:max(0, limit-len(text))]
	for more != "" && !utf8.ValidString(more) {
		more = more[:len(more)-1]
	}
	return text + more
}
