package httpapi

import (
	"net/http"
	"testing"
	"time"
)

// TestIfMatchNeedsRead: a conditional write to a location its writer may
// write but not read is refused whatever the ETag, before the ETag is
// looked at; otherwise a right guess (200) and a wrong one (401) would
// tell a write-only writer the hidden value without changing it.
func TestIfMatchNeedsRead(t *testing.T) {
	h := newRulesHarness(t, nil)
	rules := `{"rules": {
	  "drop": {".read": false, ".write": "auth != null"},
	  "own": {".read": "auth != null", ".write": "auth != null"}
	}}`
	h.run([]step{
		{name: "rules", req: req{method: "PUT", path: "/.settings/rules.json", body: str(rules)}, status: 200, body: `{"status":"ok"}`},
		{name: "seed", req: req{method: "PUT", path: "/.json", body: str(`{"drop":"hunter2","own":"mine"}`)}, status: 200,
			body: `{"drop":"hunter2","own":"mine"}`},
	})
	etag := func(path string) string {
		r := h.do(req{method: "GET", path: path, headers: map[string]string{"X-Firebase-ETag": "true"}})
		if r.status != http.StatusOK || r.header.Get("ETag") == "" {
			t.Fatalf("GET %s: %d %q", path, r.status, r.header.Get("ETag"))
		}
		return r.header.Get("ETag")
	}
	alice := userToken(t, "alice", testNow.Add(time.Hour))
	right, wrong := etag("/drop.json"), etag("/own.json")
	denied := errBody("Permission denied")
	before := h.fsm.proposed()
	for _, tc := range []struct{ name, method, etag string }{
		{"right guess", "PUT", right},
		{"wrong guess", "PUT", wrong},
		{"absent guess", "PUT", "null_etag"},
		{"right guess, delete", "DELETE", right},
		{"wrong guess, delete", "DELETE", wrong},
	} {
		r := req{method: tc.method, path: "/drop.json?auth=" + alice, anon: true, headers: map[string]string{"If-Match": tc.etag}}
		if tc.method == "PUT" {
			r.body = str(`"hunter2"`)
		}
		got := h.do(r)
		if got.status != http.StatusUnauthorized || got.body != denied || got.header.Get("ETag") != "" {
			t.Errorf("%s: %d %s (ETag %q), want 401 %s", tc.name, got.status, got.body, got.header.Get("ETag"), denied)
		}
	}
	if n := h.fsm.proposed(); n != before {
		t.Errorf("%d refused conditional writes were proposed", n-before)
	}
	// Without if-match the write-only location is still writable, and a
	// readable one keeps its compare-and-set.
	h.run([]step{
		{name: "blind write", req: req{method: "PUT", path: "/drop.json?auth=" + alice, anon: true, body: str(`"new"`)},
			status: 200, body: `"new"`},
		{name: "cas on a readable location", req: req{method: "PUT", path: "/own.json?auth=" + alice, anon: true, body: str(`"m2"`),
			headers: map[string]string{"If-Match": wrong}}, status: 200, body: `"m2"`},
		{name: "stale cas on a readable location", req: req{method: "PUT", path: "/own.json?auth=" + alice, anon: true,
			body: str(`"m3"`), headers: map[string]string{"If-Match": wrong}}, status: 412, body: `"m2"`},
		{name: "admin cas is not judged", req: req{method: "PUT", path: "/drop.json", body: str(`"x"`),
			headers: map[string]string{"If-Match": "null_etag"}}, status: 412, body: `"new"`},
	})
	if got := h.tree(); got != `{"drop":"new","own":"m2"}` {
		t.Errorf("tree = %s", got)
	}
}
