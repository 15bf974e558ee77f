// Package webui serves the panel the backend embeds: the standalone page at
// / and /metrics, the <mlx-metrics-panel> loader at /api/metrics/panel.js,
// and the go-app frame (wasm, ECharts, styles) under /api/metrics/panel/.
// It also answers CORS for the host origins the operator configured, and for
// none by default.
package webui

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"mime"
	"path"
	"strings"
	"sync"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/cors"

	"github.com/mlx-bun/mlx-metrics/backend/internal/server"
)

//go:embed all:dist
var embedded embed.FS

// Paths of the panel, relative to the app root.
const (
	LoaderPath = server.APIPrefix + "/panel.js"
	FramePath  = server.APIPrefix + "/panel/"
)

// Options configure the feature.
type Options struct {
	// CORSOrigins are the host origins (scheme://host[:port]) allowed to
	// load the loader module and call the API from their pages. Empty
	// allows none: browsers then keep other origins out.
	CORSOrigins []string
	// Assets replaces the embedded build (tests); its root holds what
	// dist/ holds.
	Assets fs.FS
}

// UI is the panel feature.
type UI struct {
	assets  fs.FS
	origins []string
	built   bool

	mu     sync.Mutex
	loaded map[string]asset // by name, read once: a revalidation costs no read
}

// asset is one file as served: its bytes (gzip-compressed when gz) and ETag.
type asset struct {
	data []byte
	gz   bool
	etag string
}

// New returns the feature serving opts.Assets, or the embedded build.
func New(opts Options) (*UI, error) {
	assets := opts.Assets
	if assets == nil {
		sub, err := fs.Sub(embedded, "dist")
		if err != nil {
			return nil, err
		}
		assets = sub
	}
	origins, err := ParseOrigins(opts.CORSOrigins)
	if err != nil {
		return nil, err
	}
	_, statErr := fs.Stat(assets, "index.html")
	return &UI{assets: assets, origins: origins, built: statErr == nil, loaded: map[string]asset{}}, nil
}

// Built reports whether the panel was built into the binary.
func (u *UI) Built() bool { return u.built }

// ParseOrigins checks and normalises CORS origins: each a scheme and host
// with an optional port, no path; "*" allows every origin.
func ParseOrigins(in []string) ([]string, error) {
	var out []string
	for _, o := range in {
		o = strings.TrimRight(strings.TrimSpace(o), "/")
		if o == "" {
			continue
		}
		if o != "*" {
			scheme, rest, ok := strings.Cut(o, "://")
			if !ok || (scheme != "http" && scheme != "https") || rest == "" || strings.ContainsAny(rest, "/?#@ ") {
				return nil, errors.New("cors origin " + o + ": want scheme://host[:port], e.g. http://localhost:3000")
			}
			o = strings.ToLower(o)
		}
		out = append(out, o)
	}
	return out, nil
}

// Mount registers CORS first (so it wraps every route mounted after it) and
// the panel's routes.
func (u *UI) Mount(root *fiber.App, api fiber.Router) {
	if len(u.origins) > 0 {
		root.Use(cors.New(cors.Config{
			AllowOrigins: strings.Join(u.origins, ","),
			AllowMethods: "GET,POST,DELETE,OPTIONS",
			AllowHeaders: "Content-Type,Accept,Last-Event-ID",
			MaxAge:       600,
		}))
	}
	root.Get("/", u.page)
	root.Get("/metrics", u.page)
	root.Get("/metrics/", func(c *fiber.Ctx) error { return c.Redirect("/metrics", fiber.StatusMovedPermanently) })
	api.Get("/panel.js", func(c *fiber.Ctx) error { return u.serve(c, "panel.js") })
	api.Get("/panel", u.frame)
	api.Get("/panel/*", u.frame)
}

func (u *UI) page(c *fiber.Ctx) error {
	if !u.built {
		c.Status(fiber.StatusServiceUnavailable).Type("html", "utf-8")
		return c.SendString(notBuilt)
	}
	return u.serve(c, "index.html")
}

const notBuilt = `<!doctype html><meta charset="utf-8"><title>mlx-metrics: panel not built</title>
<body style="font:15px system-ui;margin:3em"><h1>panel not built: run scripts/build-panel</h1>
<p>This backend was compiled without the panel. Run <code>scripts/build-panel</code> and rebuild
(or use <code>scripts/run</code>, which does both). The API under <code>/api/metrics</code> works regardless.</p>`

func (u *UI) frame(c *fiber.Ctx) error {
	p := c.Params("*")
	if p == "" && !strings.HasSuffix(c.Path(), "/") {
		// go-app routes on the path below its prefix: "/" needs the slash.
		return c.Redirect(FramePath, fiber.StatusMovedPermanently)
	}
	if p == "" || strings.HasSuffix(p, "/") {
		p += "index.html"
	}
	p = path.Clean("/" + p)[1:]
	if !u.built {
		return fiber.NewError(fiber.StatusServiceUnavailable, "panel not built: run scripts/build-panel")
	}
	if err := u.serve(c, "frame/"+p); err != nil {
		return err
	}
	if p == "index.html" {
		// Only the configured hosts (and this origin) may frame the panel.
		c.Set("Content-Security-Policy", "frame-ancestors 'self'"+u.frameAncestors())
	}
	return nil
}

func (u *UI) frameAncestors() string {
	s := ""
	for _, o := range u.origins {
		s += " " + o
	}
	return s
}

// serve answers name from the assets. A name stored as name.gz goes out
// compressed to clients that accept gzip and is inflated for the rest.
func (u *UI) serve(c *fiber.Ctx, name string) error {
	a, err := u.asset(name)
	if err != nil {
		return fiber.NewError(fiber.StatusNotFound, "no panel asset "+name)
	}
	ctype := mime.TypeByExtension(path.Ext(name))
	switch path.Ext(name) {
	case ".wasm":
		ctype = "application/wasm"
	case ".js", ".mjs":
		ctype = "text/javascript; charset=utf-8"
	case ".webmanifest":
		ctype = "application/manifest+json"
	case "":
		ctype = "text/html; charset=utf-8"
	}
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	c.Set(fiber.HeaderContentType, ctype)
	// Revalidate every time: a backend upgrade must never leave an old wasm
	// in the browser. The ETag keeps revalidation a 304.
	c.Set(fiber.HeaderCacheControl, "no-cache")
	c.Set(fiber.HeaderVary, fiber.HeaderAcceptEncoding)
	c.Set(fiber.HeaderETag, a.etag)
	if match := c.Get(fiber.HeaderIfNoneMatch); match != "" && strings.Contains(match, a.etag) {
		return c.SendStatus(fiber.StatusNotModified)
	}
	if a.gz {
		// AcceptsEncodings weighs q-values ("gzip;q=0" refuses gzip); a
		// request with no Accept-Encoding gets the plain bytes.
		if c.Get(fiber.HeaderAcceptEncoding) != "" && c.AcceptsEncodings("gzip") != "" {
			c.Set(fiber.HeaderContentEncoding, "gzip")
			return c.Send(a.data)
		}
		zr, err := gzip.NewReader(bytes.NewReader(a.data))
		if err != nil {
			return err
		}
		raw, err := io.ReadAll(zr)
		if err != nil {
			return err
		}
		return c.Send(raw)
	}
	return c.Send(a.data)
}

// asset returns name, read from the assets on first use: name.gz when
// there is a compressed copy, else name.
func (u *UI) asset(name string) (asset, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if a, ok := u.loaded[name]; ok {
		return a, nil
	}
	a := asset{gz: true}
	var err error
	if a.data, err = fs.ReadFile(u.assets, name+".gz"); err != nil {
		a.gz = false
		if a.data, err = fs.ReadFile(u.assets, name); err != nil {
			return asset{}, err
		}
	}
	sum := sha256.Sum256(a.data)
	a.etag = `"` + hex.EncodeToString(sum[:8]) + `"`
	u.loaded[name] = a
	return a, nil
}
