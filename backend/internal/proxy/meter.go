package proxy

import (
	"bytes"
	"encoding/json"
	"math"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/printable"
	"github.com/mlx-bun/mlx-metrics/shared/events"
	"github.com/mlx-bun/mlx-metrics/shared/sse"
)

// maxJSONBody bounds how much of a non-streamed answer the meter keeps to
// read its usage; the client still gets every byte.
const maxJSONBody = 8 << 20

// maxSSELine bounds the value of one SSE data line that the meter reads;
// longer lines are passed through but not measured.
const maxSSELine = 1 << 20

// meter measures one generation request from the bytes passing through.
// It never changes them.
type meter struct {
	start     time.Time
	request   []byte // the client's body, read for its model at the end
	model     string // the answer's, for a request that names none
	requestID string

	firstToken time.Time // zero until a chunk carried content
	usage      *usage
	finish     string // the upstream's last finish_reason
	failed     bool   // the upstream reported an error
	sse        bool   // the answer is an event stream

	lines   *sse.Decoder // SSE: the answer's lines, from the first write
	body    []byte       // JSON: the answer so far
	tooLong bool         // JSON: over maxJSONBody
}

// request is the part of a completions request the meter reads.
type request struct {
	Model string `json:"model"`
}

// usage is an answer's token counts, read as numbers, not integers: one
// written 12.0 or 1e30 would otherwise fail the whole chunk, losing its id
// and finish reason with it (tokens takes what no request could have as
// unreported).
type usage struct {
	PromptTokens        float64 `json:"prompt_tokens"`
	CompletionTokens    float64 `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens float64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

// chunk is the part of an answer (a whole JSON response or one SSE chunk)
// the meter reads; chat and text completions share it.
type chunk struct {
	ID      string          `json:"id"`
	Model   string          `json:"model"`
	Usage   *usage          `json:"usage"`
	Error   json.RawMessage `json:"error"`
	Choices []struct {
		Text  string `json:"text"`
		Delta *struct {
			Content          string          `json:"content"`
			ReasoningContent string          `json:"reasoning_content"`
			Reasoning        string          `json:"reasoning"`
			ToolCalls        json.RawMessage `json:"tool_calls"`
		} `json:"delta"`
		Message *struct {
			Content string `json:"content"`
		} `json:"message"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
}

// newMeter measures a request sent at start with body. The body is
// decoded only when the event is built: decoding a long prompt costs about
// as long as a loopback round trip per few KiB, which would otherwise
// delay the request on its way to the upstream. Holding it costs nothing
// more: the forwarded request, which the answer refers to, holds it too.
func newMeter(start time.Time, body []byte) *meter {
	return &meter{start: start, request: body}
}

// write takes bytes of the answer as they arrive at time at. An event
// stream's data lines are read as each arrives, not at their event's blank
// line: an answer the upstream ends without one was still sent.
func (m *meter) write(p []byte, at time.Time) {
	if !m.sse {
		if !m.tooLong && len(m.body)+len(p) <= maxJSONBody {
			m.body = append(m.body, p...)
		} else {
			m.tooLong, m.body = true, nil
		}
		return
	}
	if m.lines == nil {
		m.lines = sse.NewDecoder(sse.Options{MaxBytes: maxSSELine})
	}
	m.lines.Feed(p, at)
	for {
		f, err := m.lines.NextField()
		if err == sse.ErrNeedMore {
			return
		}
		if err == nil && f.Name == "data" { // one over maxSSELine is not measured
			m.sseData(f.Value, f.At)
		}
	}
}

// sseData reads the value of one data line that arrived at at.
func (m *meter) sseData(data []byte, at time.Time) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || bytes.Equal(data, []byte("[DONE]")) {
		return
	}
	// Past the first token, most chunks are one more token and say nothing
	// the meter needs; skipping their decoding keeps the proxy cheap.
	if !m.firstToken.IsZero() && !nonNull(data, `"usage"`) && !nonNull(data, `"finish_reason"`) &&
		!bytes.Contains(data, []byte(`"error"`)) {
		return
	}
	var c chunk
	if json.Unmarshal(data, &c) != nil {
		return
	}
	m.take(c)
	if m.firstToken.IsZero() && carriesToken(c) {
		m.firstToken = at
	}
}

// nonNull reports whether some occurrence of the quoted key in data is
// followed by a value other than null. It may say true for a key inside a
// string; that only costs a decode.
func nonNull(data []byte, key string) bool {
	for {
		i := bytes.Index(data, []byte(key))
		if i < 0 {
			return false
		}
		data = bytes.TrimLeft(data[i+len(key):], " \t\r\n")
		if len(data) == 0 || data[0] != ':' {
			continue
		}
		data = bytes.TrimLeft(data[1:], " \t\r\n")
		if !bytes.HasPrefix(data, []byte("null")) {
			return true
		}
	}
}

func carriesToken(c chunk) bool {
	for _, ch := range c.Choices {
		if ch.Text != "" {
			return true
		}
		if d := ch.Delta; d != nil && (d.Content != "" || d.ReasoningContent != "" || d.Reasoning != "" ||
			(len(d.ToolCalls) > 0 && string(d.ToolCalls) != "null")) {
			return true
		}
	}
	return false
}

// take records what one chunk (or the whole answer) says.
func (m *meter) take(c chunk) {
	if m.requestID == "" && c.ID != "" {
		m.requestID = c.ID
	}
	if m.model == "" && c.Model != "" {
		m.model = c.Model // the first one the answer names
	}
	if c.Usage != nil {
		m.usage = c.Usage // the last one is the total (continuous usage too)
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		m.failed = true
	}
	for _, ch := range c.Choices {
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			m.finish = *ch.FinishReason
		}
	}
}

// outcome is how the exchange ended, as the proxy saw it.
type outcome struct {
	end       time.Time
	status    int  // the upstream's status; 0 when it never answered
	cancelled bool // the client went away
	broken    bool // the upstream failed mid-answer
}

// event builds the request.finished event. Queue time is unknown from
// outside the engine, so it is null; so is prefill rate, which without the
// queue time would understate the engine.
func (m *meter) event(o outcome, fallbackID string) events.Event {
	if !m.sse && !m.tooLong && len(m.body) > 0 {
		var c chunk
		if json.Unmarshal(m.body, &c) == nil {
			m.take(c)
		}
	}
	var r request
	_ = json.Unmarshal(m.request, &r) // a malformed body is the upstream's to reject
	if r.Model == "" {
		r.Model = m.model
	}
	p := &events.RequestFinished{
		Model:     r.Model,
		RequestID: m.requestID,
		Finish:    events.FinishStop,
		TotalMs:   ms(o.end.Sub(m.start)),
	}
	switch {
	case o.status == 0 || o.status >= 400:
		// Not accepted: the name is the client's word only, and need not
		// name any model.
		p.Model = ""
	case p.Model == "":
		p.Model = "unknown"
	}
	// The wire refuses a text longer than its bound, invalid, or with a
	// control character, and with it the whole event.
	p.Model = printable.Cut(p.Model, events.MaxModelName)
	if p.RequestID = printable.Cut(p.RequestID, events.MaxRequestID); p.RequestID == "" {
		p.RequestID = fallbackID
	}
	switch {
	case o.cancelled:
		p.Finish = events.FinishCancelled
	case o.status == 0 || o.status >= 400 || o.broken || m.failed:
		p.Finish = events.FinishError
	case m.finish == "length":
		p.Finish = events.FinishLength
	}
	if u := m.usage; u != nil {
		p.PromptTokens = tokens(u.PromptTokens)
		p.CompletionTokens = tokens(u.CompletionTokens)
		if d := u.PromptTokensDetails; d != nil {
			p.CachedPromptTokens = min(tokens(d.CachedTokens), p.PromptTokens)
		}
	}
	if !m.firstToken.IsZero() {
		ttft := ms(m.firstToken.Sub(m.start))
		p.TTFTMs = &ttft
		// Decode rate as vllm bench serve has it: tokens after the first
		// over the time after the first; needs usage's token count.
		if decode := o.end.Sub(m.firstToken).Seconds(); m.usage != nil && p.CompletionTokens > 1 && decode > 0 {
			r := float64(p.CompletionTokens-1) / decode
			p.DecodeTokensPerSecond = &r
		}
	}
	return events.Event{Type: events.TypeRequestFinished, At: o.end.UnixMilli(), Payload: p}
}

// tokens is a count from usage, or 0, as if usage had none, where no
// request could have it (below 0, above events.MaxTokens, a fraction): the
// wire would refuse the whole event, losing a request the upstream served.
func tokens(n float64) int64 {
	if !(n >= 0 && n <= events.MaxTokens) || n != math.Trunc(n) {
		return 0
	}
	return int64(n)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
