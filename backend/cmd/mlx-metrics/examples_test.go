package main

// TestExamples holds the examples of every command's -h and of docs/*.md's
// sh blocks to what they print, as TestReadmeCommands does the README's.
// `bench plan` and `bench run` examples run as printed, in order, in one
// directory per text, with HOME a temporary directory (so ~/.mlx-metrics
// is a fresh default home holding the shipped profiles, as serve writes
// them) and /tmp/ a temporary directory. The other mlx-metrics examples
// talk to a backend, serve, or start a server: they are run with -h added
// before any pipe or redirection, which parses every flag and value as
// printed and stops there.

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mlx-bun/mlx-metrics/gpu/plans"
)

// example is one command of a text, its continuation lines joined.
type example struct {
	where string // "bench run -h", "docs/bench-serve.md:15"
	cmd   string
}

// runsAsPrinted are the examples run whole; the rest get -h.
var runsAsPrinted = regexp.MustCompile(`^mlx-metrics bench (plan|run)\b`)

// helpExamples are the mlx-metrics lines after "example(s):" in a usage.
func helpExamples(where, usage string) []example {
	var out []example
	in := false
	for _, line := range joinContinued(strings.Split(usage, "\n")) {
		if strings.Contains(strings.ToLower(line), "example") && strings.HasSuffix(strings.TrimSpace(line), ":") {
			in = true
			continue
		}
		if cmd := strings.TrimSpace(trailingComment.ReplaceAllString(line, "")); in && strings.HasPrefix(cmd, "mlx-metrics ") {
			out = append(out, example{where, cmd})
		}
	}
	return out
}

// docExamples are the mlx-metrics lines of a Markdown text's sh blocks.
func docExamples(name, text string) []example {
	var out []example
	for _, f := range fences(text) {
		if f.info != "sh" {
			continue
		}
		for _, line := range joinContinued(f.lines) {
			cmd := strings.TrimSpace(trailingComment.ReplaceAllString(line, ""))
			if strings.HasPrefix(cmd, "mlx-metrics ") {
				out = append(out, example{name + ":" + itoa(f.line), cmd})
			}
		}
	}
	return out
}

// joinContinued joins lines ending in a backslash with the next.
func joinContinued(lines []string) []string {
	var out []string
	cur := ""
	for _, l := range lines {
		if cur != "" {
			l = strings.TrimSpace(l)
		}
		if s, ok := strings.CutSuffix(strings.TrimRight(l, " "), `\`); ok {
			cur += strings.TrimRight(s, " ") + " "
			continue
		}
		out = append(out, cur+l)
		cur = ""
	}
	return out
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestExamplesHelpers(t *testing.T) {
	usage := "usage: x\n\nflags:\n  -a\nExamples (MLX):\n\n  mlx-metrics bench plan --out f \\\n    --model m -- \\\n    python x\n  mlx-metrics serve   # a comment\nnot mlx-metrics x\n"
	got := helpExamples("h", usage)
	want := []example{{"h", "mlx-metrics bench plan --out f --model m -- python x"}, {"h", "mlx-metrics serve"}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("helpExamples = %q, want %q", got, want)
	}
	doc := "text\n```sh\n# c\nmlx-metrics bench run a.json\ncurl x\n```\n```\nmlx-metrics no\n```\n"
	if got := docExamples("d.md", doc); len(got) != 1 || got[0] != (example{"d.md:2", "mlx-metrics bench run a.json"}) {
		t.Errorf("docExamples = %q", got)
	}
}

func TestExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs the examples")
	}
	root := repoRoot(t)
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "bin", "mlx-metrics")
	build := exec.Command("go", "build", "-o", bin, "./backend/cmd/mlx-metrics")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	env := []string{"PATH=" + filepath.Dir(bin) + string(os.PathListSeparator) + os.Getenv("PATH"),
		"MLX_METRICS_SERVER=http://127.0.0.1:1", "MLX_METRICS_HOME=", "BASE=20261201T100000Z-aaaa", "CANDIDATE=20261202T100000Z-bbbb"}

	var texts [][]example
	for _, cmd := range helpCommands() {
		out, _ := exec.Command(bin, append(cmd, "-h")...).CombinedOutput()
		texts = append(texts, helpExamples(strings.Join(cmd, " ")+" -h", string(out)))
	}
	for _, path := range docFiles(t, root) {
		if filepath.Base(path) == "README.md" {
			continue // TestReadmeCommands
		}
		text, _ := os.ReadFile(path)
		rel, _ := filepath.Rel(root, path)
		texts = append(texts, docExamples(rel, string(text)))
	}
	ran := 0
	for i, examples := range texts {
		// A text's examples share their files and home, as one reader's.
		dir := filepath.Join(tmp, itoa(i), "work")
		slash := filepath.Join(tmp, itoa(i), "tmp") + "/"
		home := filepath.Join(tmp, itoa(i), "home")
		os.MkdirAll(dir, 0o755)
		os.MkdirAll(slash, 0o755)
		profiles := filepath.Join(home, ".mlx-metrics", "metrics", "bench", "plans")
		os.MkdirAll(profiles, 0o755)
		for name, p := range plans.Ready() { // as serve writes them on its first start
			b, _ := json.Marshal(p)
			os.WriteFile(filepath.Join(profiles, name+".json"), b, 0o644)
		}
		for _, ex := range examples {
			cmd := strings.ReplaceAll(ex.cmd, "/tmp/", slash)
			if runsAsPrinted.MatchString(cmd) {
				ran++
			} else {
				cmd = helpOnly(cmd)
			}
			t.Run(ex.where+"/"+ex.cmd, func(t *testing.T) {
				c := exec.Command("bash", "-c", cmd)
				c.Dir, c.Env = dir, append(os.Environ(), append(env, "HOME="+home)...)
				if out, err := c.CombinedOutput(); err != nil {
					t.Errorf("%s: %s: %v\n%s", ex.where, cmd, err, out)
				}
			})
		}
	}
	if ran < 5 {
		t.Errorf("ran %d bench plan and bench run examples as printed; the texts have lost theirs", ran)
	}
}

// helpOnly is cmd with -h before its first pipe or redirection.
func helpOnly(cmd string) string {
	if i := strings.IndexAny(cmd, "|>"); i >= 0 {
		cmd = cmd[:i]
	}
	return strings.TrimSpace(cmd) + " -h"
}

// helpCommands are the commands with a -h: the command table itself, and
// bench's and events' subcommand lists too.
func helpCommands() [][]string {
	cmds := [][]string{{}, {"bench"}, {"events", "replay"}}
	for _, c := range commands {
		if c.name == "bench" {
			for _, b := range benchCommands {
				cmds = append(cmds, []string{"bench", b.name})
			}
			continue
		}
		cmds = append(cmds, []string{c.name})
	}
	return cmds
}
