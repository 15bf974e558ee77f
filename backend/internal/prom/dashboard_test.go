package prom

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mlx-bun/mlx-metrics/shared/tooltest"
)

const dashboardPath = "../../../web/grafana/mlx-metrics-dashboard.json"

// exportedFamilies is every family the exporter registers, with or without
// series, and its label names.
func exportedFamilies(t *testing.T) map[string][]string {
	t.Helper()
	descs := make(chan *prometheus.Desc, 64)
	go func() {
		New(Options{}).Registry().Describe(descs)
		close(descs)
	}()
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	labels := regexp.MustCompile(`variableLabels: \{([^}]*)\}`)
	constLabels := regexp.MustCompile(`constLabels: \{([^}]*)\}`)
	constName := regexp.MustCompile(`(\w+)=`)
	out := map[string][]string{}
	for d := range descs {
		s := d.String()
		var names []string
		if m := labels.FindStringSubmatch(s); m != nil && m[1] != "" {
			names = strings.Split(m[1], ",")
		}
		if m := constLabels.FindStringSubmatch(s); m != nil {
			for _, c := range constName.FindAllStringSubmatch(m[1], -1) {
				names = append(names, c[1])
			}
		}
		out[fqName.FindStringSubmatch(s)[1]] = names
	}
	return out
}

// dashboardExprs is every PromQL expression of the dashboard's panels.
func dashboardExprs(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	var exprs []string
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			if tg.Expr != "" {
				exprs = append(exprs, tg.Expr)
			}
		}
	}
	if len(exprs) == 0 {
		t.Fatal("the dashboard has no queries")
	}
	return exprs
}

// TestDashboardUsesExportedNames keeps web/grafana's dashboard in step with
// the exporter: every mlx_ name a query uses must be one this package
// exports, every exported family should be on the dashboard, and every
// label a query matches or groups by must be one the exporter writes (or
// one Prometheus adds).
func TestDashboardUsesExportedNames(t *testing.T) {
	b, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	exported := exportedFamilies(t)
	labels := map[string]bool{"instance": true, "job": true, "le": true, "__name__": true}
	for _, ls := range exported {
		for _, l := range ls {
			labels[l] = true
		}
	}

	used := map[string]bool{}
	for _, name := range regexp.MustCompile(`\bmlx_[a-z0-9_]+`).FindAllString(string(b), -1) {
		if name == "mlx_" {
			continue
		}
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(name, suffix); ok && exported[base] != nil {
				name = base
			}
		}
		used[name] = true
		if _, ok := exported[name]; !ok {
			t.Errorf("the dashboard queries %s, which the exporter does not export", name)
		}
	}
	for name := range exported {
		if !used[name] {
			t.Errorf("exported %s is not on the dashboard", name)
		}
	}

	// Label names in matchers ({model_name=~"…"}), in by (…) and in
	// legends ({{model_name}}), and the template variables' label_values.
	matcher := regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)\s*\\?"`)
	grouping := regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
	legend := regexp.MustCompile(`\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}`)
	labelValues := regexp.MustCompile(`label_values\([^)]*\},\s*([a-zA-Z_][a-zA-Z0-9_]*)\)`)
	check := func(name, where string) {
		if !labels[name] {
			t.Errorf("the dashboard uses label %q (%s), which no exported family carries", name, where)
		}
	}
	text := string(b)
	for _, m := range matcher.FindAllStringSubmatch(text, -1) {
		check(m[1], "matcher")
	}
	for _, m := range grouping.FindAllStringSubmatch(text, -1) {
		for _, l := range strings.Split(m[1], ",") {
			check(strings.TrimSpace(l), "grouping")
		}
	}
	for _, m := range legend.FindAllStringSubmatch(text, -1) {
		check(m[1], "legend")
	}
	for _, m := range labelValues.FindAllStringSubmatch(text, -1) {
		check(m[1], "label_values")
	}
}

// TestDashboardQueriesParse has promtool parse every panel query, with the
// Grafana variables filled in, as recording rules, where promtool is
// installed (scripts/setup installs Debian's prometheus); see lookTool.
func TestDashboardQueriesParse(t *testing.T) {
	promtool := tooltest.Look(t, "promtool")
	vars := strings.NewReplacer("$__rate_interval", "1m", "$instance", ".*", "$model", ".*")
	var rules strings.Builder
	rules.WriteString("groups:\n- name: dashboard\n  rules:\n")
	for i, e := range dashboardExprs(t) {
		q, _ := json.Marshal(vars.Replace(e)) // a JSON string is a YAML string
		fmt.Fprintf(&rules, "  - record: dashboard:query_%d\n    expr: %s\n", i, q)
	}
	path := filepath.Join(t.TempDir(), "dashboard.rules.yml")
	if err := os.WriteFile(path, []byte(rules.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "rules", path).CombinedOutput(); err != nil {
		t.Errorf("promtool check rules: %v\n%s", err, out)
	}
}
