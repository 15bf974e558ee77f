package bench

import (
	"fmt"
	"unicode/utf8"
)

// Parity probes: each cell answers two fixed requests at temperature 0,
// the same in every cell and every run, and each head-to-head's two
// answers are compared, as the original runner's parity check did before
// a comparison of speed means anything.
const (
	ProbeRaw  = "raw"  // /v1/completions: the tokenizer alone, no template
	ProbeChat = "chat" // /v1/chat/completions: the tokenizer and the chat template
)

// ProbeTextLimit bounds a probe's kept text (bytes): enough for its
// tokens (ProbeTokens of them), never a whole server's answer.
const ProbeTextLimit = 1024

// ProbeTokens is how many tokens each probe asks for.
const ProbeTokens = 32

// Probe is one parity probe's answer, as the cell's server gave it.
type Probe struct {
	Kind             string `json:"kind"` // ProbeRaw or ProbeChat
	PromptTokens     int64  `json:"promptTokens"`
	CompletionTokens int64  `json:"completionTokens"`
	Finish           string `json:"finish,omitempty"`
	// Text is the generated text, cut at ProbeTextLimit bytes (a rune
	// boundary).
	Text  string `json:"text"`
	Error string `json:"error,omitempty"`
}

// Parity verdicts of one probe kind between a candidate and a reference.
const (
	ParityEqual     = "parity"          // the same prompt tokens, text, tokens and finish
	ParityTokenizer = "tokenizer drift" // raw probe: unequal prompt tokens
	ParityTemplate  = "template drift"  // chat probe: unequal prompt tokens (the raw one equal)
	ParityDiverged  = "diverged"        // equal prompt tokens, different output
	ParityUnknown   = "unknown"         // a probe failed, or a count or text is missing
)

// ParityVerdict is the comparison of one probe kind in a pair.
type ParityVerdict struct {
	Kind    string `json:"kind"`
	Verdict string `json:"verdict"`
	// At is the character (rune) where the texts first differ, for
	// ParityDiverged; -1 otherwise.
	At     int    `json:"at"`
	Detail string `json:"detail"`
}

// Parity compares a pair's probes, kind by kind (raw, then chat). Unequal
// prompt token counts are drift and end the comparison there: two texts
// from different prompts say nothing of the engines. A chat probe's drift
// is the template's when the raw probe's counts agree, the tokenizer's
// when they do not.
func Parity(candidate, reference []Probe) []ParityVerdict {
	var out []ParityVerdict
	rawEqual := false
	for _, kind := range []string{ProbeRaw, ProbeChat} {
		c, okc := probeOf(candidate, kind)
		r, okr := probeOf(reference, kind)
		if !okc && !okr {
			continue
		}
		v := compareProbes(kind, c, r, okc && okr, rawEqual)
		if kind == ProbeRaw {
			rawEqual = v.Verdict != ParityTokenizer && v.Verdict != ParityUnknown
		}
		out = append(out, v)
	}
	return out
}

func compareProbes(kind string, c, r Probe, both, rawEqual bool) ParityVerdict {
	v := ParityVerdict{Kind: kind, Verdict: ParityUnknown, At: -1}
	switch {
	case !both:
		v.Detail = "probed in one cell only"
	case c.Error != "" || r.Error != "":
		v.Detail = "a probe failed: " + firstOf(c.Error, r.Error)
	case c.PromptTokens <= 0 || r.PromptTokens <= 0:
		v.Detail = "a server reported no prompt token count"
	case c.PromptTokens != r.PromptTokens:
		v.Verdict = ParityTokenizer
		if kind == ProbeChat && rawEqual {
			v.Verdict = ParityTemplate
		}
		v.Detail = fmt.Sprintf("prompt tokens %d against %d", c.PromptTokens, r.PromptTokens)
	case c.Text == "" || r.Text == "":
		v.Detail = fmt.Sprintf("equal prompt tokens (%d), but an empty answer", c.PromptTokens)
	case c.Text == r.Text && c.CompletionTokens == r.CompletionTokens && c.Finish == r.Finish:
		v.Verdict = ParityEqual
		v.Detail = fmt.Sprintf("prompt tokens %d each, the same %d generated tokens", c.PromptTokens, c.CompletionTokens)
	case c.Text == r.Text:
		v.Verdict, v.At = ParityDiverged, utf8.RuneCountInString(c.Text)
		v.Detail = fmt.Sprintf("the same text, but %d against %d tokens, finish %s against %s", c.CompletionTokens, r.CompletionTokens, c.Finish, r.Finish)
	default:
		v.Verdict, v.At = ParityDiverged, divergence(c.Text, r.Text)
		v.Detail = fmt.Sprintf("equal prompt tokens (%d), diverged at char %d", c.PromptTokens, v.At)
	}
	return v
}

// divergence is the rune index where a and b first differ.
func divergence(a, b string) int {
	i := 0
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			break
		}
		a, b, i = a[na:], b[nb:], i+1
	}
	return i
}

func probeOf(ps []Probe, kind string) (Probe, bool) {
	for _, p := range ps {
		if p.Kind == kind {
			return p, true
		}
	}
	return Probe{}, false
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// ParityWord is a pair's parity in a word: "parity" when every kind was,
// else the first kind's verdict that was not ("raw: tokenizer drift").
func ParityWord(vs []ParityVerdict) string {
	if len(vs) == 0 {
		return "not probed"
	}
	for _, v := range vs {
		if v.Verdict != ParityEqual {
			if v.Verdict == ParityDiverged {
				return fmt.Sprintf("%s: diverged at char %d", v.Kind, v.At)
			}
			return v.Kind + ": " + v.Verdict
		}
	}
	return ParityEqual
}
