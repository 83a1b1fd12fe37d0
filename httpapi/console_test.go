package httpapi

import (
	"encoding/json"
	"io/fs"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/arbordb/arbor/httpapi/console"
)

// A browser opening the node is sent to the console; every other client
// asking for / gets the REST API's answer, unchanged.
func TestRootSendsBrowsersToTheConsole(t *testing.T) {
	h := newHarness(t, nil, nil)
	browser := "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
	r := h.do(req{method: http.MethodGet, path: "/", anon: true, headers: map[string]string{"Accept": browser}})
	if r.status != http.StatusFound || r.header.Get("Location") != console.Prefix {
		t.Fatalf("browser GET /: %d Location %q, want 302 to %s", r.status, r.header.Get("Location"), console.Prefix)
	}
	plain := h.do(req{method: http.MethodGet, path: "/", anon: true})
	for _, accept := range []string{"application/json", "*/*", ""} {
		r := h.do(req{method: http.MethodGet, path: "/", anon: true, headers: map[string]string{"Accept": accept}})
		if r.status != plain.status || r.body != plain.body || r.header.Get("Location") != "" {
			t.Errorf("GET / with Accept %q: %d %q, want the API's %d %q", accept, r.status, r.body, plain.status, plain.body)
		}
	}
	if !strings.Contains(plain.body, msgNoJSON) {
		t.Errorf("GET / without Accept: %q, want the REST API's %q", plain.body, msgNoJSON)
	}
	// A query string means an API call, even from a browser.
	if r := h.do(req{method: http.MethodGet, path: "/?print=pretty", anon: true, headers: map[string]string{"Accept": browser}}); r.status == http.StatusFound {
		t.Errorf("browser GET /?print=pretty was redirected")
	}
}

// Every console file comes with the strict headers, and no inline script
// is needed: the CSP forbids them.
func TestConsoleFilesAndHeaders(t *testing.T) {
	h := newHarness(t, nil, nil)
	total := 0
	err := fs.WalkDir(console.Files(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := fs.ReadFile(console.Files(), name)
		total += len(b)
		r := h.do(req{method: http.MethodGet, path: console.Prefix + name, anon: true})
		if r.status != http.StatusOK || r.body != string(b) {
			t.Errorf("GET %s%s: %d, want 200 and the file", console.Prefix, name, r.status)
		}
		csp := r.header.Get("Content-Security-Policy")
		for _, want := range []string{"frame-ancestors 'none'", "script-src 'self'", "default-src 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: CSP %q lacks %s", name, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
			t.Errorf("%s: CSP %q allows inline scripts", name, csp)
		}
		if r.header.Get("X-Content-Type-Options") != "nosniff" || r.header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s: headers %v", name, r.header)
		}
		if r.header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("%s: readable cross-origin", name)
		}
		if strings.HasSuffix(name, ".html") && (strings.Contains(r.body, "<script>") || inlineHandler.MatchString(r.body)) {
			t.Errorf("%s has an inline script", name)
		}
		if strings.Contains(r.body, "http://") && !strings.Contains(r.body, "http://www.w3.org/2000/svg") || strings.Contains(r.body, "https://") {
			t.Errorf("%s names another host: nothing may be fetched from elsewhere", name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if total > 150*1024 {
		t.Errorf("the console is %d bytes; it must stay under 150 KB", total)
	}
	r := h.do(req{method: http.MethodGet, path: console.Prefix, anon: true})
	if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") || !strings.Contains(r.body, `src="app.js"`) {
		t.Errorf("GET %s: %d %s", console.Prefix, r.status, r.header.Get("Content-Type"))
	}
	if r := h.do(req{method: http.MethodGet, path: console.Prefix + "app.js", anon: true}); !strings.HasPrefix(r.header.Get("Content-Type"), "text/javascript") {
		t.Errorf("app.js is served as %q; module scripts need a JavaScript type", r.header.Get("Content-Type"))
	}
	for _, p := range []string{"nope.js", "../console.go", "%2e%2e/console.go"} {
		if r := h.do(req{method: http.MethodGet, path: console.Prefix + p, anon: true}); r.status != http.StatusNotFound {
			t.Errorf("GET %s%s: %d, want 404", console.Prefix, p, r.status)
		}
	}
}

// inlineHandler finds an HTML event-handler attribute such as onclick=.
var inlineHandler = regexp.MustCompile(`\son[a-z]+=`)

const playgroundRules = `{
  "rules": {
    "users": {
      "$uid": {
        ".read": "auth != null && auth.uid == $uid",
        ".write": "auth != null && auth.uid == $uid",
        "age": { ".validate": "newData.isNumber()" }
      }
    }
  }
}`

func TestPlayground(t *testing.T) {
	h := newHarness(t, nil, nil)
	if r := h.do(req{method: http.MethodPut, path: "/.settings/rules.json", body: str(playgroundRules)}); r.status != http.StatusOK {
		t.Fatalf("set rules: %d %s", r.status, r.body)
	}
	if r := h.do(req{method: http.MethodPut, path: "/users/alice.json", body: str(`{"age": 30}`)}); r.status != http.StatusOK {
		t.Fatalf("seed: %d %s", r.status, r.body)
	}
	ask := func(body string, anon bool) (response, playgroundAnswer) {
		t.Helper()
		r := h.do(req{method: http.MethodPost, path: PlaygroundPath, body: str(body), anon: anon})
		var a playgroundAnswer
		if r.status == http.StatusOK {
			if err := json.Unmarshal([]byte(r.body), &a); err != nil {
				t.Fatalf("answer %q: %v", r.body, err)
			}
		}
		return r, a
	}
	tests := []struct {
		body    string
		allowed bool
		rule    string
		line    int
	}{
		{`{"op":"read","path":"/users/alice","auth":{"uid":"alice"}}`, true, "/rules/users/$uid/.read", 5},
		{`{"op":"read","path":"/users/alice","auth":{"uid":"bob"}}`, false, "/rules/users/$uid/.read", 5},
		{`{"op":"read","path":"/users/alice","auth":null}`, false, "/rules/users/$uid/.read", 5},
		{`{"op":"write","path":"/users/alice/age","auth":{"uid":"alice"},"data":31}`, true, "/rules/users/$uid/.write", 6},
		{`{"op":"write","path":"/users/alice/age","auth":{"uid":"alice"},"data":"31"}`, false, "/rules/users/$uid/age/.validate", 7},
		{`{"op":"write","path":"/other","auth":{"uid":"alice"},"data":1}`, false, "", 0},
	}
	for _, tc := range tests {
		r, a := ask(tc.body, false)
		if r.status != http.StatusOK {
			t.Errorf("%s: %d %s", tc.body, r.status, r.body)
			continue
		}
		got := ""
		if a.Rule != nil {
			got = a.Rule.Path
			if a.Rule.Line != tc.line {
				t.Errorf("%s: rule at line %d, want %d", tc.body, a.Rule.Line, tc.line)
			}
		}
		if a.Allowed != tc.allowed || got != tc.rule || a.Default {
			t.Errorf("%s: allowed %v by %q, want %v by %q", tc.body, a.Allowed, got, tc.allowed, tc.rule)
		}
	}
	// The playground is the admin's: nobody else may even ask.
	if r, _ := ask(`{"op":"read","path":"/"}`, true); r.status != http.StatusUnauthorized {
		t.Errorf("anonymous playground: %d %s, want 401", r.status, r.body)
	}
	for _, bad := range []string{`nope`, `{"op":"delete","path":"/"}`, `{"op":"read","path":"/a.b"}`,
		`{"op":"read","path":"/","auth":5}`, `{"op":"write","path":"/"}`, `{"op":"write","path":"/","data":{"a.b":1}}`} {
		if r, _ := ask(bad, false); r.status != http.StatusBadRequest {
			t.Errorf("playground %s: %d %s, want 400", bad, r.status, r.body)
		}
	}
}
