// This file is not part of any package of this repository (go ignores a
// directory whose name starts with "_"). scripts/build-panel puts it into
// a copy of go-app v10.1.11's pkg/app in place of http.go and resource.go
// when it builds the wasm, and builds against that copy.
//
// Those two files are go-app's server side: Handler, which serves the page
// and its resources over net/http, and the resource resolvers that map
// /web/ to a directory or a bucket for it. The browser never runs them,
// but they import net/http, and importing net/http links its package
// initialisation and what that reaches (crypto/tls, x509, the elliptic
// curves, math/big, mime, ...) into the wasm: some 470 kB of its gzip
// size. The panel's own calls go through the browser's fetch and
// EventSource (panel/api, panel/ui/stream.go).
//
// What stays is what the rest of go-app's pkg/app refers to in the
// browser: the Handler type (GenerateStaticWebsite's parameter in wasm.go,
// which panics there) and the resolver of resource paths app.go uses,
// copied from resource.go unchanged. go-app is MIT-licensed, (c) Maxence
// Charriere.

package app

import "strings"

// Handler is go-app's HTTP handler; in the browser it is only a type.
type Handler struct{}

func clientResourceResolver(resourcesLocation string) func(string) string {
	return func(location string) string {
		if remoteLocation(location) || !webLocation(location) {
			return location
		}
		location = strings.Trim(location, "/")
		return resourcesLocation + "/" + strings.TrimPrefix(location, "web/")
	}
}

func remoteLocation(location string) bool {
	return strings.HasPrefix(location, "https://") ||
		strings.HasPrefix(location, "http://")
}

func webLocation(location string) bool {
	return strings.HasPrefix(location, "/web/") ||
		location == "/web" ||
		strings.HasPrefix(location, "web/") ||
		location == "web"
}
