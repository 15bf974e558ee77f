//go:build !linux

package runner

import "syscall"

// dieWithRunner: only Linux can tie a child's life to its parent's.
func dieWithRunner(*syscall.SysProcAttr) {}
