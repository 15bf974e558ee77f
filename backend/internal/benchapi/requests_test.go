package benchapi

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

// A point's requests file read by pages and as CSV: the records a crash
// or a stray line damaged are skipped and counted, the others all come.
func TestJobRequests(t *testing.T) {
	ta := newTestAPI(t, 0)
	j := ta.waitDone(ta.start("ok").ID)
	dir, err := ta.api.jobs.Dir(j.ID)
	if err != nil {
		t.Fatal(err)
	}
	const name = "01-m_tree_a-p01-r1.ndjson"
	var lines []string
	for i := range 3 {
		b, _ := json.Marshal(bench.RequestRecord{Index: i, SentMs: float64(i), TTFTMs: 10, ITLMs: []float64{1, 3}, OutputTokens: 3, MaxTokens: 3, Error: map[bool]string{true: "=HYPERLINK(1)"}[i == 2]})
		lines = append(lines, string(b))
	}
	lines = append(lines[:2], append([]string{"not json"}, lines[2:]...)...)
	file := strings.Join(lines, "\n") + "\n" + `{"i":9,"sentMs":` // cut short by a crash
	if err := os.MkdirAll(filepath.Join(dir, "requests"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "requests", name), []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	path := "/bench/" + j.ID + "/requests/" + name

	var got []int
	skipped, cursor, pages := 0, "0", 0
	for ; cursor != "" && pages < 10; pages++ {
		var p RequestsPage
		ta.do("GET", path+"?limit=2&cursor="+cursor, "").decode(t, &p)
		for _, r := range p.Records {
			var rec bench.RequestRecord
			if err := json.Unmarshal(r, &rec); err != nil {
				t.Fatal(err)
			}
			got = append(got, rec.Index)
		}
		skipped += p.Skipped
		cursor = ""
		if p.Next != nil {
			cursor = fmt.Sprint(*p.Next)
		}
		if p.Size != int64(len(file)) {
			t.Errorf("size %d, want %d", p.Size, len(file))
		}
	}
	if fmt.Sprint(got) != "[0 1 2]" || skipped != 2 || pages != 2 {
		t.Errorf("records %v, %d skipped, in %d pages", got, skipped, pages)
	}

	csv := ta.do("GET", path+"?format=csv", "")
	rows := strings.Split(strings.TrimSpace(string(csv.body)), "\n")
	if csv.status != 200 || len(rows) != 4 || !strings.HasPrefix(rows[0], "i,warmup,") || csv.header.Get(HeaderUnreadable) != "2" {
		t.Fatalf("csv %d %q (%s)", csv.status, rows, csv.header.Get(HeaderUnreadable))
	}
	if !strings.Contains(rows[1], ",2,2,3") || !strings.Contains(rows[3], "'=HYPERLINK(1)") {
		t.Errorf("rows %q: want the gaps' count, mean and max, and the error made inert", rows)
	}

	for _, tc := range []struct {
		path   string
		status int
		msg    string
	}{
		{"/bench/" + j.ID + "/requests/run.json", 400, "is not a load point's requests file"},
		{"/bench/" + j.ID + "/requests/..%2Frun.json", 400, "is not a load point's requests file"},
		{"/bench/" + j.ID + "/requests/01-x-p02-r1.ndjson", 404, "has no requests file"},
		{"/bench/" + j.ID + "/requests/100-x-a2-p02-r1.ndjson", 404, "has no requests file"}, // a 100th cell's, a retry's
		{"/bench/nope/requests/" + name, 404, "no bench-serve job"},
		{path + "?cursor=-1", 400, "cursor"},
		{path + "?cursor=99999", 400, "cursor"},
		{path + "?limit=0", 400, "limit"},
		{path + "?format=xml", 400, "format"},
	} {
		r := ta.do("GET", tc.path, "")
		if r.status != tc.status || !strings.Contains(r.apiError(t).Message, tc.msg) {
			t.Errorf("%s: %d %s", tc.path, r.status, r.body)
		}
		if strings.Contains(string(r.body), dir) {
			t.Errorf("%s: the error names the server's path: %s", tc.path, r.body)
		}
	}
}
