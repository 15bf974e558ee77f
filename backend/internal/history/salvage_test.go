package history

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestSalvageFlippedByte: a flipped byte in a table file would make part of
// the history vanish from listings without a word; Open finds the damage,
// salvages what still reads into a fresh history, keeps the damaged copy,
// and says so.
func TestSalvageFlippedByte(t *testing.T) {
	const n = 3000
	// Offsets into the one table file: a damaged block of keys (which cut
	// the listing short before salvage), and one inside values.
	for _, off := range []int64{20000, 60000, 100000} {
		t.Run(fmt.Sprint("offset ", off), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "history")
			s, err := Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for i := range n {
				if err := s.Put(entry(i)); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			tables, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
			if len(tables) != 1 {
				t.Fatalf("tables = %v", tables)
			}
			f, err := os.OpenFile(tables[0], os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			b := make([]byte, 1)
			f.ReadAt(b, off)
			f.WriteAt([]byte{b[0] ^ 0xff}, off)
			f.Close()

			s, err = Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			sv := s.Salvaged()
			if sv == nil || sv.Failed != "" || sv.DamagedCopy == "" || sv.Kept < n-100 {
				t.Fatalf("salvage = %+v", sv)
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(dir), sv.DamagedCopy)); err != nil {
				t.Fatalf("damaged copy: %v", err)
			}
			got, problems, err := s.List(0)
			if err != nil || len(got)+len(problems) != sv.Kept {
				t.Fatalf("List = %d entries + %d problems, %v; salvage kept %d", len(got), len(problems), err, sv.Kept)
			}
			// The index was rebuilt: every listed entry is found by id.
			for _, e := range got {
				if _, err := s.Get(e.ID); err != nil {
					t.Fatalf("Get(%s) = %v", e.ID, err)
				}
			}
			s.Close()
			// The salvaged history is whole: the next start finds nothing.
			s, err = Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if sv := s.Salvaged(); sv != nil {
				t.Fatalf("second open salvaged again: %+v", sv)
			}
		})
	}
}
