// Package e2e holds the panel's browser tests: the real backend (built with
// the panel embedded) driven in headless Chromium through chromedp. They run
// in scripts/test after scripts/build-panel, and skip, saying so, only when
// no Chromium is installed. Screenshots and timings go to out/e2e/ at the
// repository root (E2E_OUT overrides).
package e2e
