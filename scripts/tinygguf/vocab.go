package main

import (
	"strings"

	"github.com/mlx-bun/mlx-metrics/gpu/loadgen"
)

// Token ids with a fixed place in the vocabulary.
const (
	bosID     = 0
	eosID     = 1
	newlineID = 2
)

// Token types as llama.cpp reads tokenizer.ggml.token_type.
const (
	typeNormal  = 1
	typeControl = 3
)

// vocab is a GPT-2 style byte-level BPE vocabulary (llama.cpp's "gpt2"
// tokenizer): BOS, EOS, a newline for chat templates, every printable
// ASCII character, and each word of the runner's prompts with its leading
// space, built up one character at a time by merges. The words make a
// prompt of n words about n tokens, as bench-serve's plans assume (by
// characters alone, the default 1024-word prompt would be ~6,000 tokens).
// Without the words (characters only) the same prompt is several times the
// tokens: a model that differs from the other only in its vocabulary, for
// the parity probes' tokenizer drift.
type vocab struct {
	tokens []string
	types  []int32
	merges []string
	// out are the ids the model may generate: printable text only.
	out []int
}

// space is how byte-level BPE writes a space (GPT-2's bytes_to_unicode);
// the other printable ASCII bytes stand for themselves.
const space = "Ġ"

func newVocab(words bool) vocab {
	v := vocab{
		tokens: []string{"<s>", "</s>", "Ċ"},
		types:  []int32{typeControl, typeControl, typeNormal},
	}
	seen := map[string]bool{}
	add := func(tok string) {
		if seen[tok] {
			return
		}
		seen[tok] = true
		v.out = append(v.out, len(v.tokens))
		v.tokens = append(v.tokens, tok)
		v.types = append(v.types, typeNormal)
	}
	for b := byte(' '); b <= '~'; b++ {
		add(encode(string(b)))
	}
	if !words {
		return v
	}
	for _, w := range promptWords() {
		word := []rune(space + w)
		for k := 2; k <= len(word); k++ {
			tok := string(word[:k])
			if !seen[tok] {
				// Only merges whose left side starts with a space exist, so a
				// word's characters can merge in one way only: left to right.
				v.merges = append(v.merges, string(word[:k-1])+" "+string(word[k-1]))
			}
			add(tok)
		}
	}
	return v
}

// promptWords are the distinct words of gpu/loadgen's prompts, taken from
// its Prompt so that the vocabulary follows the prompts if they change.
func promptWords() []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range strings.Fields(loadgen.Prompt(4096, "")) {
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

func encode(s string) string { return strings.ReplaceAll(s, " ", space) }
