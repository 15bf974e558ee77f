package engine

import (
	"hash/fnv"
	"strings"
)

// The simulator's tokenizer: one token per whitespace-separated word. Real
// tokenizers differ, which is why the runner reads counts from usage.
func tokenize(text string) []uint64 {
	words := strings.Fields(text)
	ids := make([]uint64, len(words))
	for i, w := range words {
		h := fnv.New64a()
		h.Write([]byte(w))
		ids[i] = h.Sum64()
	}
	return ids
}

// chatTokens applies a simple chat template: a role marker and an end
// marker around each message, then the assistant's opening marker.
func chatTokens(msgs []chatMessage) []uint64 {
	var ids []uint64
	for _, m := range msgs {
		ids = append(ids, tokenize("<|"+m.Role+"|>")...)
		ids = append(ids, tokenize(m.text())...)
		ids = append(ids, tokenize("<|end|>")...)
	}
	return append(ids, tokenize("<|assistant|>")...)
}

// vocabulary is what the simulator "generates": filler words, never a
// model's output.
var vocabulary = strings.Fields(`the model simulates a token stream with a
stated cost model so that benchmarks and panels have traffic to show while no
accelerator or weights are present on this machine`)

// promptSeed folds a prompt's token hashes into the seed of its words.
func promptSeed(prompt []uint64) uint64 {
	var h uint64 = 14695981039346656037
	for _, t := range prompt {
		h = (h ^ t) * 1099511628211
	}
	return h
}

func word(seed uint64, i int) string {
	return vocabulary[(seed+uint64(i)*7)%uint64(len(vocabulary))]
}
