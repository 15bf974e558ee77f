//go:build wasm

package main

// generateMain is unreachable in the browser (RunWhenOnBrowser never
// returns); the generator and its image encoders stay out of the wasm.
func generateMain() {}
