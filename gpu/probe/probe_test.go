package probe

import (
	"bufio"
	"errors"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
)

func TestMachine(t *testing.T) {
	m := Machine()
	if m.Host == "" || m.OS == "" || m.Chip == "" {
		t.Errorf("Machine() = %+v: host, os and chip must be set", m)
	}
	if runtime.GOOS == "linux" && m.MemoryBytes <= 0 {
		t.Errorf("memoryBytes %d on linux", m.MemoryBytes)
	}
	if m.GPU == "" {
		t.Error("GPU must name devices or say why there are none")
	}
}

func TestOpenGPU(t *testing.T) {
	g, err := OpenGPU()
	if err != nil {
		// The usual case here and in CI: a clear word, not a crash.
		if !errors.Is(err, ErrNoGPU) || !strings.HasPrefix(err.Error(), "no GPU found") {
			t.Fatalf("OpenGPU error %q does not start with %q", err, ErrNoGPU)
		}
		if got := DescribeGPUs(); !strings.HasPrefix(got, "no GPU found") {
			t.Errorf("DescribeGPUs() = %q", got)
		}
		return
	}
	defer g.Close()
	devs, err := g.Devices()
	if err != nil || len(devs) == 0 {
		t.Fatalf("Devices() = %v, %v", devs, err)
	}
	for _, d := range devs {
		if d.Name == "" || d.MemoryTotal <= 0 {
			t.Errorf("device %+v lacks a name or memory", d)
		}
	}
	if _, err := g.ProcessMemory([]int{1}); err != nil {
		t.Errorf("ProcessMemory: %v", err)
	}
}

func TestGroupRSS(t *testing.T) {
	// The group's leader says when it runs: just after exec a process may
	// have no page resident yet (rss 0, 1 run in 30 under load).
	// It waits on its stdin with no child of its own, so once it is
	// killed its group is empty.
	cmd := exec.Command("sh", "-c", "echo ready; read line")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("the child said %q, %v", line, err)
	}
	rss, pids, err := GroupRSS(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if rss <= 0 || !slices.Contains(pids, cmd.Process.Pid) {
		t.Errorf("GroupRSS = %d bytes, pids %v; want > 0 with %d", rss, pids, cmd.Process.Pid)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if _, _, err := GroupRSS(cmd.Process.Pid); err == nil {
		t.Error("GroupRSS of an ended group succeeded")
	}
}
