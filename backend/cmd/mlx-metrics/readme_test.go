package main

// Tests that keep the documentation honest: every relative link in README.md
// and docs/ resolves, and the README's table of serve's flags is serve's
// flag set, each flag with the environment twin its usage names (and serve
// really reads) and its real default.

import (
	"bufio"
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
)

// repoRoot is the workspace root, three levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.work")); err != nil {
		t.Fatalf("workspace root not found above the package: %v", err)
	}
	return root
}

// docFiles are README.md and every Markdown file under docs/.
func docFiles(t *testing.T, root string) []string {
	t.Helper()
	files := []string{filepath.Join(root, "README.md")}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

var (
	mdLink     = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	htmlLink   = regexp.MustCompile(`(?:src|href)="([^"]+)"`)
	inlineCode = regexp.MustCompile("`[^`]*`")
)

// prose is a Markdown file's lines outside fenced code blocks, with inline
// code removed, so that code showing a link is not taken for one.
func prose(text string) []string {
	var out []string
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out = append(out, inlineCode.ReplaceAllString(line, ""))
		}
	}
	return out
}

// links are the link targets of a Markdown file's prose.
func links(text string) []string {
	var out []string
	for _, line := range prose(text) {
		for _, re := range []*regexp.Regexp{mdLink, htmlLink} {
			for _, m := range re.FindAllStringSubmatch(line, -1) {
				out = append(out, m[1])
			}
		}
	}
	return out
}

// anchors are the ids GitHub gives a Markdown file's headings.
func anchors(text string) map[string]bool {
	ids := map[string]bool{}
	count := map[string]int{}
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		id := slug(strings.TrimSpace(strings.TrimLeft(line, "#")))
		if n := count[id]; n > 0 {
			ids[id+"-"+strconv.Itoa(n)] = true
		} else {
			ids[id] = true
		}
		count[id]++
	}
	return ids
}

// slug is GitHub's heading id: lower case, punctuation dropped, spaces as
// hyphens.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestReadmeLinks(t *testing.T) {
	root := repoRoot(t)
	texts := map[string]string{}
	read := func(path string) (string, bool) {
		if s, ok := texts[path]; ok {
			return s, true
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return "", false
		}
		texts[path] = string(b)
		return texts[path], true
	}
	for _, file := range docFiles(t, root) {
		text, _ := read(file)
		rel, _ := filepath.Rel(root, file)
		for _, target := range links(text) {
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue // not checked: the tests reach no network
			}
			path, anchor, _ := strings.Cut(target, "#")
			dest := file
			if path != "" {
				if strings.HasPrefix(path, "/") {
					t.Errorf("%s: link %q is absolute; links must be relative to the file", rel, target)
					continue
				}
				dest = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
			}
			info, err := os.Stat(dest)
			if err != nil {
				t.Errorf("%s: link %q: no such file", rel, target)
				continue
			}
			if anchor == "" || info.IsDir() || !strings.HasSuffix(dest, ".md") {
				continue
			}
			destText, _ := read(dest)
			if !anchors(destText)[anchor] {
				t.Errorf("%s: link %q: no heading with the id %q there", rel, target, anchor)
			}
		}
	}
}

// README.md is for users and stays short (the project's rule: 250 lines
// at most); internals and measurements go to docs/.
func TestReadmeLength(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > 250 {
		t.Errorf("README.md has %d lines, at most 250: move detail to docs/", n)
	}
}

func TestLinksHelpers(t *testing.T) {
	text := "# The `serve` flags\n## Events in: the flat form\n## Events in: the flat form\n" +
		"see [a](docs/a.md) and ![shot](docs/img/x.png), `[not](code.md)`\n```\n[no](fenced.md)\n```\n<img src=\"docs/b.png\">\n"
	if got, want := links(text), []string{"docs/a.md", "docs/img/x.png", "docs/b.png"}; !slices.Equal(got, want) {
		t.Errorf("links = %q, want %q", got, want)
	}
	ids := anchors(text)
	for _, id := range []string{"the-serve-flags", "events-in-the-flat-form", "events-in-the-flat-form-1"} {
		if !ids[id] {
			t.Errorf("anchors lack %q: %v", id, ids)
		}
	}
}

// serveFlagUsage runs `mlx-metrics serve -h` and returns each flag it lists
// with its usage text.
func serveFlagUsage(t *testing.T) map[string]string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		out <- string(b)
	}()
	stdout, stderr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = w, w
	code := run(context.Background(), []string{"serve", "-h"})
	os.Stdout, os.Stderr = stdout, stderr
	w.Close()
	help := <-out
	r.Close()
	if code != 0 {
		t.Fatalf("mlx-metrics serve -h exited %d:\n%s", code, help)
	}
	// flag.PrintDefaults: "  -name type" then the usage on indented lines.
	flagLine := regexp.MustCompile(`^  --?([a-z][a-z0-9-]*)\b`)
	flags := map[string]string{}
	var current string
	sc := bufio.NewScanner(strings.NewReader(help))
	for sc.Scan() {
		if m := flagLine.FindStringSubmatch(sc.Text()); m != nil {
			current = m[1]
			flags[current] = sc.Text()
		} else if current != "" && strings.HasPrefix(sc.Text(), "    ") {
			flags[current] += " " + strings.TrimSpace(sc.Text())
		} else {
			current = ""
		}
	}
	if len(flags) == 0 {
		t.Fatalf("no flags found in mlx-metrics serve -h:\n%s", help)
	}
	return flags
}

var envTwin = regexp.MustCompile(`\benv:?\s+(MLX_METRICS_[A-Z0-9_]+)`)

// flagRow is one row of the README's table of serve's flags.
type flagRow struct {
	env string // the env cell, without backticks
	def string // the default cell, as written
}

// readmeFlagTable is the README's table of serve's flags: the table under
// the heading "`mlx-metrics serve` flags", by flag name.
func readmeFlagTable(t *testing.T, readme string) map[string]flagRow {
	t.Helper()
	const heading = "## `mlx-metrics serve` flags"
	_, section, ok := strings.Cut(readme, "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no %q section", heading)
	}
	if next := strings.Index(section, "\n## "); next >= 0 {
		section = section[:next]
	}
	cell := regexp.MustCompile("^`--([a-z][a-z0-9-]*)`")
	rows := map[string]flagRow{}
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) < 3 {
			continue
		}
		m := cell.FindStringSubmatch(strings.TrimSpace(cells[0]))
		if m == nil {
			continue // the header and the rule
		}
		if _, dup := rows[m[1]]; dup {
			t.Errorf("README.md lists --%s twice", m[1])
		}
		rows[m[1]] = flagRow{env: strings.Trim(strings.TrimSpace(cells[1]), "`"), def: strings.TrimSpace(cells[2])}
	}
	if len(rows) == 0 {
		t.Fatalf("README.md's %q section has no flag rows", heading)
	}
	return rows
}

func readmeRows(t *testing.T) map[string]flagRow {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return readmeFlagTable(t, string(readme))
}

// TestReadmeServeFlags checks the README's flag table against the real
// flag set both ways: every flag of serve has a row naming the environment
// twin its usage names (or "none" when it has none), and every row is a flag.
func TestReadmeServeFlags(t *testing.T) {
	rows := readmeRows(t)
	for name, usage := range serveFlagUsage(t) {
		want := "none"
		if m := envTwin.FindStringSubmatch(usage); m != nil {
			want = m[1]
		}
		got, ok := rows[name]
		switch {
		case !ok:
			t.Errorf("README.md's serve flag table lacks --%s (env %s)", name, want)
		case got.env != want:
			t.Errorf("README.md: --%s has env %q, serve -h names %q", name, got.env, want)
		}
		delete(rows, name)
	}
	for name := range rows {
		t.Errorf("README.md lists --%s, which serve does not have", name)
	}
}

// serveFlags is serve's flag set as runServe defines it, with the
// environment as it is now, and the keys its environment reader read.
func serveFlags(t *testing.T) (*flag.FlagSet, *envDefaults) {
	t.Helper()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	env := &envDefaults{}
	addServeFlags(fs, env)
	if err := env.err(); err != nil {
		t.Fatal(err)
	}
	return fs, env
}

// flagValue is fl's typed value; nil for a Value that is not a flag.Getter
// (--scrape's).
func flagValue(fl *flag.Flag) any {
	if g, ok := fl.Value.(flag.Getter); ok {
		return g.Get()
	}
	return nil
}

// TestReadmeServeFlagEnvAndDefaults checks each row of the README's flag
// table against what serve does: the environment variable it names is read
// by serve's environment reader (envDefaults) and sets the flag as the flag
// itself would, and the default column is the flag's default with the
// environment unset ("none", "off" or nothing for an empty default, ~ for
// the home directory, a duration in any form).
func TestReadmeServeFlagEnvAndDefaults(t *testing.T) {
	rows := readmeRows(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, r := range rows {
		if r.env != "none" {
			t.Setenv(r.env, "")
		}
	}
	fs, env := serveFlags(t)
	// A value set through the environment, one that differs from the
	// defaults, by the flag's type (--scrape takes a target).
	sample := func(fl *flag.Flag) string {
		if fl.Name == "scrape" {
			return "http://127.0.0.1:9/metrics,vllm"
		}
		switch flagValue(fl).(type) {
		case bool:
			return "true"
		case int:
			return "7"
		case float64:
			return "3.5"
		case time.Duration:
			return "42s"
		default:
			return "x-" + fl.Name
		}
	}
	for name, r := range rows {
		t.Run(name, func(t *testing.T) {
			fl := fs.Lookup(name)
			if fl == nil {
				t.Fatalf("serve has no --%s", name) // TestReadmeServeFlags says so too
			}
			want := strings.Trim(r.def, "`")
			if r.def == "" || r.def == "none" || r.def == "off" {
				want = ""
			}
			if _, ok := flagValue(fl).(time.Duration); ok {
				if d, err := time.ParseDuration(want); err == nil {
					want = d.String() // 70s is 1m10s
				}
			}
			if got := strings.Replace(fl.DefValue, home, "~", 1); got != want {
				t.Errorf("README.md: --%s defaults to %q, serve to %q", name, r.def, got)
			}
			if r.env == "none" {
				return
			}
			if !slices.Contains(env.read, r.env) {
				t.Fatalf("serve's environment reader never reads %s", r.env)
			}
			v := sample(fl)
			byFlag, _ := serveFlags(t)
			if err := byFlag.Set(name, v); err != nil {
				t.Fatal(err)
			}
			t.Setenv(r.env, v)
			byEnv, _ := serveFlags(t)
			got, set := byEnv.Lookup(name).Value.String(), byFlag.Lookup(name).Value.String()
			if got != set || got == fl.DefValue {
				t.Errorf("%s=%s gives --%s %q; --%s %s gives %q (default %q)", r.env, v, name, got, name, v, set, fl.DefValue)
			}
		})
	}
}
