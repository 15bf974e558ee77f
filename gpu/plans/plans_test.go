package plans

import (
	"strings"
	"testing"

	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

func TestReadyPlansValidate(t *testing.T) {
	ready := Ready()
	for _, name := range []string{"smoke", "standard", "ollama-parallel"} {
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
		if name == "ollama-parallel" {
			if pairs := p.Pairs(); len(pairs) != 1 || p.Cells[0].Server.Env["OLLAMA_NUM_PARALLEL"] != "4" || p.Cells[1].Server.Env["OLLAMA_NUM_PARALLEL"] != "1" {
				t.Errorf("%s: want four slots against one, a pair: %v", name, pairs)
			}
			continue
		}
		for _, c := range p.Cells {
			if c.Server.Argv[0] != bench.SelfPlaceholder || c.Server.Argv[1] != "engine" {
				t.Errorf("%s: cell %s does not start the reference engine: %v", name, c.KeyOrDefault(), c.Server.Argv)
			}
		}
	}
}

func TestFromOptions(t *testing.T) {
	tests := []struct {
		name      string
		o         Options
		wantErr   string
		wantCells int
		check     func(t *testing.T, p bench.Plan)
	}{
		{"defaults: the reference engine", Options{}, "", 1, func(t *testing.T, p bench.Plan) {
			c := p.Cells[0]
			if c.Server.Argv[0] != bench.SelfPlaceholder || c.Server.Argv[5] != ReferenceModel || c.Server.ReadyURL != "http://127.0.0.1:{port}/health" {
				t.Errorf("cell %+v", c)
			}
		}},
		{"mlx_lm per model", Options{
			Models: []string{"mlx-community/A-4bit", "mlx-community/B-4bit"},
			Argv:   []string{"python", "-m", "mlx_lm.server", "--model", "{model}", "--port", "{port}"},
		}, "", 2, func(t *testing.T, p bench.Plan) {
			if p.Cells[1].Server.Argv[4] != "mlx-community/B-4bit" || p.Cells[1].Server.ReadyURL != "http://127.0.0.1:{port}/v1/models" {
				t.Errorf("cell %+v", p.Cells[1])
			}
		}},
		{"readiness follows the base URL", Options{
			Argv:    []string{"llama-server", "--port", "{port}"},
			BaseURL: "http://127.0.0.1:{port}/openai/v1/",
		}, "", 1, func(t *testing.T, p bench.Plan) {
			if got := p.Cells[0].Server.ReadyURL; got != "http://127.0.0.1:{port}/openai/v1/models" {
				t.Errorf("readyUrl %q, want the base URL's /models", got)
			}
		}},
		{"attach to a running server", Options{
			Attach: true, BaseURL: "http://10.0.0.5:8080/v1/", Models: []string{"a", "b"},
		}, "", 2, func(t *testing.T, p bench.Plan) {
			s := p.Cells[1].Server
			if !s.Attach || len(s.Argv) != 0 || s.BaseURL != "http://10.0.0.5:8080/v1" || s.ReadyURL != "" || p.Cells[1].Model != "b" {
				t.Errorf("cell %+v", p.Cells[1])
			}
		}},
		{"attach with a ready url", Options{Attach: true, BaseURL: "http://127.0.0.1:8080/v1", ReadyURL: "http://127.0.0.1:8080/ping"}, "", 1, func(t *testing.T, p bench.Plan) {
			if s := p.Cells[0].Server; s.ReadyURL != "http://127.0.0.1:8080/ping" {
				t.Errorf("readyUrl %q", s.ReadyURL)
			}
		}},
		{"attach needs its port written", Options{Attach: true, BaseURL: "http://127.0.0.1:{port}/v1"}, "write the port", 0, nil},
		{"attach without a url", Options{Attach: true}, "cells[0].server.baseUrl: missing", 0, nil},
		{"attach with a command", Options{Attach: true, BaseURL: "http://127.0.0.1:8080/v1", Argv: []string{"sleep", "3600"}}, "cells[0].server.argv", 0, nil},
		{"bad kind", Options{Kind: "candidate"}, "cells[0].kind", 0, nil},
		{"bad scope", Options{Scope: "some"}, "scope", 0, nil},
		{"bad url", Options{BaseURL: "localhost:8080"}, "baseUrl", 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := FromOptions(tt.o)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Cells) != tt.wantCells {
				t.Fatalf("%d cells", len(p.Cells))
			}
			tt.check(t, p)
		})
	}
}
