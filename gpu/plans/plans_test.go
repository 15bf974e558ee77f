package plans

import (
	"testing"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

func TestReadyPlansValidate(t *testing.T) {
	ready := Ready()
	for _, name := range []string{"smoke", "standard"} {
		p, ok := ready[name]
		if !ok {
			t.Fatalf("Ready() lacks %q", name)
		}
		if !bench.ProfileNamePattern.MatchString(name) {
			t.Errorf("%q is not a valid profile name", name)
		}
		if err := p.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		for _, c := range p.Cells {
			if c.Server.Argv[0] != bench.SelfPlaceholder || c.Server.Argv[1] != "engine" {
				t.Errorf("%s: cell %s does not start the reference engine: %v", name, c.KeyOrDefault(), c.Server.Argv)
			}
		}
	}
}
