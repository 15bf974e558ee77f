//go:build !linux

package main

// The kill test is Linux's (bench_kill_linux_test.go): elsewhere TestMain's
// hook for its child process is never asked for.
const killParentEnv = "MLX_METRICS_TEST_KILL_PARENT"

func killParent() int { return 2 }
