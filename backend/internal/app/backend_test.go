package app

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mlx-bun/mlx-metrics/backend/internal/access"
	"github.com/mlx-bun/mlx-metrics/backend/internal/history"
	"github.com/mlx-bun/mlx-metrics/backend/internal/homelock"
	"github.com/mlx-bun/mlx-metrics/backend/internal/jobs/jobstest"
	"github.com/mlx-bun/mlx-metrics/backend/internal/logging"
	"github.com/mlx-bun/mlx-metrics/shared/bench"
)

func TestWarnExposed(t *testing.T) {
	tests := []struct {
		addr, token string
		origins     []string
		proxied     bool   // --proxy-to is set
		proxyToken  string // --proxy-token
		warn        string // in the warning; empty: none
	}{
		{addr: "127.0.0.1:7878"},
		{addr: "[::1]:7878"},
		{addr: "localhost:7878"},
		{addr: ":7878", warn: "beyond loopback"},
		{addr: "0.0.0.0:7878", warn: "beyond loopback"},
		{addr: "192.168.1.5:7878", warn: "beyond loopback"},
		{addr: "0.0.0.0:7878", token: "s3cret"},
		{addr: "127.0.0.1:7878", origins: []string{"*"}, warn: "--cors-origins '*' with no --token"},
		{addr: "127.0.0.1:7878", origins: []string{"https://host.example", "*"}, warn: "any web page"},
		{addr: "127.0.0.1:7878", origins: []string{"*"}, token: "s3cret"},
		{addr: "127.0.0.1:7878", origins: []string{"https://host.example"}},
		{addr: "127.0.0.1:7878", proxied: true},
		{addr: "0.0.0.0:7878", token: "s3cret", proxied: true},
		{addr: "0.0.0.0:7878", proxyToken: "px", token: "s3cret", proxied: true},
		{addr: "0.0.0.0:7878", proxyToken: "px", proxied: true, warn: "may post events"},
		{addr: "0.0.0.0:7878", proxied: true, warn: "the proxy at /v1 is open on 0.0.0.0:7878"},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		loopback := access.IsLoopbackAddr(context.Background(), net.DefaultResolver, tt.addr)
		warnExposed(slog.New(slog.NewTextHandler(&out, nil)), tt.addr, loopback, access.New(access.Options{Token: tt.token, Origins: tt.origins,
			ProxyToken: cmp.Or(tt.proxyToken, tt.token)}), tt.proxied)
		got := out.String()
		if tt.warn == "" && got != "" || tt.warn != "" && !(strings.Contains(got, "WARNING") && strings.Contains(got, tt.warn)) {
			t.Errorf("%s token %q origins %q: warned %q, want %q", tt.addr, tt.token, tt.origins, got, tt.warn)
		}
	}
}

// startConfig is a Config Start accepts: loopback on a free port, a fresh
// home, serve's defaults.
func startConfig(t *testing.T) Config {
	return Config{
		Addr: "127.0.0.1:0", Home: t.TempDir(), Device: "no GPU found",
		Live:   LiveConfig{Window: 100, Recent: 10, Series: 100},
		Bench:  benchConfig(),
		Export: ExportConfig{ScrapeInterval: time.Second},
	}
}

// Start serves every part on the bound address and Close ends them; a
// refused value is a *ConfigError and a taken address a *ListenError, both
// said before any part starts (no storage made), and what had started is
// closed again (the history opens again at once).
func TestStart(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	var ce *ConfigError
	var le *ListenError
	var inUse *homelock.InUseError
	// A home another process holds; its lock made <held>/metrics.
	held := t.TempDir()
	holder, err := homelock.Acquire(held, "serve")
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release()
	tests := []struct {
		name string
		edit func(*Config)
		as   any // the error's type; nil: it starts
	}{
		{"defaults", func(*Config) {}, nil},
		{"bad origin", func(c *Config) { c.CORSOrigins = "ftp://host" }, &ce},
		{"bad window", func(c *Config) { c.Live.Window = 0 }, &ce},
		{"bad grace", func(c *Config) { c.Bench.Grace = 0 }, &ce},
		{"bad scrape interval", func(c *Config) { c.Export.ScrapeInterval = 0 }, &ce},
		{"scrape interval below the bound", func(c *Config) { c.Export.ScrapeInterval = time.Nanosecond }, &ce},
		{"bad traffic rate", func(c *Config) { c.ReferenceEngine = ReferenceEngineConfig{Enabled: true} }, &ce},
		// Refused before the port is bound, not after "serving on".
		{"bad traffic rate, address taken", func(c *Config) {
			c.ReferenceEngine = ReferenceEngineConfig{Enabled: true}
			c.Addr = taken.Addr().String()
		}, &ce},
		{"address taken", func(c *Config) { c.Addr = taken.Addr().String() }, &le},
		{"home in use", func(c *Config) { c.Home = held }, &inUse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := startConfig(t)
			tt.edit(&cfg)
			b, err := Start(context.Background(), cfg)
			if tt.as != nil {
				if b != nil || !errors.As(err, tt.as) {
					t.Fatalf("Start = %v, %v; want an error as %T", b, err, tt.as)
				}
				// A refused value, a taken port or a home in use is said
				// before any part starts: no storage made (the holder's
				// lock made the held home's metrics/), no recovery run, no
				// follower started.
				made := filepath.Join(cfg.Home, "metrics")
				if cfg.Home == held {
					made = filepath.Join(made, "history")
				}
				if _, err := os.Stat(made); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("a refusal left storage made: %v", err)
				}
				if h, err := history.Open(filepath.Join(cfg.Home, "metrics", "history"), history.Options{}); err != nil {
					t.Fatalf("the history was left open: %v", err)
				} else {
					h.Close()
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			res, err := http.Get("http://" + b.Addr().String() + "/healthz")
			if err != nil {
				t.Fatal(err)
			}
			var report map[string]any
			json.NewDecoder(res.Body).Decode(&report)
			res.Body.Close()
			for _, k := range []string{"bus", "refused", "ingest", "store", "stream", "gpu", "storage"} {
				if _, ok := report[k]; !ok {
					t.Errorf("/healthz lacks %q: %v", k, report)
				}
			}
			if err := b.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			select {
			case <-b.Done():
			default:
				t.Fatal("the server still serves after Close")
			}
		})
	}
}

func TestLogErrors(t *testing.T) {
	var out []string
	log := logging.Func(func(level slog.Level, msg string) { out = append(out, level.String()+" "+msg) })
	LogErrors(log, errors.Join(errors.New("a"), errors.Join(errors.New("b"), nil, errors.New("c"))))
	LogErrors(log, nil)
	if got, want := strings.Join(out, "\n"), "ERROR a\nERROR b\nERROR c"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// The panel's address in the log is one a browser can open.
func TestBrowsable(t *testing.T) {
	tests := []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.IPv6unspecified, Port: 8080}, "127.0.0.1:8080"},
		{&net.TCPAddr{IP: net.IPv4zero, Port: 8080}, "127.0.0.1:8080"},
		{&net.TCPAddr{Port: 8080}, "127.0.0.1:8080"},
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9}, "127.0.0.1:9"},
		{&net.TCPAddr{IP: net.ParseIP("::1"), Port: 9}, "[::1]:9"},
		{&net.TCPAddr{IP: net.IPv4(192, 168, 1, 2), Port: 80}, "192.168.1.2:80"},
	}
	for _, tt := range tests {
		if got := browsable(tt.addr); got != tt.want {
			t.Errorf("browsable(%v) = %q, want %q", tt.addr, got, tt.want)
		}
	}
}

// GET /metrics answers a scraper the exposition (Prometheus scrapes
// /metrics by habit) and a browser the panel's page; both say they vary
// by Accept. (No event has come, so the exposition has no series.)
func TestMetricsPathNegotiates(t *testing.T) {
	b, err := Start(context.Background(), startConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	tests := []struct {
		accept   string
		wantType string
		wantBody string
	}{
		{"application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1", "application/openmetrics-text", "# EOF"},
		{"text/plain;version=0.0.4;q=1,*/*;q=0.1", "text/plain", ""},
		{"*/*", "text/plain", ""},
		{"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", "text/html", "<"},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest("GET", "http://"+b.Addr().String()+"/metrics", nil)
		req.Header.Set("Accept", tt.accept)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, tt.wantType) || !strings.Contains(string(body), tt.wantBody) {
			t.Errorf("Accept %q: %d %s, want %s with %q:\n%.200s", tt.accept, res.StatusCode, ct, tt.wantType, tt.wantBody, body)
		}
		if !strings.Contains(res.Header.Get("Vary"), "Accept") {
			t.Errorf("Accept %q: Vary %q lacks Accept", tt.accept, res.Header.Get("Vary"))
		}
	}
}

// A relative --home is resolved once, at start: the runner starts in its
// run directory, where a plan path relative to serve's directory named
// nothing (every bench job exited 2, "plan.json: no such file").
func TestRelativeHome(t *testing.T) {
	t.Chdir(t.TempDir())
	cfg := startConfig(t)
	cfg.Home = filepath.Join("rel", "home")
	b, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	data, _ := json.Marshal(jobstest.Plan("ok", 2))
	if err := os.WriteFile(filepath.Join("rel", "home", "metrics", "bench", "plans", "ok.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	base := "http://" + b.Addr().String() + "/api/metrics"
	res, err := http.Post(base+"/bench", "application/json", strings.NewReader(`{"profile":"ok"}`))
	if err != nil {
		t.Fatal(err)
	}
	var v bench.JobView
	json.NewDecoder(res.Body).Decode(&v)
	res.Body.Close()
	if res.StatusCode != 202 {
		t.Fatalf("POST /bench: %d %+v", res.StatusCode, v)
	}
	deadline := time.Now().Add(time.Minute) // a safeguard against a hang
	for v.Status == bench.StatusQueued || v.Status == bench.StatusRunning {
		if time.Now().After(deadline) {
			t.Fatalf("job %s did not end: %+v", v.ID, v)
		}
		time.Sleep(20 * time.Millisecond) // polls the job; not synchronisation
		res, err := http.Get(base + "/bench/" + v.ID)
		if err != nil {
			t.Fatal(err)
		}
		json.NewDecoder(res.Body).Decode(&v)
		res.Body.Close()
	}
	if v.Status != bench.StatusDone {
		t.Fatalf("job = %+v (error %v), want done", v, orEmpty(v.Error))
	}
}

func orEmpty(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
