package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	tests := []struct {
		name     string
		existing string // "" = no file before
		write    func(path string) error
		want     string
		wantErr  error
	}{
		{"replace new", "", func(p string) error { return WriteFile(p, []byte("new"), 0o644) }, "new", nil},
		{"replace existing", "old", func(p string) error { return WriteFile(p, []byte("new"), 0o644) }, "new", nil},
		{"new absent", "", func(p string) error { return WriteNew(p, []byte("new"), 0o644) }, "new", nil},
		{"new present", "old", func(p string) error { return WriteNew(p, []byte("new"), 0o644) }, "old", fs.ErrExist},
		{"no directory", "", func(p string) error { return WriteFile(filepath.Join(p, "x", "y"), nil, 0o644) }, "", fs.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "f.json")
			if tt.existing != "" {
				os.WriteFile(path, []byte(tt.existing), 0o644)
			}
			err := tt.write(path)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if got, _ := os.ReadFile(path); string(got) != tt.want {
				t.Errorf("content = %q, want %q", got, tt.want)
			}
			entries, _ := os.ReadDir(dir)
			if n := len(entries); n > 1 || (tt.want == "" && n > 0) {
				t.Errorf("left behind: %v", entries)
			}
		})
	}
}
