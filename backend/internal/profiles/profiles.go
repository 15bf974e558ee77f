// Package profiles is the directory of bench-serve plans a run can start
// from: <home>/metrics/bench/plans/<name>.json. A profile is only ever named
// by the API; the plan (which holds commands) is written on the machine.
package profiles

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// Errors of Load, for the API to answer 400 with.
var (
	ErrBadName  = errors.New("bad profile name")
	ErrNotFound = errors.New("no such profile")
	ErrInvalid  = errors.New("invalid plan")
)

// Dir is a plans directory.
type Dir struct {
	path string
}

// New returns the plans directory at path (created on Seed).
func New(path string) *Dir { return &Dir{path: path} }

// Path is the directory.
func (d *Dir) Path() string { return d.path }

// FileFor is where the plan of profile name lives (name unchecked).
func (d *Dir) FileFor(name string) string { return filepath.Join(d.path, name+".json") }

// HowToCreate tells a person how to make profile name exist.
func (d *Dir) HowToCreate(name string) string {
	if !bench.ProfileNamePattern.MatchString(name) {
		name = "<name>"
	}
	return fmt.Sprintf("create one with `mlx-metrics bench plan --out %s` (see `mlx-metrics bench plan -h`)", d.FileFor(name))
}

// CheckName reports whether name may name a profile: it matches
// bench.ProfileNamePattern, so it cannot hold a path separator or start with
// a dot, and it resolves inside the directory.
func CheckName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty", ErrBadName)
	case !bench.ProfileNamePattern.MatchString(name):
		return fmt.Errorf("%w %q: a profile is a name matching %s, not a path", ErrBadName, name, bench.ProfileNamePattern)
	}
	return nil
}

// Load reads and validates profile name's plan.
func (d *Dir) Load(name string) (bench.Plan, error) {
	if err := CheckName(name); err != nil {
		return bench.Plan{}, err
	}
	data, err := os.ReadFile(d.FileFor(name))
	if errors.Is(err, fs.ErrNotExist) {
		return bench.Plan{}, fmt.Errorf("%w %q: %s does not exist", ErrNotFound, name, d.FileFor(name))
	}
	if err != nil {
		return bench.Plan{}, err
	}
	return decode(name, data)
}

func decode(name string, data []byte) (bench.Plan, error) {
	var p bench.Plan
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return p, fmt.Errorf("%w %q: %v", ErrInvalid, name, err)
	}
	if err := p.Validate(); err != nil {
		return p, fmt.Errorf("%w %q: %s", ErrInvalid, name, strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	return p, nil
}

// List describes every *.json plan in the directory, sorted by name; a plan
// that does not load is listed with its Error.
func (d *Dir) List() ([]bench.Profile, error) {
	entries, err := os.ReadDir(d.path)
	if errors.Is(err, fs.ErrNotExist) {
		return []bench.Profile{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := []bench.Profile{}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || e.IsDir() || CheckName(name) != nil {
			continue
		}
		p, err := d.Load(name)
		prof := bench.Profile{Name: name, Scope: p.Scope, Description: p.Description, Models: p.Models, Cells: len(p.Cells)}
		if prof.Models == nil {
			prof.Models = []string{}
		}
		if err != nil {
			prof.Error = err.Error()
		}
		out = append(out, prof)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Seed writes each ready plan whose file is absent, so a fresh machine has
// profiles to run; a plan already there (perhaps edited) is left alone.
func (d *Dir) Seed(ready map[string]bench.Plan) error {
	if err := os.MkdirAll(d.path, 0o755); err != nil {
		return err
	}
	for name, p := range ready {
		if err := CheckName(name); err != nil {
			return err
		}
		data, err := json.MarshalIndent(p, "", "  ")
		if err != nil {
			return err
		}
		if err := writeNew(d.FileFor(name), append(data, '\n')); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	return nil
}

// writeNew writes path unless it exists (fs.ErrExist), whole or not at all:
// the data goes to a temporary file that is then linked into place, so a
// crash mid-write cannot leave half a plan that every later Seed would keep.
func writeNew(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.Write(data)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return werr
	}
	return os.Link(tmp.Name(), path)
}
