package loadgen

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"testing"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// BenchmarkPeerShare256 compares the load generator's own share of TTFT
// with a peer's, the npm `openai` client under node, side by side: one
// reference engine process, the same streams (100-token prompts, 40
// tokens at 25 tok/s, started 3 ms apart), the two clients taking turns
// round by round with the order flipped every round, so the machine's
// drift falls on both. A share is a stream's TTFT as its client measured
// it less the engine's own received-to-first-token span (server_timing).
// It reports both p50s and their ratio (peer / load generator).
//
// It needs node and the openai package: MLX_METRICS_OPENAI_DIR names a
// directory whose node_modules holds it (scripts/bench-loadgen makes
// one); without it the benchmark is skipped.
//
//	MLX_METRICS_OPENAI_DIR=out/openai-peer go test -run '^$' -bench PeerShare -benchtime 3x ./gpu/loadgen/
func BenchmarkPeerShare256(b *testing.B) { benchPeerShare(b, 256) }

// BenchmarkPeerShare64 is the same with 64 streams.
func BenchmarkPeerShare64(b *testing.B) { benchPeerShare(b, 64) }

// BenchmarkPeerShare1 is one stream at a time.
func BenchmarkPeerShare1(b *testing.B) { benchPeerShare(b, 1) }

func benchPeerShare(b *testing.B, streams int) {
	peer := startPeer(b, streams)
	c := New(peer.base+"/v1", Options{})
	defer c.Close()
	var ours, theirs, got, peerGot []float64
	inTurns(b,
		func() (err error) { got, _, err = roundShares(c, streams, peer.prompt); return err },
		func() (err error) { peerGot, err = peer.round(); return err },
		func() {
			ours = append(ours, got...)
			theirs = append(theirs, peerGot...)
		})
	sort.Float64s(ours)
	sort.Float64s(theirs)
	p50, peer50 := bench.Percentile(ours, 50), bench.Percentile(theirs, 50)
	b.ReportMetric(p50, "loadgen-share-p50-ms")
	b.ReportMetric(peer50, "openai-share-p50-ms")
	b.ReportMetric(peer50/p50, "openai/loadgen")
	if testing.Verbose() {
		fmt.Printf("%d streams, %d each: client share p50 / p99: load generator %.3f / %.3f ms, npm openai %.3f / %.3f ms; ratio of p50s %.2f\n",
			streams, len(ours), p50, bench.Percentile(ours, 99), peer50, bench.Percentile(theirs, 99), peer50/p50)
	}
}

// peerClient is testdata/openai-peer.mjs running under node, one round
// per line asked.
type peerClient struct {
	base, prompt string
	in           io.Writer
	out          *bufio.Scanner
}

func startPeer(b *testing.B, streams int) *peerClient {
	dir := os.Getenv("MLX_METRICS_OPENAI_DIR")
	if dir == "" {
		b.Skip("MLX_METRICS_OPENAI_DIR is not set (scripts/bench-loadgen sets it)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		b.Skip("node is not installed")
	}
	// node resolves `openai` from the script's own directory, so the script
	// runs from the directory that has it.
	script, err := os.ReadFile("testdata/openai-peer.mjs")
	if err != nil {
		b.Fatal(err)
	}
	runDir := b.TempDir()
	if err := os.Symlink(filepath.Join(absDir(b, dir), "node_modules"), filepath.Join(runDir, "node_modules")); err != nil {
		b.Fatal(err)
	}
	p := &peerClient{prompt: Prompt(100, "")}
	for name, data := range map[string]string{"peer.mjs": string(script), "prompt.txt": p.prompt} {
		if err := os.WriteFile(filepath.Join(runDir, name), []byte(data), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	p.base = spawnShareEngine(b, streams)
	cmd := exec.Command(node, "peer.mjs", p.base+"/v1", strconv.Itoa(streams), strconv.Itoa(shareTokens), "prompt.txt")
	cmd.Dir = runDir
	cmd.Stderr = os.Stderr
	if p.in, err = cmd.StdinPipe(); err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { io.WriteString(p.in, "exit\n"); cmd.Wait() })
	p.out = bufio.NewScanner(stdout)
	p.out.Buffer(make([]byte, 0, 64<<10), 16<<20)
	return p
}

func (p *peerClient) round() ([]float64, error) {
	if _, err := io.WriteString(p.in, "round\n"); err != nil {
		return nil, err
	}
	if !p.out.Scan() {
		return nil, fmt.Errorf("the node peer ended: %v", p.out.Err())
	}
	var streams []struct{ TTFTMs, ServerMs float64 }
	if err := json.Unmarshal(p.out.Bytes(), &streams); err != nil {
		return nil, fmt.Errorf("the node peer said %.200s", p.out.Bytes())
	}
	shares := make([]float64, len(streams))
	for i, s := range streams {
		shares[i] = s.TTFTMs - s.ServerMs
	}
	return shares, nil
}

func absDir(b *testing.B, dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		b.Fatal(err)
	}
	return abs
}
