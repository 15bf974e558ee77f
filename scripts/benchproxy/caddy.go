package main

// Caddy, the Go reverse proxy a user would put in front of an engine
// instead of this proxy: reverse_proxy with flush_interval -1 (every write
// flushed at once) and HTTP/1.1 keep-alive to the upstream, as many idle
// connections kept as nginx keeps, on a loopback port, from a generated
// Caddyfile in a throw-away directory (no admin endpoint, no automatic
// HTTPS). It is run here and stopped with the run, never as a service. One
// process: its CPU, all threads, is one pid's (/proc/PID/stat sums a
// process's threads). It meters nothing; the proxy meters every request.
//
// buffer_requests: Debian's Caddy (2.6.2, Go 1.19) otherwise cuts some
// streamed answers to POSTs after their first event ("reading from
// backend: use of closed network connection"; Caddy issue 5431): when the
// handler writes the answer's header, Go's server reads the rest of an
// unread request body and closes it, while the Transport's writer, the
// body sent, reads it once more for bytes past its length; that read
// fails, and the writer closes the upstream connection under the answer.
// Read whole first (a few hundred bytes here), the body is Caddy's own
// buffer. TestCaddyRelaysStreams fails in about half its runs without it.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

const caddyfile = `{
	admin off
	auto_https off
	grace_period 2s
	storage file_system %[1]s/data
}

http://:%[3]s {
	bind %[2]s
	reverse_proxy %[4]s {
		flush_interval -1
		buffer_requests
		transport http {
			versions 1.1
			keepalive 2m
			keepalive_idle_conns 1024
			keepalive_idle_conns_per_host 1024
		}
	}
}
`

// caddyBin is the caddy binary: the one on PATH (scripts/setup --caddy
// puts Debian's in out/tools/usr/bin, which scripts/env.sh puts on PATH).
func caddyBin() (string, error) {
	bin, err := exec.LookPath("caddy")
	if err != nil {
		return "", fmt.Errorf("caddy not found on PATH: scripts/bench-proxy --peer caddy takes it from Debian's package (scripts/setup --caddy)")
	}
	return bin, nil
}

// startCaddy runs caddy in front of engineAddr.
func startCaddy(ctx context.Context, home, engineAddr string) (*proc, error) {
	bin, err := caddyBin()
	if err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	host, port, _ := strings.Cut(addr, ":")
	dir := filepath.Join(home, "caddy")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	conf := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(conf, fmt.Appendf(nil, caddyfile, dir, host, port, engineAddr), 0o600); err != nil {
		return nil, err
	}
	// Its data and autosaved configuration stay in dir.
	env := []string{"HOME=" + dir, "XDG_DATA_HOME=" + dir + "/data", "XDG_CONFIG_HOME=" + dir + "/config"}
	p, err := start(ctx, "caddy", bin, home, env, "run", "--config", conf, "--adapter", "caddyfile")
	if err != nil {
		return nil, err
	}
	return p.up(ctx, addr, "/health")
}

// caddyVersion is what `caddy version` says, with the Go it was built with.
func caddyVersion(bin string) string {
	v, err := exec.Command(bin, "version").Output()
	if err != nil {
		return "version unknown"
	}
	s := strings.TrimSpace(string(v))
	if out, err := exec.Command(bin, "build-info").Output(); err == nil {
		for line := range strings.Lines(string(out)) {
			if gov, ok := strings.CutPrefix(line, "go\t"); ok {
				s += ", built with " + strings.TrimSpace(gov)
				break
			}
		}
	}
	return s
}
