// Package profiles is the directory of bench-serve plans a run can start
// from: <home>/metrics/bench/plans/<name>.json. A profile is only ever named
// by the API; the plan (which holds commands) is written on the machine.
package profiles

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/mlx-bun/mlx-metrics/backend/internal/redact"
	"github.com/mlx-bun/mlx-metrics/shared/atomicfile"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
	"github.com/mlx-bun/mlx-metrics/shared/strictjson"
)

// Errors of Load, for the API to answer 400 with.
var (
	ErrBadName  = errors.New("bad profile name")
	ErrNotFound = errors.New("no such profile")
	ErrInvalid  = errors.New("invalid plan")
)

// MaxNameLen bounds a profile name: with ".json" and the temporary file's
// affixes it stays well inside a file name's 255 bytes.
const MaxNameLen = 128

// ShownDir is how messages to clients name the plans directory: by its
// place under the home, never by the server's absolute path.
const ShownDir = "<home>/metrics/bench/plans"

// Dir is a plans directory.
type Dir struct {
	path string
	// writeNew is atomicfile.WriteNew; tests make it fail as a full disk.
	writeNew func(path string, data []byte, perm os.FileMode) error
}

// New returns the plans directory at path (created on Seed).
func New(path string) *Dir { return &Dir{path: path, writeNew: atomicfile.WriteNew} }

// Path is the directory.
func (d *Dir) Path() string { return d.path }

// FileFor is where the plan of profile name lives (name unchecked).
func (d *Dir) FileFor(name string) string { return filepath.Join(d.path, name+".json") }

// ShownFile is FileFor as messages to clients say it (see ShownDir).
func ShownFile(name string) string { return ShownDir + "/" + name + ".json" }

// HowToCreate tells a person how to make profile name exist.
func (d *Dir) HowToCreate(name string) string {
	if CheckName(name) != nil {
		name = "<name>"
	}
	return fmt.Sprintf("create one with `mlx-metrics bench plan --out %s` (see `mlx-metrics bench plan -h`)", ShownFile(name))
}

// Echo is name as an error message may quote it: cut to 64 bytes.
func Echo(name string) string {
	const max = 64
	if len(name) <= max {
		return fmt.Sprintf("%q", name)
	}
	i := max
	for i > 0 && !utf8.RuneStart(name[i]) {
		i--
	}
	return fmt.Sprintf("%q… (%d bytes)", name[:i], len(name))
}

// CheckName reports whether name may name a profile: it matches
// bench.ProfileNamePattern, so it cannot hold a path separator or start with
// a dot, and it resolves inside the directory.
func CheckName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty", ErrBadName)
	case len(name) > MaxNameLen:
		return fmt.Errorf("%w %s: longer than %d bytes", ErrBadName, Echo(name), MaxNameLen)
	case !bench.ProfileNamePattern.MatchString(name):
		return fmt.Errorf("%w %s: a profile is a name matching %s, not a path", ErrBadName, Echo(name), bench.ProfileNamePattern)
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
		return bench.Plan{}, fmt.Errorf("%w %q: %s does not exist (%s)", ErrNotFound, name, ShownFile(name), d.existing())
	}
	if err != nil {
		return bench.Plan{}, fmt.Errorf("read profile %q: %w", name, redact.Err(err))
	}
	return decode(name, data)
}

// maxNamed bounds the profiles an error names.
const maxNamed = 12

// existing says which profiles the directory holds, for an error about
// one it does not: at most maxNamed of them, sorted.
func (d *Dir) existing() string {
	entries, _ := os.ReadDir(d.path)
	names := planNames(entries)
	sort.Strings(names)
	switch {
	case len(names) == 0:
		return "there are no profiles"
	case len(names) > maxNamed:
		return fmt.Sprintf("there are %d, among them %s", len(names), strings.Join(names[:maxNamed], ", "))
	}
	return "there are " + strings.Join(names, ", ")
}

func decode(name string, data []byte) (bench.Plan, error) {
	if bench.IsOriginalPlan(data) {
		return decodeOriginal(name, data)
	}
	var p bench.Plan
	if err := strictjson.Decode(data, &p, true); err != nil {
		return p, fmt.Errorf("%w %q: %v", ErrInvalid, name, err)
	}
	if err := p.Validate(); err != nil {
		return p, fmt.Errorf("%w %q: %s", ErrInvalid, name, strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	return p, nil
}

// decodeOriginal reads a plan of the original module's runner, left in
// the plans directory by an upgrade in place: run as it maps, or described
// with why it cannot be run here.
func decodeOriginal(name string, data []byte) (bench.Plan, error) {
	var o bench.OriginalPlan
	if err := strictjson.Decode(data, &o, false); err != nil {
		return bench.Plan{}, fmt.Errorf("%w %q: the original runner's plan, unreadable: %v", ErrInvalid, name, err)
	}
	p, err := o.Plan()
	if err != nil {
		return p, fmt.Errorf("%w %q: the original runner's plan, which this runner cannot run as written: %v", ErrInvalid, name, err)
	}
	if err := p.Validate(); err != nil {
		return p, fmt.Errorf("%w %q: the original runner's plan, as this runner reads it: %s", ErrInvalid, name, strings.ReplaceAll(err.Error(), "\n", "; "))
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
	for _, name := range planNames(entries) {
		p, err := d.Load(name)
		prof := bench.Profile{Name: name, Path: d.FileFor(name), Scope: p.Scope, Description: p.Description, Models: p.Models, Cells: len(p.Cells)}
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

// planNames are the profiles among a directory's entries: its *.json
// files whose names are profile names.
func planNames(entries []os.DirEntry) []string {
	var names []string
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".json"); ok && !e.IsDir() && CheckName(name) == nil {
			names = append(names, name)
		}
	}
	return names
}

// Seed writes each ready plan whose file is absent, so a fresh machine has
// profiles to run; a plan already there (perhaps edited) is left alone, and
// when every one is there nothing is written at all (so a full disk does not
// stop a start).
func (d *Dir) Seed(ready map[string]bench.Plan) error {
	var missing []string
	for name := range ready {
		if err := CheckName(name); err != nil {
			return err
		}
		if _, err := os.Lstat(d.FileFor(name)); errors.Is(err, fs.ErrNotExist) {
			missing = append(missing, name)
		} else if err != nil {
			return fmt.Errorf("profile %q: %w", name, redact.Err(err))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if err := os.MkdirAll(d.path, 0o755); err != nil {
		return fmt.Errorf("create the plans directory: %w", redact.Err(err))
	}
	sort.Strings(missing)
	for _, name := range missing {
		data, err := json.MarshalIndent(ready[name], "", "  ")
		if err != nil {
			return err
		}
		if err := d.writeNew(d.FileFor(name), append(data, '\n'), 0o644); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("seed profile %q: %w", name, redact.Err(err))
		}
	}
	return nil
}
