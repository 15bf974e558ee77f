//go:build !(js && wasm)

package echarts

// Set does nothing outside a browser and reports false.
func Set(id string, option []byte) bool { return false }

// Dispose does nothing outside a browser.
func Dispose(id string) {}
