//go:build !(js && wasm)

package echarts

// Chart is a chart Set drew; outside a browser there is none.
type Chart struct{}

// Set does nothing outside a browser and reports false.
func Set(id string, option []byte) (Chart, bool) { return Chart{}, false }

// Dispose does nothing outside a browser.
func (Chart) Dispose() {}

// Observe watches nothing outside a browser.
func Observe(id string, shown func()) (stop func()) { return func() {} }

// InView is true outside a browser: nothing is known to be out of view.
func InView(id string) bool { return true }
