package httpapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// FuzzDataRequest sends arbitrary methods, paths, queries and bodies to the
// handler: whatever the input, the answer is never a 5xx (SPEC §6: every
// client mistake is a 4xx) and always carries the common headers.
func FuzzDataRequest(f *testing.F) {
	for _, seed := range []struct{ method, target, body string }{
		{"GET", "/.json", ""},
		{"PUT", "/a/b.json?print=pretty", `{"x":[1,null,{"y":true}]}`},
		{"POST", "/a.json?x-http-method-override=patch", `{"b/c":1,"d":null}`},
		{"PATCH", "//a//.priority.json", `5`},
		{"GET", `/a.json?orderBy="$key"&startAt="a","k"&limitToLast=2`, ""},
		{"GET", "/a.json?shallow=true&startAfter=x&limitToFirst=1", ""},
		{"DELETE", "/a.json?writeSizeLimit=tiny", ""},
		{"PUT", "/%E2%82%AC.json", `{".sv":{"increment":1.5}}`},
		{"GET", "/a.json?callback=cb&download=f.json&timeout=10ms", ""},
	} {
		f.Add(seed.method, seed.target, seed.body)
	}
	cfg := testConfig(&syncBuffer{}, prometheus.NewRegistry())
	cfg.Dev = true
	s, err := New(cfg, newFSMDB())
	if err != nil {
		f.Fatal(err)
	}
	handler := s.Handler()
	f.Fuzz(func(t *testing.T, method, target, body string) {
		if !strings.HasPrefix(target, "/") {
			target = "/" + target
		}
		r, err := http.NewRequest(method, "http://127.0.0.1"+target, strings.NewReader(body))
		if err != nil {
			return // not a request a client could send
		}
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, r)
		if w.Code >= 500 {
			t.Fatalf("%s %s %q: %d %s", method, target, body, w.Code, w.Body.String())
		}
		if w.Header().Get("Access-Control-Allow-Origin") != "*" || w.Header().Get("Cache-Control") != "no-cache" {
			t.Fatalf("%s %s: headers %v", method, target, w.Header())
		}
	})
}
