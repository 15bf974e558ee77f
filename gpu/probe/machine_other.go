//go:build !linux

package probe

import (
	"os/exec"
	"runtime"
	"strconv"
)

// sysctl reads a value on macOS and the BSDs; "" elsewhere.
func sysctl(name string) string {
	out, err := exec.Command("sysctl", "-n", name).Output()
	if err != nil {
		return ""
	}
	return firstLine(string(out))
}

func osName() string {
	if v := sysctl("kern.osproductversion"); v != "" && runtime.GOOS == "darwin" {
		return "macOS " + v
	}
	return runtime.GOOS
}

func chip() string { return sysctl("machdep.cpu.brand_string") }

func memoryBytes() int64 {
	n, _ := strconv.ParseInt(sysctl("hw.memsize"), 10, 64)
	return n
}
