package bench

import (
	"strconv"
	"strings"
	"testing"
)

func TestParity(t *testing.T) {
	raw := func(prompt int64, text string) Probe {
		return Probe{Kind: ProbeRaw, PromptTokens: prompt, CompletionTokens: 4, Finish: "length", Text: text}
	}
	chat := func(prompt int64, text string) Probe {
		return Probe{Kind: ProbeChat, PromptTokens: prompt, CompletionTokens: 4, Finish: "length", Text: text}
	}
	tests := []struct {
		name       string
		cand, ref  []Probe
		want       []string // kind=verdict@at
		word       string
		detailPart string // of the first verdict
	}{
		{"both equal", []Probe{raw(50, "abcd"), chat(60, "wxyz")}, []Probe{raw(50, "abcd"), chat(60, "wxyz")},
			[]string{"raw=parity@-1", "chat=parity@-1"}, "parity", "prompt tokens 50 each"},
		{"the vocabulary differs: tokenizer drift twice, never a text diff",
			[]Probe{raw(50, "abcd"), chat(60, "abcd")}, []Probe{raw(90, "abcd"), chat(100, "abcd")},
			[]string{"raw=tokenizer drift@-1", "chat=tokenizer drift@-1"}, "raw: tokenizer drift", "prompt tokens 50 against 90"},
		{"the template differs: the raw probe agrees",
			[]Probe{raw(50, "abcd"), chat(60, "wxyz")}, []Probe{raw(50, "abcd"), chat(64, "wxyz")},
			[]string{"raw=parity@-1", "chat=template drift@-1"}, "chat: template drift", ""},
		{"diverged at the third character (runes, not bytes)",
			[]Probe{raw(50, "é€xd")}, []Probe{raw(50, "é€yd")},
			[]string{"raw=diverged@2"}, "raw: diverged at char 2", "diverged at char 2"},
		{"the same text, another finish",
			[]Probe{raw(50, "abcd")}, []Probe{{Kind: ProbeRaw, PromptTokens: 50, CompletionTokens: 4, Finish: "stop", Text: "abcd"}},
			[]string{"raw=diverged@4"}, "raw: diverged at char 4", "finish length against stop"},
		{"a failed probe is unknown",
			[]Probe{{Kind: ProbeRaw, Error: "HTTP 500"}}, []Probe{raw(50, "abcd")},
			[]string{"raw=unknown@-1"}, "raw: unknown", "a probe failed: HTTP 500"},
		{"no prompt count is unknown",
			[]Probe{raw(0, "abcd")}, []Probe{raw(50, "abcd")},
			[]string{"raw=unknown@-1"}, "raw: unknown", "no prompt token count"},
		{"probed on one side", []Probe{raw(50, "a")}, nil, []string{"raw=unknown@-1"}, "raw: unknown", "one cell only"},
		{"not probed", nil, nil, nil, "not probed", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vs := Parity(tt.cand, tt.ref)
			var got []string
			for _, v := range vs {
				got = append(got, v.Kind+"="+v.Verdict+"@"+strconv.Itoa(v.At))
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("Parity = %v, want %v", got, tt.want)
			}
			if w := ParityWord(vs); w != tt.word {
				t.Errorf("ParityWord = %q, want %q", w, tt.word)
			}
			if tt.detailPart != "" && !strings.Contains(vs[0].Detail, tt.detailPart) {
				t.Errorf("detail %q lacks %q", vs[0].Detail, tt.detailPart)
			}
		})
	}
}
