//go:build !linux

package e2e

import "os/exec"

// dieWithTest has no parent-death signal to use outside Linux: a test killed
// by its -timeout there can leave its backend running.
func dieWithTest(cmd *exec.Cmd) {}
