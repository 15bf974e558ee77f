package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"

	"github.com/ollama/ollama/fs/ggml"
)

// shape is the model's size. Small enough that ollama's llama.cpp runs it
// fast on a CPU: bench-serve measures the serving path, not a model.
type shape struct {
	Layers, Dim, Heads, FF, Context int
}

var tiny = shape{Layers: 4, Dim: 256, Heads: 4, FF: 768, Context: 32768}

const (
	// biasDim holds the same value in every embedding, so that an output
	// row can give a token a logit of one sign whatever the input (llama
	// has no output bias): strongly negative for the tokens never to
	// generate.
	biasDim   = 0
	biasValue = 4
	never     = -64
	// layerStd keeps attention and feed-forward small beside the
	// embedding (std 1), so the last position's residual stays close to
	// its token's embedding and the output layer decides the next token.
	layerStd = 0.02
)

// model is a random-weight Llama whose greedy next token is a fixed
// permutation of the last input token. The generated tokens form one
// cycle, so a greedy stream never repeats a token (ollama v0.6.5 ends a
// stream without an error after a token repeats 30 times) and its text
// follows from the prompt's last token. Output row next[t] is t's own
// embedding: its logit is about |e_t|² = Dim, every other about
// N(0, Dim), a margin of ~Dim-3√Dim that sampling at temperature 1 and
// ollama's repeat penalty (÷1.1) leave alone.
type model struct {
	shape
	vocab
	next   map[int]int // input token -> generated token
	embd   [][]float32
	output [][]float32
	rng    *rand.Rand
}

func newModel(s shape, seed uint64, words bool) *model {
	m := &model{shape: s, vocab: newVocab(words), rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	m.embd = m.matrix(len(m.tokens), s.Dim, 1)
	for _, row := range m.embd {
		row[biasDim] = biasValue
	}
	// One cycle through the generated tokens in a seeded order; the
	// tokens never generated (BOS, EOS, newline) lead into it too.
	order := append([]int(nil), m.out...)
	m.rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	m.next = map[int]int{}
	for i, t := range order {
		m.next[t] = order[(i+1)%len(order)]
	}
	for i, t := range []int{bosID, eosID, newlineID} {
		m.next[t] = order[i]
	}
	m.output = make([][]float32, len(m.tokens))
	for i := range m.output {
		m.output[i] = make([]float32, s.Dim)
	}
	for t := range m.tokens { // in id order: the same sums from one seed
		n, ok := m.next[t]
		if !ok {
			continue
		}
		for d, x := range m.embd[t] {
			m.output[n][d] += x
		}
	}
	generated := map[int]bool{}
	for _, t := range m.out {
		generated[t] = true
	}
	for t, row := range m.output {
		row[biasDim] = 0
		if !generated[t] {
			row[biasDim] = never
		}
	}
	return m
}

// matrix is rows×cols of N(0, std²), drawn in row order.
func (m *model) matrix(rows, cols int, std float64) [][]float32 {
	out := make([][]float32, rows)
	for i := range out {
		out[i] = make([]float32, cols)
		for j := range out[i] {
			out[i][j] = float32(m.rng.NormFloat64() * std)
		}
	}
	return out
}

func ones(n int) [][]float32 {
	row := make([]float32, n)
	for i := range row {
		row[i] = 1
	}
	return [][]float32{row}
}

// kv is the GGUF metadata llama.cpp's llama architecture and its "gpt2"
// (byte-level BPE) tokenizer read.
func (m *model) kv() ggml.KV {
	return ggml.KV{
		"general.architecture":                   "llama",
		"general.type":                           "model",
		"general.name":                           "tiny",
		"general.file_type":                      uint32(0), // all F32
		"llama.block_count":                      uint32(m.Layers),
		"llama.context_length":                   uint32(m.Context),
		"llama.embedding_length":                 uint32(m.Dim),
		"llama.feed_forward_length":              uint32(m.FF),
		"llama.attention.head_count":             uint32(m.Heads),
		"llama.attention.head_count_kv":          uint32(m.Heads),
		"llama.attention.layer_norm_rms_epsilon": float32(1e-5),
		"llama.rope.dimension_count":             uint32(m.Dim / m.Heads),
		"llama.rope.freq_base":                   float32(10000),
		"llama.vocab_size":                       uint32(len(m.tokens)),
		"tokenizer.ggml.model":                   "gpt2",
		"tokenizer.ggml.pre":                     "gpt-2",
		"tokenizer.ggml.tokens":                  m.tokens,
		"tokenizer.ggml.token_type":              m.types,
		"tokenizer.ggml.merges":                  m.merges,
		"tokenizer.ggml.bos_token_id":            uint32(bosID),
		"tokenizer.ggml.eos_token_id":            uint32(eosID),
		"tokenizer.ggml.add_bos_token":           true,
		"tokenizer.ggml.add_eos_token":           false,
	}
}

// tensors are the weights in torch order ([out, in]); WriteGGUF reverses
// each shape into GGUF's order.
func (m *model) tensors() ([]ggml.Tensor, error) {
	d, kv, ff := m.Dim, m.Dim, m.FF
	ts := []ggml.Tensor{
		tensor("token_embd.weight", m.embd),
		tensor("output_norm.weight", ones(d)),
		tensor("output.weight", m.output),
	}
	for i := range m.Layers {
		blk := func(name string, rows, cols int, std float64) {
			ts = append(ts, tensor(fmt.Sprintf("blk.%d.%s.weight", i, name), m.matrix(rows, cols, std)))
		}
		ts = append(ts, tensor(fmt.Sprintf("blk.%d.attn_norm.weight", i), ones(d)))
		blk("attn_q", d, d, layerStd)
		blk("attn_k", kv, d, layerStd)
		blk("attn_v", kv, d, layerStd)
		blk("attn_output", d, d, layerStd)
		ts = append(ts, tensor(fmt.Sprintf("blk.%d.ffn_norm.weight", i), ones(d)))
		blk("ffn_gate", ff, d, layerStd)
		blk("ffn_up", ff, d, layerStd)
		blk("ffn_down", d, ff, layerStd)
	}
	for _, t := range ts {
		// WriteGGUF pads each tensor to 32 bytes but does not count the
		// padding in the offsets it records: every size must be a multiple.
		if t.Size()%32 != 0 {
			return nil, fmt.Errorf("%s: %d bytes, not a multiple of 32", t.Name, t.Size())
		}
	}
	return ts, nil
}

// tensor is an F32 tensor of rows (a norm's weight is one row, a vector).
func tensor(name string, rows [][]float32) ggml.Tensor {
	shape := []uint64{uint64(len(rows)), uint64(len(rows[0]))}
	if len(rows) == 1 {
		shape = shape[1:]
	}
	return ggml.Tensor{Name: name, Kind: 0, Shape: shape, WriterTo: f32rows(rows)}
}

type f32rows [][]float32

func (r f32rows) WriteTo(w io.Writer) (int64, error) {
	var n int64
	buf := make([]byte, 4*len(r[0]))
	for _, row := range r {
		for i, x := range row {
			binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(x))
		}
		k, err := w.Write(buf)
		n += int64(k)
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
