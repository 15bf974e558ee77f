package prom

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestDashboardUsesExportedNames keeps web/grafana's dashboard in step with
// the exporter: every mlx_ name a query uses must be one this package
// exports, and every exported family should be on the dashboard.
func TestDashboardUsesExportedNames(t *testing.T) {
	b, err := os.ReadFile("../../../web/grafana/mlx-metrics-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	descs := make(chan *prometheus.Desc, 64)
	go func() {
		New().Registry().Describe(descs) // every family, with or without series
		close(descs)
	}()
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	for d := range descs {
		exported[fqName.FindStringSubmatch(d.String())[1]] = true
	}

	used := map[string]bool{}
	for _, name := range regexp.MustCompile(`\bmlx_[a-z0-9_]+`).FindAllString(string(b), -1) {
		if name == "mlx_" {
			continue
		}
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(name, suffix); ok && exported[base] {
				name = base
			}
		}
		used[name] = true
		if !exported[name] {
			t.Errorf("the dashboard queries %s, which the exporter does not export", name)
		}
	}
	for name := range exported {
		if !used[name] {
			t.Errorf("exported %s is not on the dashboard", name)
		}
	}
}
