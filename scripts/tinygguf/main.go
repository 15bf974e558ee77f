// Command tinygguf writes a small random-weight Llama as GGUF with
// ollama's own writer (fs/ggml.WriteGGUF of ollama v0.6.5), for measuring
// bench-serve against a real engine (scripts/bench-ollama): printable
// ASCII output only, end-of-sequence never chosen, a greedy stream that
// never repeats a token, a context that holds the plans' prompts, the same
// bytes from the same seed. No weights are fetched. Run it with GOWORK=off
// from its folder:
//
//	go run . -out /tmp/tiny.gguf [-seed 1] [-chars]
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/ollama/ollama/fs/ggml"
)

func main() {
	out := flag.String("out", "", "`FILE` to write the GGUF to (required)")
	seed := flag.Uint64("seed", 1, "`SEED` of the weights and the token cycle")
	chars := flag.Bool("chars", false, "a vocabulary of the printable characters alone, without the prompts' words (prompts take several times the tokens)")
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := write(*out, *seed, !*chars); err != nil {
		fmt.Fprintln(os.Stderr, "tinygguf:", err)
		os.Exit(1)
	}
}

func write(path string, seed uint64, words bool) error {
	m := newModel(tiny, seed, words)
	ts, err := m.tensors()
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := ggml.WriteGGUF(f, m.kv(), ts); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "tinygguf: %s: llama, %d layers, dim %d, %d heads, ff %d, vocab %d, context %d, seed %d\n",
		path, m.Layers, m.Dim, m.Heads, m.FF, len(m.tokens), m.Context, seed)
	return nil
}
