// Package webui serves the panel the backend embeds: the standalone page at
// / and /metrics, the <mlx-metrics-panel> loader at /api/metrics/panel.js,
// and the go-app frame (wasm, ECharts, styles) under /api/metrics/panel/.
// Both documents carry a Content-Security-Policy: scripts only from this
// origin (and the standalone page's own inline script, by hash), WebAssembly
// allowed in the frame, and framing only by this origin and the configured
// hosts. CORS for those hosts is the access package's.
package webui

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"io"
	"io/fs"
	"mime"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/gofiber/fiber/v2"

	"github.com/mlx-bun/mlx-metrics/backend/internal/access"
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
	// embed the panel (frame-ancestors) and to serve its API (connect-src).
	// The access package answers CORS for the same list.
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

	mu      sync.Mutex
	loaded  map[string]asset // by name, read once: a revalidation costs no read
	pageCSP string           // the standalone page's policy, once it is read
}

// asset is one file as served: its bytes (gzip-compressed when gz), a
// brotli copy when the build made one, and ETag.
type asset struct {
	data []byte
	gz   bool
	br   []byte
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
	origins, err := access.ParseOrigins(opts.CORSOrigins)
	if err != nil {
		return nil, err
	}
	_, statErr := fs.Stat(assets, "index.html")
	return &UI{assets: assets, origins: origins, built: statErr == nil, loaded: map[string]asset{}}, nil
}

// Built reports whether the panel was built into the binary.
func (u *UI) Built() bool { return u.built }

// MetricsSlash redirects /metrics/ to /metrics; routing is not strict, so
// it sees /metrics too, and passes that on.
func (u *UI) MetricsSlash(c *fiber.Ctx) error {
	if !strings.HasSuffix(c.Path(), "/") {
		return c.Next()
	}
	return c.Redirect("/metrics", fiber.StatusMovedPermanently)
}

// Loader serves the element's loader, panel.js.
func (u *UI) Loader(c *fiber.Ctx) error { return u.serve(c, "panel.js") }

// PageForBrowsers serves the page at /metrics to a browser (its Accept
// names text/html) and passes anything else on to the route after it, the
// Prometheus exposition: a scraper of /metrics by habit gets metrics.
func (u *UI) PageForBrowsers(c *fiber.Ctx) error {
	if !WantsHTML(c.Get(fiber.HeaderAccept)) {
		c.Vary(fiber.HeaderAccept)
		return c.Next()
	}
	err := u.Page(c)
	c.Vary(fiber.HeaderAccept) // after the page's own Vary
	return err
}

// WantsHTML reports whether an Accept header asks for a page: browsers
// name text/html first; Prometheus, OpenMetrics scrapers and curl do not.
func WantsHTML(accept string) bool {
	for part := range strings.SplitSeq(accept, ",") {
		mt, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		mt = strings.TrimSpace(mt)
		// text/html;q=0 refuses that type; another html type may still be
		// accepted.
		if (strings.EqualFold(mt, "text/html") || strings.EqualFold(mt, "application/xhtml+xml")) && qValue(params) > 0 {
			return true
		}
	}
	return false
}

// Page serves the standalone page (or says the panel is not built).
func (u *UI) Page(c *fiber.Ctx) error {
	if !u.built {
		c.Status(fiber.StatusServiceUnavailable).Type("html", "utf-8")
		return c.SendString(notBuilt)
	}
	if err := u.serve(c, "index.html"); err != nil {
		return err
	}
	c.Set(fiber.HeaderContentSecurityPolicy, u.standalonePolicy())
	return nil
}

const notBuilt = `<!doctype html><meta charset="utf-8"><title>mlx-metrics: panel not built</title>
<body style="font:15px system-ui;margin:3em"><h1>panel not built: run scripts/build-panel</h1>
<p>This backend was compiled without the panel. Run <code>scripts/build-panel</code> and rebuild
(or use <code>scripts/run</code>, which does both). The API under <code>/api/metrics</code> works regardless.</p>`

// Frame serves the panel's frame: its document at FramePath (the path
// without its slash redirected there), its assets below it.
func (u *UI) Frame(c *fiber.Ctx) error {
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
		c.Set(fiber.HeaderContentSecurityPolicy, u.framePolicy())
	}
	return nil
}

// framePolicy is the frame's CSP: go-app needs 'wasm-unsafe-eval' to
// compile the panel and a worker; ECharts and go-app set inline styles.
// The element's connection may name any backend's API, so connections go
// anywhere over http(s); scripts come only from here. Only the configured
// hosts (and this origin) may frame the panel.
func (u *UI) framePolicy() string {
	return "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'; " +
		"img-src 'self' data:; font-src 'self' data:; connect-src 'self' http: https:; worker-src 'self'; " +
		"manifest-src 'self'; object-src 'none'; base-uri 'self'; form-action 'none'; frame-ancestors 'self'" + u.hosts()
}

// standalonePolicy is the standalone page's CSP: its one inline script is
// allowed by hash, the rest comes from this origin (the loader, the frame).
func (u *UI) standalonePolicy() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.pageCSP == "" {
		page, _ := inflated(u.loaded["index.html"]) // served just before: it was readable
		u.pageCSP = "default-src 'self'; script-src 'self'" + scriptHashes(page) +
			"; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-src 'self'; connect-src 'self'" +
			"; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'self'"
	}
	return u.pageCSP
}

func (u *UI) hosts() string {
	s := ""
	for _, o := range u.origins {
		s += " " + o
	}
	return s
}

// inlineScript matches a script element without a src, capturing its text.
var (
	inlineScript = regexp.MustCompile(`(?is)<script\b([^>]*)>(.*?)</script\s*>`)
	srcAttr      = regexp.MustCompile(`(?i)\bsrc\s*=`)
)

// scriptHashes is " 'sha256-…'" for each inline script of page, as CSP
// hashes them: over the text exactly as it stands between the tags.
func scriptHashes(page []byte) string {
	s := ""
	for _, m := range inlineScript.FindAllSubmatch(page, -1) {
		if srcAttr.Match(m[1]) {
			continue
		}
		sum := sha256.Sum256(m[2])
		s += " 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	}
	return s
}

// inflated is an asset's plain bytes.
func inflated(a asset) ([]byte, error) {
	if !a.gz {
		return a.data, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(a.data))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

// serve answers name from the assets. A name stored as name.br goes out as
// brotli to clients that take br (and prefer it, by q-value, to gzip); one
// stored as name.gz goes out compressed to clients that accept gzip and is
// inflated for the rest.
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
	enc := ""
	if accept := c.Get(fiber.HeaderAcceptEncoding); accept != "" {
		qbr, qgz := acceptQ(accept, "br"), acceptQ(accept, "gzip")
		switch {
		case a.br != nil && qbr > 0 && (qbr >= qgz || !a.gz):
			enc = "br" // smaller: preferred when weighed the same
		case a.gz && qgz > 0:
			enc = "gzip"
		}
	}
	etag := a.etag
	if enc == "br" {
		etag = strings.TrimSuffix(a.etag, `"`) + `-br"` // another body, another tag
	}
	c.Set(fiber.HeaderETag, etag)
	if match := c.Get(fiber.HeaderIfNoneMatch); match != "" && strings.Contains(match, etag) {
		return c.SendStatus(fiber.StatusNotModified)
	}
	if enc == "br" {
		c.Set(fiber.HeaderContentEncoding, "br")
		return c.Send(a.br)
	}
	if a.gz {
		// q-values count ("gzip;q=0" refuses gzip); a request with no
		// Accept-Encoding gets the plain bytes.
		if enc == "gzip" {
			c.Set(fiber.HeaderContentEncoding, "gzip")
			return c.Send(a.data)
		}
		raw, err := inflated(a)
		if err != nil {
			return err
		}
		return c.Send(raw)
	}
	return c.Send(a.data)
}

// acceptQ is the weight an Accept-Encoding header gives coding: its own
// q-value, else that of *, else 0.
func acceptQ(header, coding string) float64 {
	q, star := -1.0, 0.0
	for _, part := range strings.Split(header, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		w := qValue(params)
		switch name = strings.ToLower(strings.TrimSpace(name)); name {
		case coding:
			q = w
		case "*":
			star = w
		}
	}
	if q < 0 {
		return star
	}
	return q
}

// qValue is the weight the parameters of one entry of an Accept or
// Accept-Encoding header give it: its q, 1 when it has none or one that is
// not a number from 0 to 1.
func qValue(params string) float64 {
	for p := range strings.SplitSeq(params, ";") {
		if k, v, ok := strings.Cut(strings.TrimSpace(p), "="); ok && strings.TrimSpace(k) == "q" {
			if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && f >= 0 && f <= 1 {
				return f
			}
			return 1
		}
	}
	return 1
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
	if br, err := fs.ReadFile(u.assets, name+".br"); err == nil {
		a.br = br
	}
	sum := sha256.Sum256(a.data)
	a.etag = `"` + hex.EncodeToString(sum[:8]) + `"`
	u.loaded[name] = a
	return a, nil
}
