package profiles

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

func validPlan() bench.Plan {
	return bench.Plan{
		Scope:  bench.ScopeScoped,
		Models: []string{"m"},
		Cells: []bench.Cell{{
			Model: "m", Kind: bench.KindTree, Configuration: "c",
			Server: bench.Server{
				Argv:     []string{"server", "--port", bench.PortPlaceholder},
				BaseURL:  "http://127.0.0.1:{port}/v1",
				ReadyURL: "http://127.0.0.1:{port}/v1/models",
			},
		}},
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	d := New(filepath.Join(dir, "plans"))
	if err := d.Seed(map[string]bench.Plan{"good": validPlan()}); err != nil {
		t.Fatal(err)
	}
	write := func(name, body string) {
		if err := os.WriteFile(d.FileFor(name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("broken", "{not json")
	write("unknown-field", `{"scope":"all","cells":[],"bogus":1}`)
	write("invalid", `{"scope":"sideways","cells":[]}`)
	good, _ := os.ReadFile(d.FileFor("good"))
	write("trailing", string(good)+"]}")
	// A plan outside the directory that a traversal would reach.
	if err := os.WriteFile(filepath.Join(dir, "outside.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		want error
	}{
		{"good", nil},
		{"", ErrBadName},
		{"../outside", ErrBadName},
		{"..", ErrBadName},
		{".hidden", ErrBadName},
		{"a/b", ErrBadName},
		{`a\b`, ErrBadName},
		{filepath.Join(dir, "outside"), ErrBadName},
		{"-flag", ErrBadName},
		{"has space", ErrBadName},
		{"missing", ErrNotFound},
		{"Missing_v1.2-x", ErrNotFound},
		{"broken", ErrInvalid},
		{"unknown-field", ErrInvalid},
		{"invalid", ErrInvalid},
		{"trailing", ErrInvalid},
		{strings.Repeat("a", MaxNameLen), ErrNotFound},
		{strings.Repeat("a", MaxNameLen+1), ErrBadName},
		{strings.Repeat("a", 300), ErrBadName}, // ENAMETOOLONG on disk: must not get that far
	}
	// A profile not there is said with the ones that are.
	if _, err := d.Load("missing"); err == nil || !strings.HasSuffix(err.Error(), "(there are broken, good, invalid, trailing, unknown-field)") {
		t.Errorf("Load(missing) = %v, want the profiles there named", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := d.Load(tt.name)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Load(%q) err = %v, want %v", tt.name, err, tt.want)
			}
			if err == nil && len(p.Cells) != 1 {
				t.Fatalf("plan = %+v", p)
			}
			// Messages reach clients: no server path, no unbounded echo.
			if err != nil && ((strings.Contains(err.Error(), dir) && !strings.Contains(tt.name, dir)) || len(err.Error()) > 400) {
				t.Fatalf("message echoes a path or too much: %s", err)
			}
		})
	}
}

func TestSeedKeepsExisting(t *testing.T) {
	d := New(filepath.Join(t.TempDir(), "plans"))
	edited := validPlan()
	edited.Description = "edited by hand"
	if err := d.Seed(map[string]bench.Plan{"smoke": edited}); err != nil {
		t.Fatal(err)
	}
	if err := d.Seed(map[string]bench.Plan{"smoke": validPlan(), "other": validPlan()}); err != nil {
		t.Fatal(err)
	}
	p, err := d.Load("smoke")
	if err != nil || p.Description != "edited by hand" {
		t.Fatalf("smoke overwritten: %v %+v", err, p)
	}
	if _, err := d.Load("other"); err != nil {
		t.Fatal(err)
	}
	// Nothing else is left there: no temporary file of the writes.
	entries, err := os.ReadDir(d.Path())
	if err != nil || len(entries) != 2 {
		t.Fatalf("plans directory = %v %v", entries, err)
	}
}

// TestSeedFullDisk: a start on a full disk seeds nothing when every ready
// profile is there, and names the profile, not the path, when one is missing.
func TestSeedFullDisk(t *testing.T) {
	root := t.TempDir()
	full := func(string, []byte, os.FileMode) error {
		return &fs.PathError{Op: "open", Path: root + "/plans/.x.json.123", Err: syscall.ENOSPC}
	}
	tests := []struct {
		name    string
		present []string
		wantErr bool
	}{
		{"all present", []string{"smoke", "full"}, false},
		{"one missing", []string{"smoke"}, true},
		{"none present", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := New(filepath.Join(t.TempDir(), "plans"))
			if err := os.MkdirAll(d.Path(), 0o755); err != nil {
				t.Fatal(err)
			}
			for _, name := range tt.present {
				os.WriteFile(d.FileFor(name), []byte("{}"), 0o644)
			}
			d.writeNew = full
			err := d.Seed(map[string]bench.Plan{"smoke": validPlan(), "full": validPlan()})
			if (err != nil) != tt.wantErr {
				t.Fatalf("Seed err = %v, want error %v", err, tt.wantErr)
			}
			if err != nil && (!errors.Is(err, syscall.ENOSPC) || strings.Contains(err.Error(), root)) {
				t.Fatalf("Seed err = %v: want ENOSPC without the path", err)
			}
		})
	}
}

func TestList(t *testing.T) {
	d := New(filepath.Join(t.TempDir(), "plans"))
	if got, err := d.List(); err != nil || len(got) != 0 {
		t.Fatalf("absent dir: %v %v", got, err)
	}
	if err := d.Seed(map[string]bench.Plan{"b": validPlan(), "a": validPlan()}); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"c.json": "{", "notes.txt": "x", ".x.json": "{}"} {
		if err := os.WriteFile(filepath.Join(d.Path(), name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := d.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Name != "a" || got[1].Name != "b" || got[2].Name != "c" {
		t.Fatalf("list = %+v", got)
	}
	if got[0].Cells != 1 || got[0].Scope != bench.ScopeScoped || got[0].Error != "" {
		t.Fatalf("a = %+v", got[0])
	}
	if got[2].Error == "" {
		t.Fatal("c should carry its error")
	}
}

// Past maxNamed profiles, an error names the first of them and the count.
func TestMissingNamesAtMostSome(t *testing.T) {
	d := New(filepath.Join(t.TempDir(), "plans"))
	plans := map[string]bench.Plan{}
	for i := range maxNamed + 2 {
		plans[fmt.Sprintf("p%02d", i)] = validPlan()
	}
	if err := d.Seed(plans); err != nil {
		t.Fatal(err)
	}
	_, err := d.Load("missing")
	if err == nil || !strings.HasSuffix(err.Error(), "(there are 14, among them p00, p01, p02, p03, p04, p05, p06, p07, p08, p09, p10, p11)") {
		t.Fatalf("Load(missing) = %v", err)
	}
}
