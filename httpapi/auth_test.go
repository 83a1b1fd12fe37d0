package httpapi

import (
	"net/http"
	"net/url"
	"testing"
)

// TestAuth checks credentials (SPEC §8 without rules): admin secrets in
// each of the three forms, non-admins refused, malformed headers.
func TestAuth(t *testing.T) {
	h := newHarness(t, nil, nil)
	bearer := func(v string) map[string]string { return map[string]string{"Authorization": v} }
	denied, unparsable := errBody("Permission denied"), errBody("Could not parse auth token.")
	h.run([]step{
		{name: "auth param", req: req{method: "PUT", path: "/a.json?auth=" + adminSecret, body: str(`1`), anon: true},
			status: 200, body: "1", tree: `{"a":1}`},
		{name: "access_token param", req: req{method: "PUT", path: "/b.json?access_token=" + adminSecret, body: str(`2`), anon: true},
			status: 200, body: "2"},
		{name: "bearer", req: req{method: "GET", path: "/b.json", headers: bearer("Bearer " + adminSecret), anon: true},
			status: 200, body: "2"},
		{name: "bearer scheme any case", req: req{method: "GET", path: "/b.json", headers: bearer("bearer " + adminSecret), anon: true},
			status: 200, body: "2"},
		{name: "second secret", req: req{method: "GET", path: "/b.json?auth=second-admin", anon: true}, status: 200, body: "2"},
		{name: "escaped secret", req: req{method: "GET", path: "/b.json?auth=" + url.QueryEscape(adminSecret), anon: true},
			status: 200, body: "2"},
		{name: "no credentials read", req: req{method: "GET", path: "/b.json", anon: true}, status: 401, body: denied},
		{name: "no credentials write", req: req{method: "PUT", path: "/b.json", body: str(`3`), anon: true}, status: 401,
			body: denied, tree: `{"a":1,"b":2}`},
		{name: "wrong secret", req: req{method: "DELETE", path: "/b.json?auth=guess", anon: true}, status: 401, body: unparsable,
			tree: `{"a":1,"b":2}`},
		{name: "secret prefix", req: req{method: "GET", path: "/b.json?auth=s3cret", anon: true}, status: 401, body: unparsable},
		{name: "owner without dev", req: req{method: "GET", path: "/b.json", headers: bearer("Bearer owner"), anon: true},
			status: 401, body: unparsable},
		{name: "JWT without keys", req: req{method: "GET", path: "/b.json?auth=eyJhbGciOiJIUzI1NiJ9.e30.c2ln", anon: true},
			status: 401, body: unparsable},
		{name: "basic scheme", req: req{method: "GET", path: "/b.json", headers: bearer("Basic dXNlcjpwdw=="), anon: true},
			status: 401, body: unparsable},
		{name: "bare token", req: req{method: "GET", path: "/b.json", headers: bearer(adminSecret), anon: true},
			status: 401, body: unparsable},
		{name: "bearer without token", req: req{method: "GET", path: "/b.json", headers: bearer("Bearer"), anon: true},
			status: 401, body: unparsable},
		{name: "two tokens", req: req{method: "GET", path: "/b.json", headers: bearer("Bearer a b"), anon: true},
			status: 401, body: unparsable},
		{name: "malformed header beats a good param", req: req{method: "GET", path: "/b.json?auth=" + adminSecret,
			headers: bearer("Token x"), anon: true}, status: 401, body: unparsable},
		{name: "param wins over header", req: req{method: "GET", path: "/b.json?auth=" + adminSecret,
			headers: bearer("Bearer nobody"), anon: true}, status: 200, body: "2"},
		{name: "livez needs nothing", req: req{method: "GET", path: "/livez", anon: true}, status: 200, body: `{"status":"ok"}`},
		{name: "readyz needs nothing", req: req{method: "GET", path: "/readyz", anon: true}, status: 200, body: `{"status":"ok"}`},
		{name: "status needs admin", req: req{method: "GET", path: "/status", anon: true}, status: 401, body: denied},
		{name: "status bad header", req: req{method: "GET", path: "/status", headers: bearer("Bearer"), anon: true},
			status: 401, body: unparsable},
		{name: "status admin", req: req{method: "GET", path: "/status?auth=" + adminSecret, anon: true}, status: 200,
			body: `{"applied":2,"id":"node-1","role":"leader"}`},
		{name: "status pretty", req: req{method: "GET", path: "/status?print=pretty"}, status: 200,
			body: "{\n  \"applied\": 2,\n  \"id\": \"node-1\",\n  \"role\": \"leader\"\n}"},
	})
	if r := h.do(req{method: "GET", path: "/metrics", anon: true}); r.status != http.StatusOK {
		t.Errorf("metrics without credentials: %d", r.status)
	}
}

// TestDevMode checks --dev: until rules are set everyone may use the
// data API, `Bearer owner` is admin, and /status still needs an admin.
func TestDevMode(t *testing.T) {
	h := newHarness(t, nil, func(c *Config) { c.Dev = true })
	owner := map[string]string{"Authorization": "Bearer owner"}
	h.run([]step{
		{name: "anonymous write", req: req{method: "PUT", path: "/a.json", body: str(`1`), anon: true}, status: 200, body: "1",
			tree: `{"a":1}`},
		{name: "a token must still be valid", req: req{method: "GET", path: "/a.json?auth=whoever", anon: true}, status: 401,
			body: errBody("Could not parse auth token.")},
		{name: "malformed header still 401", req: req{method: "GET", path: "/a.json", anon: true,
			headers: map[string]string{"Authorization": "nonsense"}}, status: 401, body: errBody("Could not parse auth token.")},
		{name: "status anonymous", req: req{method: "GET", path: "/status", anon: true}, status: 401, body: errBody("Permission denied")},
		{name: "status owner", req: req{method: "GET", path: "/status", anon: true, headers: owner}, status: 200,
			body: `{"applied":1,"id":"node-1","role":"leader"}`},
		{name: "settings anonymous", req: req{method: "GET", path: "/.settings/rules.json", anon: true}, status: 401,
			body: errBody("Permission denied")},
		{name: "settings owner", req: req{method: "GET", path: "/.settings/rules.json?format=strict", anon: true, headers: owner},
			status: 200, body: "{\n  \"rules\": {\n    \".read\": true,\n    \".write\": true\n  }\n}"},
		{name: "rules set", req: req{method: "PUT", path: "/.settings/rules.json", anon: true, headers: owner,
			body: str(`{"rules": {"a": {".read": true}}}`)}, status: 200, body: `{"status":"ok"}`},
		{name: "open no more", req: req{method: "PUT", path: "/a.json", body: str(`2`), anon: true}, status: 401,
			body: errBody("Permission denied")},
		{name: "what the rules allow", req: req{method: "GET", path: "/a.json", anon: true}, status: 200, body: "1"},
	})
}
