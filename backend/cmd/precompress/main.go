// Command precompress writes a brotli copy (name.br) beside each file it is
// given, for the backend to serve to browsers that take br. It is a build
// step of scripts/build-panel, not part of the backend.
package main

import (
	"bytes"
	"fmt"
	"os"

	"github.com/andybalholm/brotli"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: precompress FILE...")
		os.Exit(2)
	}
	for _, name := range os.Args[1:] {
		raw, err := os.ReadFile(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, "precompress:", err)
			os.Exit(1)
		}
		var buf bytes.Buffer
		w := brotli.NewWriterLevel(&buf, brotli.BestCompression)
		if _, err := w.Write(raw); err != nil {
			fmt.Fprintln(os.Stderr, "precompress:", err)
			os.Exit(1)
		}
		if err := w.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "precompress:", err)
			os.Exit(1)
		}
		if err := os.WriteFile(name+".br", buf.Bytes(), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "precompress:", err)
			os.Exit(1)
		}
	}
}
