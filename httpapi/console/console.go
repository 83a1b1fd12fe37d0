// Package console is Arbor's web console: static HTML, CSS and JavaScript
// modules embedded in the binary and served by every node under /_/. The
// console has no privileges of its own: the browser signs in with the
// admin secret or an ID token and calls the node's REST and SSE API with
// it, so the security rules judge what it shows exactly as they judge any
// client. Nothing is built, and nothing is fetched from anywhere but the
// node itself.
package console

import (
	"embed"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
)

// Prefix is where the console is served; data paths end in .json, so no
// data path is under it.
const Prefix = "/_/"

//go:embed static
var static embed.FS

// files is the console's root: static/index.html is served as /_/.
var files = mustSub(static, "static")

func mustSub(f fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil {
		panic(err) // the directory is embedded above; it always exists
	}
	return sub
}

// Files returns the console's files (index.html at the root), e.g. to
// check their size.
func Files() fs.FS { return files }

// SecurityPolicy is the Content-Security-Policy of every console answer:
// scripts and styles only from the node's own files (no inline script, no
// eval), requests only to the node itself, and no framing.
const SecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Serve answers a GET or HEAD of name, the path below Prefix ("" for the
// console's page). Unknown names are 404s.
func Serve(w http.ResponseWriter, r *http.Request, name string) {
	h := w.Header()
	h.Del("Access-Control-Allow-Origin")
	h.Set("Content-Security-Policy", SecurityPolicy)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cache-Control", "no-cache")
	name = strings.TrimPrefix(path.Clean("/"+name), "/")
	if name == "" {
		name = "index.html"
	}
	b, err := fs.ReadFile(files, name)
	if err != nil {
		h.Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte("not found\n"))
		return
	}
	ctype := mime.TypeByExtension(path.Ext(name))
	if strings.HasSuffix(name, ".js") {
		ctype = "text/javascript; charset=utf-8" // the machine's mime table may lack it
	}
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	h.Set("Content-Type", ctype)
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(b)
	}
}

// WantsPage reports whether r is a browser opening a page (its Accept
// header names text/html), which is sent to the console; API clients
// never ask for HTML.
func WantsPage(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(v, ",") {
			mt, _, _ := strings.Cut(part, ";")
			if strings.EqualFold(strings.TrimSpace(mt), "text/html") {
				return true
			}
		}
	}
	return false
}
