package main

import (
	"bytes"
	"crypto/sha256"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ollama/ollama/fs/ggml"
)

// TestGreedyCycle: with the residual stream left as the last token's
// embedding (the layers are small beside it), the argmax of the output
// layer is next[t] by a wide margin, EOS and BOS stay far below zero, and
// next walks one cycle through every generated token, so 200 greedy tokens
// never repeat one from any start.
func TestGreedyCycle(t *testing.T) {
	m := newModel(tiny, 1, true)
	generated := map[int]bool{}
	for _, id := range m.out {
		generated[id] = true
	}
	for in := range m.tokens {
		logits := m.logits(m.embd[in])
		best := argmax(logits)
		if best != m.next[in] || !generated[best] {
			t.Fatalf("token %d (%q): argmax %d, want next %d (generated)", in, m.tokens[in], best, m.next[in])
		}
		second := slices.Max(slices.Delete(slices.Clone(logits), best, best+1))
		if margin := logits[best] - second; margin < float64(m.Dim)/2 {
			t.Errorf("token %d: margin %.1f over the next best, want ≥ %d", in, margin, m.Dim/2)
		}
		for _, id := range []int{bosID, eosID, newlineID} {
			if logits[id] > -100 {
				t.Errorf("token %d: logit of %q %.1f, want < -100", in, m.tokens[id], logits[id])
			}
		}
	}
	seen := map[int]bool{}
	for id := m.out[0]; !seen[id]; id = m.next[id] {
		seen[id] = true
	}
	if len(seen) != len(m.out) {
		t.Errorf("the cycle from %d holds %d tokens, want all %d generated", m.out[0], len(seen), len(m.out))
	}
}

// logits are the output layer on x after the final RMS norm (weight 1).
func (m *model) logits(x []float32) []float64 {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	scale := 1 / math.Sqrt(ss/float64(len(x))+1e-5)
	out := make([]float64, len(m.output))
	for i, row := range m.output {
		for d, w := range row {
			out[i] += float64(w) * float64(x[d]) * scale
		}
	}
	return out
}

func argmax(xs []float64) int {
	best := 0
	for i, x := range xs {
		if x > xs[best] {
			best = i
		}
	}
	return best
}

// TestVocab: what the model can generate is printable ASCII, and every
// word of the runner's prompts is one token with its leading space,
// reached by the merges one character at a time.
func TestVocab(t *testing.T) {
	v := newVocab(true)
	for _, id := range v.out {
		text := strings.ReplaceAll(v.tokens[id], space, " ")
		for _, r := range text {
			if r < ' ' || r > '~' {
				t.Fatalf("token %d %q decodes to %q: not printable ASCII", id, v.tokens[id], text)
			}
		}
	}
	merges := map[string]bool{}
	for _, mg := range v.merges {
		merges[mg] = true
	}
	for _, w := range promptWords() {
		word := []rune(space + w)
		if !slices.Contains(v.tokens, string(word)) {
			t.Errorf("%q is not a token", string(word))
		}
		for k := 2; k <= len(word); k++ {
			if mg := string(word[:k-1]) + " " + string(word[k-1]); !merges[mg] {
				t.Errorf("%q: no merge %q", w, mg)
			}
		}
	}
	if n := len(promptWords()); n < 50 {
		t.Errorf("%d prompt words, want the loadgen's list (~100)", n)
	}
}

// TestWrite: the file is the same from the same seed and differs from
// another, and ollama's own reader finds the llama metadata and the
// shapes reversed into GGUF order ([in, out]).
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	sum := func(name string, seed uint64, words bool) [32]byte {
		path := filepath.Join(dir, name)
		if err := write(path, seed, words); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return sha256.Sum256(b)
	}
	a, b, c, d := sum("a.gguf", 1, true), sum("b.gguf", 1, true), sum("c.gguf", 2, true), sum("d.gguf", 1, false)
	if a != b || a == c || a == d {
		t.Errorf("seed 1 twice equal %v, seeds 1 and 2 equal %v, words and characters only equal %v; want true, false, false", a == b, a == c, a == d)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "a.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	f, _, err := ggml.Decode(bytes.NewReader(raw), -1)
	if err != nil {
		t.Fatal(err)
	}
	kv := f.KV()
	if kv.Architecture() != "llama" || kv.BlockCount() != 4 || kv.EmbeddingLength() != 256 || kv.ContextLength() != 32768 {
		t.Errorf("kv: %s, %d blocks, dim %d, context %d", kv.Architecture(), kv.BlockCount(), kv.EmbeddingLength(), kv.ContextLength())
	}
	if n := len(kv.Strings("tokenizer.ggml.tokens")); n != len(newVocab(true).tokens) {
		t.Errorf("%d tokens in the file, want %d", n, len(newVocab(true).tokens))
	}
	shapes := map[string][]uint64{}
	for _, ts := range f.Tensors().Items() {
		shapes[ts.Name] = ts.Shape
	}
	vocab := uint64(len(newVocab(true).tokens))
	for name, want := range map[string][]uint64{
		"token_embd.weight":     {256, vocab},
		"output.weight":         {256, vocab},
		"output_norm.weight":    {256},
		"blk.3.attn_q.weight":   {256, 256},
		"blk.3.ffn_up.weight":   {256, 768},
		"blk.3.ffn_down.weight": {768, 256},
	} {
		if !slices.Equal(shapes[name], want) {
			t.Errorf("%s: shape %v, want %v", name, shapes[name], want)
		}
	}
	if len(shapes) != 3+9*4 {
		t.Errorf("%d tensors, want %d", len(shapes), 3+9*4)
	}
}
