package main

// The peer a user would put in front of an engine instead of this proxy:
// nginx as a plain streaming reverse proxy (proxy_buffering off, HTTP/1.1
// keep-alive to the upstream), one process (master_process off) so its CPU
// is one pid's, on a loopback port, with a generated configuration in a
// throw-away prefix. It meters nothing; the proxy meters every request.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

const nginxConf = `worker_processes 1;
master_process off;
daemon off;
error_log %[1]s/error.log warn;
pid %[1]s/nginx.pid;
events { worker_connections 4096; }
http {
	access_log off;
	client_body_temp_path %[1]s/body;
	proxy_temp_path %[1]s/proxy;
	fastcgi_temp_path %[1]s/fastcgi;
	uwsgi_temp_path %[1]s/uwsgi;
	scgi_temp_path %[1]s/scgi;
	upstream engine {
		server %[2]s;
		keepalive 1024;
	}
	server {
		listen %[3]s;
		location / {
			proxy_pass http://engine;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
			proxy_buffering off;
			proxy_request_buffering off;
		}
	}
}
`

// startNginx runs nginx (the binary on PATH, else /usr/sbin/nginx) in
// front of engineAddr.
func startNginx(ctx context.Context, home, engineAddr string) (*proc, error) {
	bin, err := exec.LookPath("nginx")
	if err != nil {
		bin = "/usr/sbin/nginx"
		if _, err := os.Stat(bin); err != nil {
			return nil, fmt.Errorf("nginx not installed: scripts/bench-proxy --peer nginx installs it (scripts/setup --nginx)")
		}
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	prefix := filepath.Join(home, "nginx")
	if err := os.MkdirAll(prefix, 0o700); err != nil {
		return nil, err
	}
	conf := filepath.Join(prefix, "nginx.conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, nginxConf, prefix, engineAddr, addr), 0o600); err != nil {
		return nil, err
	}
	p, err := start(ctx, "nginx", bin, home, nil, "-p", prefix, "-c", conf)
	if err != nil {
		return nil, err
	}
	return p.up(ctx, addr, "/health")
}

// nginxVersion is what `nginx -v` says (on stderr).
func nginxVersion(bin string) string {
	out, err := exec.Command(bin, "-v").CombinedOutput()
	if err != nil {
		return "version unknown"
	}
	return strings.TrimPrefix(strings.TrimSpace(string(out)), "nginx version: ")
}
