package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/mlx-bun/mlx-metrics/shared/events"
)

// Handler serves the OpenAI-compatible API: POST /v1/completions, POST
// /v1/chat/completions (streaming or not), GET /v1/models and GET /health
// (503 until the model has loaded).
func (e *Engine) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", e.health)
	mux.HandleFunc("GET /v1/models", e.models)
	mux.HandleFunc("POST /v1/completions", e.completions)
	mux.HandleFunc("POST /v1/chat/completions", e.chatCompletions)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/health", "/v1/models", "/v1/completions", "/v1/chat/completions":
			writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed on "+r.URL.Path)
		default:
			writeError(w, http.StatusNotFound, "no route "+r.Method+" "+r.URL.Path)
		}
	})
	return mux
}

// maxBody bounds request bodies: a 32k-token prompt is well under this.
const maxBody = 8 << 20

func (e *Engine) health(w http.ResponseWriter, r *http.Request) {
	if !e.Ready() {
		writeError(w, http.StatusServiceUnavailable, "the model is loading")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "model": e.cfg.Model, "simulator": true})
}

func (e *Engine) models(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"object": "list",
		"data": []map[string]any{{
			"id": e.cfg.Model, "object": "model", "created": 0, "owned_by": "mlx-metrics-reference-engine",
			"max_model_len": e.cfg.MaxContext,
		}},
	})
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// commonRequest is what both endpoints share. Sampling parameters are
// accepted and ignored: the simulator's text is filler.
type commonRequest struct {
	Model               string         `json:"model"`
	MaxTokens           *int           `json:"max_tokens"`
	MaxCompletionTokens *int           `json:"max_completion_tokens"`
	Stream              bool           `json:"stream"`
	StreamOptions       *streamOptions `json:"stream_options"`
	N                   *int           `json:"n"`
}

type completionRequest struct {
	commonRequest
	Prompt json.RawMessage `json:"prompt"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// text is the message's content: a string, or the text parts of an array.
func (m chatMessage) text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(m.Content, &parts)
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
			b.WriteByte(' ')
		}
	}
	return b.String()
}

type chatRequest struct {
	commonRequest
	Messages []chatMessage `json:"messages"`
}

// Default completion lengths: OpenAI's 16 for completions; for chat, a
// reply of a typical length.
const (
	defaultCompletionTokens = 16
	defaultChatTokens       = 256
)

// genRequest is a generation request as decoded and checked: what the
// engine is asked to run.
type genRequest struct {
	commonRequest
	prompt []uint64
	max    int // tokens to generate
}

// badRequest is why a request is refused: its status and message, which
// quotes at most maxEcho runes of what the client sent.
type badRequest struct {
	status  int
	message string
}

// maxEcho bounds how much of a client's input an error message quotes.
const maxEcho = 100

// parseRequest decodes the body of POST /v1/chat/completions (chat) or
// /v1/completions and checks it against this engine: its model, one
// choice, a length to generate, and a prompt of the endpoint's shape.
// Whether the engine has room for it is Submit's to say.
func (e *Engine) parseRequest(body []byte, chat bool) (genRequest, *badRequest) {
	var g genRequest
	var prompt json.RawMessage
	var messages []chatMessage
	var err error
	if chat {
		var req chatRequest
		err = json.Unmarshal(body, &req)
		g.commonRequest, messages = req.commonRequest, req.Messages
	} else {
		var req completionRequest
		err = json.Unmarshal(body, &req)
		g.commonRequest, prompt = req.commonRequest, req.Prompt
	}
	if err != nil {
		return g, &badRequest{http.StatusBadRequest, fmt.Sprintf("invalid JSON body: %.*s", maxEcho, err.Error())}
	}
	def := defaultCompletionTokens
	if chat {
		def = defaultChatTokens
	}
	if bad := e.checkCommon(&g, def); bad != nil {
		return g, bad
	}
	if chat {
		if len(messages) == 0 {
			return g, &badRequest{http.StatusBadRequest, "messages: must hold at least one message"}
		}
		for i, m := range messages {
			if m.Role == "" {
				return g, &badRequest{http.StatusBadRequest, fmt.Sprintf("messages[%d].role: missing", i)}
			}
		}
		g.prompt = chatTokens(messages)
		return g, nil
	}
	var text string
	if err := json.Unmarshal(prompt, &text); err != nil {
		var list []string
		if json.Unmarshal(prompt, &list) != nil || len(list) != 1 {
			return g, &badRequest{http.StatusBadRequest, "prompt: must be a string (or an array of one string)"}
		}
		text = list[0]
	}
	g.prompt = tokenize(text)
	return g, nil
}

// checkCommon checks what both endpoints share and sets g.max.
func (e *Engine) checkCommon(g *genRequest, def int) *badRequest {
	if g.Model != e.cfg.Model {
		if g.Model == "" {
			return &badRequest{http.StatusBadRequest, "model: missing"}
		}
		return &badRequest{http.StatusNotFound, fmt.Sprintf("the model %.*q does not exist; this engine serves %q", maxEcho, g.Model, e.cfg.Model)}
	}
	if g.N != nil && *g.N != 1 {
		return &badRequest{http.StatusBadRequest, "n: the reference engine generates one choice per request"}
	}
	g.max = def
	if g.MaxCompletionTokens != nil {
		g.max = *g.MaxCompletionTokens
	}
	if g.MaxTokens != nil {
		g.max = *g.MaxTokens
	}
	if g.max < 1 {
		return &badRequest{http.StatusBadRequest, fmt.Sprintf("max_tokens: must be >= 1, got %d", g.max)}
	}
	return nil
}

// generate answers POST /v1/completions (chat false) and
// /v1/chat/completions.
func (e *Engine) generate(w http.ResponseWriter, r *http.Request, chat bool) {
	received := time.Now()
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", maxBody))
			return
		}
		writeError(w, http.StatusBadRequest, "reading the body: "+err.Error())
		return
	}
	g, bad := e.parseRequest(body, chat)
	if bad != nil {
		writeError(w, bad.status, bad.message)
		return
	}
	e.serve(w, r, received, g.prompt, g.max, g.commonRequest, chat)
}

func (e *Engine) completions(w http.ResponseWriter, r *http.Request) { e.generate(w, r, false) }

func (e *Engine) chatCompletions(w http.ResponseWriter, r *http.Request) { e.generate(w, r, true) }

type usage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

func usageOf(res *Result) *usage {
	u := &usage{PromptTokens: res.PromptTokens, CompletionTokens: res.CompletionTokens,
		TotalTokens: res.PromptTokens + res.CompletionTokens}
	u.PromptTokensDetails.CachedTokens = res.CachedPromptTokens
	return u
}

// serverTiming is the reference engine's own extension of the streamed
// usage chunk: when the handler got the request and when it had written
// and flushed the first token, in wall-clock Unix nanoseconds (not the
// engine's scheduling clock), so a client on the same machine can tell
// its own share of the TTFT it measures from the server's.
type serverTiming struct {
	ReceivedUnixNs   int64 `json:"received_unix_ns"`
	FirstTokenUnixNs int64 `json:"first_token_unix_ns"`
}

// serve runs one request and writes its answer: an SSE stream ending with a
// usage chunk (always, include_usage or not: benchmarks need it; it carries
// server_timing too) and [DONE], or one JSON body.
func (e *Engine) serve(w http.ResponseWriter, r *http.Request, received time.Time, prompt []uint64, max int, req commonRequest, chat bool) {
	ctx := r.Context()
	s, err := e.Submit(ctx, prompt, max)
	if err != nil {
		status := http.StatusInternalServerError
		switch {
		case errors.Is(err, ErrRejected):
			status = http.StatusBadRequest
		case errors.Is(err, ErrStopped):
			status = http.StatusServiceUnavailable
		}
		writeError(w, status, err.Error())
		return
	}
	id, object := "cmpl-"+RequestID(s.ID), "text_completion"
	if chat {
		id, object = "chatcmpl-"+RequestID(s.ID), "chat.completion"
	}
	created := time.Now().Unix()
	if !req.Stream {
		var text strings.Builder
		for {
			toks, res, err := s.Next(ctx)
			if err != nil {
				return // client gone
			}
			for _, t := range toks {
				text.WriteString(t.Text)
			}
			if res != nil {
				if res.Err != nil {
					writeError(w, http.StatusInternalServerError, res.Err.Error())
					return
				}
				choice := map[string]any{"index": 0, "finish_reason": finishReason(res.Finish)}
				if chat {
					choice["message"] = map[string]any{"role": "assistant", "content": text.String()}
				} else {
					choice["text"] = text.String()
					choice["logprobs"] = nil
				}
				writeJSON(w, http.StatusOK, map[string]any{
					"id": id, "object": object, "created": created, "model": e.cfg.Model,
					"choices": []any{choice}, "usage": usageOf(res),
				})
				return
			}
		}
	}

	flusher, _ := w.(http.Flusher)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	object += ".chunk"
	if !chat {
		object = "text_completion"
	}
	var buf []byte
	send := func(v any) {
		b, _ := json.Marshal(v)
		buf = append(buf, "data: "...)
		buf = append(buf, b...)
		buf = append(buf, "\n\n"...)
	}
	flush := func() bool {
		_, err := w.Write(buf)
		buf = buf[:0]
		if flusher != nil {
			flusher.Flush()
		}
		return err == nil
	}
	chunk := func(choice map[string]any) map[string]any {
		return map[string]any{"id": id, "object": object, "created": created, "model": e.cfg.Model, "choices": []any{choice}}
	}
	// Token chunks are the hot path (one per token per stream): they are
	// built from a prefix made once per request rather than marshalled.
	head, _ := json.Marshal(map[string]any{"id": id, "object": object, "created": created, "model": e.cfg.Model})
	tokenPrefix := append(append([]byte("data: "), head[:len(head)-1]...), `,"choices":[{"index":0,`...)
	tokenSuffix := `,"logprobs":null,"finish_reason":null}]}` + "\n\n"
	if chat {
		tokenSuffix = `},"finish_reason":null}]}` + "\n\n"
		tokenPrefix = append(tokenPrefix, `"delta":{`...)
		buf = append(buf, tokenPrefix...)
		buf = append(buf, `"role":"assistant","content":""},"finish_reason":null}]}`+"\n\n"...)
		tokenPrefix = append(tokenPrefix, `"content":`...)
	} else {
		tokenPrefix = append(tokenPrefix, `"text":`...)
	}
	var firstToken time.Time
	for {
		toks, res, err := s.Next(ctx)
		if err != nil {
			return // client gone; Submit's context cancels the request
		}
		for _, t := range toks {
			text, _ := json.Marshal(t.Text)
			buf = append(buf, tokenPrefix...)
			buf = append(buf, text...)
			buf = append(buf, tokenSuffix...)
		}
		if res != nil {
			if res.Err != nil {
				send(map[string]any{"error": map[string]any{"message": res.Err.Error(), "type": "server_error"}})
			} else {
				if chat {
					send(chunk(map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finishReason(res.Finish)}))
				} else {
					send(chunk(map[string]any{"index": 0, "text": "", "logprobs": nil, "finish_reason": finishReason(res.Finish)}))
				}
				if firstToken.IsZero() && len(toks) > 0 {
					// They go out with this last write.
					firstToken = time.Now()
				}
				timing := &serverTiming{ReceivedUnixNs: received.UnixNano()}
				if !firstToken.IsZero() {
					timing.FirstTokenUnixNs = firstToken.UnixNano()
				}
				send(map[string]any{"id": id, "object": object, "created": created, "model": e.cfg.Model,
					"choices": []any{}, "usage": usageOf(res), "server_timing": timing})
			}
			buf = append(buf, "data: [DONE]\n\n"...)
			flush()
			return
		}
		if !flush() {
			return
		}
		if firstToken.IsZero() && len(toks) > 0 {
			firstToken = time.Now()
		}
	}
}

func finishReason(f events.FinishReason) string {
	if f == events.FinishLength {
		return "length"
	}
	return string(f)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers in the OpenAI error format.
func writeError(w http.ResponseWriter, status int, message string) {
	t := "invalid_request_error"
	if status >= 500 {
		t = "server_error"
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": message, "type": t, "param": nil, "code": nil}})
}
