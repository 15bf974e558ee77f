package benchapi

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// The original module's bench, history and profile shapes (protocol.ts of
// the TypeScript module, and its routes.ts wrappers), written down as its
// types say them. Every answer must hold each field with its type: a
// strict superset, this module's additions beside them (docs/api.md).
//
// A spec is a type string ("string", "number", "boolean", "string[]",
// "T|null"), an enum, a shape (an object; a field named "x?" is optional,
// as TypeScript's x?: T), arrayOf a spec, or orNull a spec.
type (
	shape   map[string]any
	arrayOf struct{ elem any }
	orNull  struct{ spec any }
	enum    []string
)

var (
	// BenchJob. status is typed string there; its values are the job
	// service's JobStatus.
	benchJob = shape{
		"id":        "string",
		"status":    enum{"queued", "running", "done", "failed", "zombie"},
		"progress":  "number",
		"message":   "string|null",
		"error":     "string|null",
		"startedAt": "time",
		"endedAt":   orNull{"time"},
	}
	benchCell = shape{
		"key":                           "string",
		"model":                         "string",
		"kind":                          enum{"tree", "reference"},
		"tree?":                         "string",
		"configuration?":                "string",
		"reference?":                    "string",
		"status":                        enum{"measured", "skipped", "failed"},
		"note?":                         "string",
		"decodeTokensPerSecond":         "number|null",
		"ttftColdMs":                    "number|null",
		"prefill1kTokensPerSecond":      "number|null",
		"contextPrefillTokensPerSecond": "number|null",
		"aggregateTokensPerSecond":      "number|null",
		"coldStartMs":                   "number|null",
		"peakRssMB":                     "number|null",
	}
	benchHistoryEntry = shape{
		"id":      "string",
		"profile": "string",
		"scope":   "string",
		// ISO text: the original panel shows startedAt.replace("T", " ").slice(0, 16).
		"startedAt":    "isoTime",
		"finishedAt":   orNull{"isoTime"},
		"durationMs":   "number",
		"complete":     "boolean",
		"exitCode":     "number",
		"problems":     "string[]",
		"machine":      orNull{shape{"chip": "string", "memoryBytes": "number", "host": "string", "os": "string"}},
		"runDirectory": "string",
		"cells":        arrayOf{benchCell},
	}
	benchProfile = shape{
		"name":   "string",
		"path":   "string",
		"scope":  "string|null",
		"models": "string[]",
	}
	// The wrappers of routes.ts.
	historyAnswer  = shape{"runs": arrayOf{benchHistoryEntry}}
	profilesAnswer = shape{"profiles": arrayOf{benchProfile}}
	jobsAnswer     = shape{"jobs": arrayOf{benchJob}}
	errorAnswer    = shape{"error": shape{"message": "string", "type": enum{"invalid_request_error", "server_error"}}}
)

// isoTime is JavaScript's toISOString; "time" is any text Date parses the
// same everywhere (ISO 8601 with a zone).
var isoTime = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

// conform reports where v (decoded JSON) departs from spec.
func conform(path string, v any, spec any) []string {
	switch s := spec.(type) {
	case orNull:
		if v == nil {
			return nil
		}
		return conform(path, v, s.spec)
	case enum:
		str, ok := v.(string)
		if !ok || !slices.Contains(s, str) {
			return []string{fmt.Sprintf("%s: %v is not one of %v", path, v, []string(s))}
		}
		return nil
	case arrayOf:
		arr, ok := v.([]any)
		if !ok {
			return []string{fmt.Sprintf("%s: %T, want an array", path, v)}
		}
		var bad []string
		for i, e := range arr {
			bad = append(bad, conform(fmt.Sprintf("%s[%d]", path, i), e, s.elem)...)
		}
		return bad
	case shape:
		obj, ok := v.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: %T, want an object", path, v)}
		}
		var bad []string
		keys := make([]string, 0, len(s))
		for k := range s {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			name, optional := strings.CutSuffix(k, "?")
			fv, present := obj[name]
			switch {
			case !present && optional:
			case !present:
				bad = append(bad, fmt.Sprintf("%s.%s: missing", path, name))
			case optional && fv == nil:
				bad = append(bad, fmt.Sprintf("%s.%s: null, where the original leaves it out or gives a value", path, name))
			default:
				bad = append(bad, conform(path+"."+name, fv, s[k])...)
			}
		}
		return bad
	case string:
		if base, ok := strings.CutSuffix(s, "|null"); ok {
			if v == nil {
				return nil
			}
			s = base
		}
		ok := false
		switch s {
		case "string":
			_, ok = v.(string)
		case "number":
			_, ok = v.(float64)
		case "boolean":
			_, ok = v.(bool)
		case "string[]":
			arr, isArr := v.([]any)
			ok = isArr
			for _, e := range arr {
				if _, isStr := e.(string); !isStr {
					ok = false
				}
			}
		case "isoTime":
			str, isStr := v.(string)
			ok = isStr && isoTime.MatchString(str)
		case "time":
			str, isStr := v.(string)
			_, err := time.Parse(time.RFC3339Nano, str)
			ok = isStr && err == nil
		default:
			panic("unknown spec " + s)
		}
		if !ok {
			return []string{fmt.Sprintf("%s: %v (%T), want %s", path, v, v, spec)}
		}
		return nil
	}
	panic(fmt.Sprintf("unknown spec %T", spec))
}

// mustConform checks r's status and body against the original's.
func mustConform(t *testing.T, what string, r response, status int, spec any) map[string]any {
	t.Helper()
	if r.status != status {
		t.Fatalf("%s: status %d, want %d: %s", what, r.status, status, r.body)
	}
	var v any
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("%s: not JSON: %v: %s", what, err, r.body)
	}
	for _, bad := range conform(what, v, spec) {
		t.Errorf("%s", bad)
	}
	obj, _ := v.(map[string]any)
	return obj
}

// The checker itself: it finds what it must.
func TestConform(t *testing.T) {
	tests := []struct {
		json string
		spec any
		bad  int
	}{
		{`{"id":"a","status":"done","progress":1,"message":null,"error":null,"startedAt":"2026-09-29T12:00:00.000Z","endedAt":null,"extra":1}`, benchJob, 0},
		{`{"id":"a","status":"cancelled","progress":1,"message":"","error":null,"startedAt":"2026-09-29T12:00:00.000Z","endedAt":null}`, benchJob, 1},
		{`{"id":"a","status":"done","progress":1,"error":null,"startedAt":1790000000000,"endedAt":null}`, benchJob, 2},
		{`{"runs":[{"startedAt":"2026-09-29 12:00"}]}`, historyAnswer, 12},
		{`{"name":"p","path":"/x.json","scope":null,"models":["m",1]}`, benchProfile, 1},
		{`{"key":"k","model":"m","kind":"tree","configuration":null,"status":"measured","decodeTokensPerSecond":1,"ttftColdMs":null,"prefill1kTokensPerSecond":null,"contextPrefillTokensPerSecond":null,"aggregateTokensPerSecond":null,"coldStartMs":null,"peakRssMB":null}`, benchCell, 1},
	}
	for i, tt := range tests {
		var v any
		if err := json.Unmarshal([]byte(tt.json), &v); err != nil {
			t.Fatal(err)
		}
		if bad := conform(fmt.Sprint(i), v, tt.spec); len(bad) != tt.bad {
			t.Errorf("%d: %d departures, want %d: %q", i, len(bad), tt.bad, bad)
		}
	}
}

// Every job route over every state a job can be in: queued, running,
// cancelling, cancelled (failed there), done and failed, each answer the
// original's shape and status; and the error answers.
func TestJobRoutesContract(t *testing.T) {
	ta := newTestAPI(t, 0)
	mustConform(t, "GET /bench, none", ta.do("GET", "/bench", ""), 200, jobsAnswer)

	running := mustConform(t, "POST /bench (running)", ta.do("POST", "/bench", `{"profile":"block"}`), 202, benchJob)
	a := running["id"].(string)
	ta.waitCell(a)
	queued := mustConform(t, "POST /bench (queued)", ta.do("POST", "/bench", `{"profile":"ok"}`), 202, benchJob)
	b := queued["id"].(string)
	if queued["status"] != "queued" {
		t.Fatalf("second job: %v, want queued", queued["status"])
	}
	list := mustConform(t, "GET /bench, running and queued", ta.do("GET", "/bench", ""), 200, jobsAnswer)
	statuses := map[string]bool{}
	for _, j := range list["jobs"].([]any) {
		statuses[j.(map[string]any)["status"].(string)] = true
	}
	if !statuses["running"] || !statuses["queued"] {
		t.Fatalf("jobs: %v, want one running and one queued", statuses)
	}
	mustConform(t, "GET /bench/:id (running)", ta.do("GET", "/bench/"+a, ""), 200, benchJob)
	mustConform(t, "GET /bench/:id (queued)", ta.do("GET", "/bench/"+b, ""), 200, benchJob)

	// Cancelled while queued: failed, as the original ends a cancelled job.
	c := mustConform(t, "DELETE /bench/:id (queued)", ta.do("DELETE", "/bench/"+b, ""), 200, benchJob)
	if c["status"] != "failed" || c["cancelled"] != true || c["error"] == nil || c["endedAt"] == nil {
		t.Fatalf("a cancelled queued job: %v", c)
	}
	// Cancelled while running: 200 while it stops, then failed.
	mustConform(t, "DELETE /bench/:id (running)", ta.do("DELETE", "/bench/"+a, ""), 200, benchJob)
	<-ta.clock.Armed
	ta.waitDone(a)
	if j := mustConform(t, "GET /bench/:id (cancelled)", ta.do("GET", "/bench/"+a, ""), 200, benchJob); j["status"] != "failed" {
		t.Fatalf("a cancelled running job: %v", j)
	}

	done := ta.start("ok")
	ta.waitDone(done.ID)
	failed := ta.start("incomplete")
	ta.waitDone(failed.ID)
	if j := mustConform(t, "GET /bench/:id (done)", ta.do("GET", "/bench/"+done.ID, ""), 200, benchJob); j["status"] != "done" || j["endedAt"] == nil {
		t.Fatalf("done: %v", j)
	}
	if j := mustConform(t, "GET /bench/:id (failed)", ta.do("GET", "/bench/"+failed.ID, ""), 200, benchJob); j["status"] != "failed" || j["error"] == nil {
		t.Fatalf("failed: %v", j)
	}
	// Cancelling an ended job is no error there: 200, the job untouched.
	if j := mustConform(t, "DELETE /bench/:id (done)", ta.do("DELETE", "/bench/"+done.ID, ""), 200, benchJob); j["status"] != "done" {
		t.Fatalf("DELETE of a done job changed it: %v", j)
	}
	mustConform(t, "GET /bench, ended", ta.do("GET", "/bench", ""), 200, jobsAnswer)

	for _, tt := range []struct {
		method, path, body string
		status             int
	}{
		{"GET", "/bench/nope", "", 404},
		{"DELETE", "/bench/nope", "", 404},
		{"POST", "/bench", `not json`, 400},
		{"POST", "/bench", `[]`, 400},
		{"POST", "/bench", `{"profile":1}`, 400},
		{"POST", "/bench", `{"plan":"/etc/x.json"}`, 400},
		{"POST", "/bench", `{"profile":"../x"}`, 400},
		{"POST", "/bench", `{"profile":"absent"}`, 400},
	} {
		mustConform(t, tt.method+" "+tt.path+" "+tt.body, ta.do(tt.method, tt.path, tt.body), tt.status, errorAnswer)
	}
}

// GET /bench/profiles: the original's {profiles}, a broken plan listed too.
func TestProfilesContract(t *testing.T) {
	ta := newTestAPI(t, 0)
	got := mustConform(t, "GET /bench/profiles", ta.do("GET", "/bench/profiles", ""), 200, profilesAnswer)
	if n := len(got["profiles"].([]any)); n != 4 {
		t.Fatalf("%d profiles, want 4", n)
	}
}

// GET /history and /history/:id over an empty, a full and a damaged
// history.
func TestHistoryRoutesContract(t *testing.T) {
	t.Run("empty", func(t *testing.T) {
		ta := newTestAPI(t, 0)
		got := mustConform(t, "GET /history", ta.do("GET", "/history", ""), 200, historyAnswer)
		if len(got["runs"].([]any)) != 0 {
			t.Fatalf("runs: %v", got["runs"])
		}
		mustConform(t, "GET /history/:id", ta.do("GET", "/history/nope", ""), 404, errorAnswer)
	})
	t.Run("full", func(t *testing.T) {
		ta := newTestAPI(t, 0)
		for _, p := range []string{"ok", "incomplete"} {
			ta.waitDone(ta.start(p).ID)
		}
		got := mustConform(t, "GET /history", ta.do("GET", "/history", ""), 200, historyAnswer)
		runs := got["runs"].([]any)
		if len(runs) != 2 {
			t.Fatalf("%d runs, want 2", len(runs))
		}
		for _, r := range runs {
			id := r.(map[string]any)["id"].(string)
			mustConform(t, "GET /history/"+id, ta.do("GET", "/history/"+id, ""), 200, benchHistoryEntry)
		}
		for _, q := range []string{"?limit=1", "?limit=0", "?limit=-3", "?limit=100000"} {
			got := mustConform(t, "GET /history"+q, ta.do("GET", "/history"+q, ""), 200, historyAnswer)
			if want := map[string]int{"?limit=1": 1, "?limit=0": 1, "?limit=-3": 1, "?limit=100000": 2}[q]; len(got["runs"].([]any)) != want {
				t.Errorf("GET /history%s: %d runs, want %d", q, len(got["runs"].([]any)), want)
			}
		}
	})
	t.Run("damaged", func(t *testing.T) {
		ta := newHistoryAPI(t, 5, map[int]string{1: "{not json", 3: `{"id":"someone-else"}`})
		got := mustConform(t, "GET /history", ta.do("GET", "/history", ""), 200, historyAnswer)
		if len(got["runs"].([]any)) != 3 {
			t.Fatalf("%d runs, want the 3 readable", len(got["runs"].([]any)))
		}
		mustConform(t, "GET /history/:id (damaged)", ta.do("GET", "/history/"+histID(1), ""), 404, errorAnswer)
		mustConform(t, "GET /history/:id (readable)", ta.do("GET", "/history/"+histID(0), ""), 200, benchHistoryEntry)
	})
}
