// Package ssetest writes OpenAI-compatible streams as real servers write
// them, for tests of the client and the runner against what they send and
// not only against the reference engine's shape.
package ssetest

import (
	"fmt"
	"strings"
)

// Ollama is one stream in the shapes of ollama v0.6.5's OpenAI layer (its
// openai/openai.go, fields in its order) with stream_options.include_usage:
// a chunk per text (often several tokens); on /v1/completions every chunk
// carries an all-zero usage, on chat none does; the finish reason comes in
// a chunk of empty text, the counts after it in a chunk of no choices,
// then [DONE]. Finish "" is a stream ollama cut short (its llm server ends
// a generation that repeats one token 30 times without a word): no finish
// reason, no counts, no [DONE].
type Ollama struct {
	Chat               bool
	Texts              []string
	Finish             string
	Prompt, Completion int
}

// Chunks are the stream's events, each with its blank line.
func (o Ollama) Chunks() []string {
	var zero *[3]int
	if !o.Chat {
		zero = &[3]int{}
	}
	var out []string
	for _, t := range o.Texts {
		out = append(out, o.chunk(t, nil, zero, false))
	}
	if o.Finish == "" {
		return out
	}
	return append(out, o.chunk("", &o.Finish, zero, false),
		o.chunk("", nil, &[3]int{o.Prompt, o.Completion, o.Prompt + o.Completion}, true),
		"data: [DONE]\n\n")
}

// String is the whole stream.
func (o Ollama) String() string { return strings.Join(o.Chunks(), "") }

func (o Ollama) chunk(text string, finish *string, usage *[3]int, noChoices bool) string {
	u := ""
	if usage != nil {
		u = fmt.Sprintf(`,"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}`, usage[0], usage[1], usage[2])
	}
	f := "null"
	if finish != nil {
		f = fmt.Sprintf("%q", *finish)
	}
	if o.Chat {
		choices := fmt.Sprintf(`[{"index":0,"delta":{"role":"assistant","content":%q},"finish_reason":%s}]`, text, f)
		if noChoices {
			choices = "[]"
		}
		return `data: {"id":"chatcmpl-42","object":"chat.completion.chunk","created":1744000000,"model":"tiny","system_fingerprint":"fp_ollama","choices":` + choices + u + "}\n\n"
	}
	choices := fmt.Sprintf(`[{"text":%q,"index":0,"finish_reason":%s}]`, text, f)
	if noChoices {
		choices = "[]"
	}
	return `data: {"id":"cmpl-42","object":"text_completion","created":1744000000,"choices":` + choices + `,"model":"tiny","system_fingerprint":"fp_ollama"` + u + "}\n\n"
}

// Texts is n tokens of one letter each, perChunk to a chunk.
func Texts(n, perChunk int) []string {
	var out []string
	for n > 0 {
		k := min(n, perChunk)
		out = append(out, strings.Repeat("x", k))
		n -= k
	}
	return out
}
