package httpapi

import (
	"testing"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

// TestConditionalRequests walks SPEC §4: ETags on request, If-None-Match,
// if-match compare-and-set with the 412 body and ETag, null_etag, and the
// refusals.
func TestConditionalRequests(t *testing.T) {
	h := newHarness(t, nil, nil)
	etag := map[string]string{"X-Firebase-ETag": "true"}
	with := func(k, v string) map[string]string { return map[string]string{k: v} }
	one, two, three := tree.Int(1).ETag(), tree.Int(2).ETag(), tree.Int(3).ETag()
	obj, err := tree.ParseBody([]byte(`{"a":1}`), tree.MaxDepth)
	if err != nil {
		t.Fatal(err)
	}
	h.run([]step{
		// if-match: null_etag creates a node that is absent.
		{name: "create if absent", req: req{method: "PUT", path: "/n.json", body: str(`1`), headers: with("If-Match", "null_etag")},
			status: 200, body: "1", tree: `{"n":1}`},
		{name: "create again fails", req: req{method: "PUT", path: "/n.json", body: str(`9`), headers: with("if-match", "null_etag")},
			status: 412, body: "1", header: map[string]string{"ETag": one}, tree: `{"n":1}`},
		{name: "get with etag", req: req{method: "GET", path: "/n.json", headers: etag},
			status: 200, body: "1", header: map[string]string{"ETag": one}},
		{name: "header name and value in any case", req: req{method: "GET", path: "/n.json",
			headers: with("x-firebase-etag", "TRUE")}, status: 200, body: "1", header: map[string]string{"ETag": one}},
		{name: "no etag unless asked", req: req{method: "GET", path: "/n.json"},
			status: 200, body: "1", header: map[string]string{"ETag": ""}},
		{name: "absent node", req: req{method: "GET", path: "/none.json", headers: etag},
			status: 200, body: "null", header: map[string]string{"ETag": "null_etag"}},
		{name: "if-none-match unchanged", req: req{method: "GET", path: "/n.json", headers: with("If-None-Match", one)},
			status: 304, body: ""},
		{name: "if-none-match changed", req: req{method: "GET", path: "/n.json", headers: with("If-None-Match", "stale")},
			status: 200, body: "1", header: map[string]string{"ETag": one}},
		{name: "if-none-match null", req: req{method: "GET", path: "/none.json", headers: with("If-None-Match", "null_etag")},
			status: 304, body: ""},
		{name: "cas succeeds", req: req{method: "PUT", path: "/n.json", body: str(`2`), headers: with("If-Match", one)},
			status: 200, body: "2", tree: `{"n":2}`},
		{name: "cas with old etag", req: req{method: "PUT", path: "/n.json", body: str(`3`), headers: with("If-Match", one)},
			status: 412, body: "2", header: map[string]string{"ETag": two}, tree: `{"n":2}`},
		{name: "put returns new etag", req: req{method: "PUT", path: "/n.json", body: str(`3`),
			headers: map[string]string{"If-Match": two, "X-Firebase-ETag": "true"}},
			status: 200, body: "3", header: map[string]string{"ETag": three}, tree: `{"n":3}`},
		{name: "delete with wrong etag", req: req{method: "DELETE", path: "/n.json", headers: with("If-Match", two)},
			status: 412, body: "3", header: map[string]string{"ETag": three}, tree: `{"n":3}`},
		{name: "delete with etag", req: req{method: "DELETE", path: "/n.json",
			headers: map[string]string{"If-Match": three, "X-Firebase-ETag": "true"}},
			status: 200, body: "null", header: map[string]string{"ETag": "null_etag"}, tree: "null"},
		{name: "delete absent with null_etag", req: req{method: "DELETE", path: "/n.json", headers: with("If-Match", "null_etag")},
			status: 200, body: "null"},
		{name: "412 body is pretty when asked", req: req{method: "PUT", path: "/o.json", body: str(`{"a":1}`)},
			status: 200, body: `{"a":1}`},
		{name: "412 pretty", req: req{method: "PUT", path: "/o.json?print=pretty", body: str(`{"a":2}`),
			headers: with("If-Match", "null_etag")},
			status: 412, body: "{\n  \"a\" : 1\n}", header: map[string]string{"ETag": obj.ETag()}},
		{name: "post etag", req: req{method: "POST", path: "/p.json", body: str(`1`), headers: etag},
			status: 200, body: `{"name":"` + pushKey(testNow.UnixMilli(), [12]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}) + `"}`,
			header: map[string]string{"ETag": one}},
		{name: "patch gives no etag", req: req{method: "PATCH", path: "/o.json", body: str(`{"a":5}`), headers: etag},
			status: 200, body: `{"a":5}`, header: map[string]string{"ETag": ""}},
		{name: "if-match on GET", req: req{method: "GET", path: "/o.json", headers: with("If-Match", one)},
			status: 400, body: errBody("if-match is not supported on GET requests")},
		{name: "if-match on PATCH", req: req{method: "PATCH", path: "/o.json", body: str(`{"a":1}`), headers: with("If-Match", one)},
			status: 400, body: errBody("if-match is not supported on PATCH requests")},
		{name: "if-match on POST", req: req{method: "POST", path: "/o.json", body: str(`1`), headers: with("If-Match", one)},
			status: 400, body: errBody("if-match is not supported on POST requests")},
		{name: "if-match with print=silent", req: req{method: "PUT", path: "/o.json?print=silent", body: str(`1`),
			headers: with("If-Match", one)}, status: 400, body: errBody("print=silent cannot be combined with if-match")},
	})
	if c := h.fsm.lastCommand(t); c.Kind != fsm.CmdUpdate || string(c.Body) != `{"a":5}` {
		t.Errorf("refused requests reached the log: last command %+v", c)
	}
}

// TestTransaction runs firebase-admin-go's Transaction loop: GET with an
// ETag, then PUT with If-Match, retrying from the 412's body and ETag.
func TestTransaction(t *testing.T) {
	h := newHarness(t, nil, nil)
	h.do(req{method: "PUT", path: "/counter.json", body: str(`10`)})
	r := h.do(req{method: "GET", path: "/counter.json", headers: map[string]string{"X-Firebase-ETag": "true"}})
	staleETag := r.header.Get("ETag")
	// Another client wins the race.
	h.do(req{method: "PUT", path: "/counter.json", body: str(`20`)})
	body, tag := r.body, staleETag
	for attempt := 0; attempt < 25; attempt++ {
		next := map[string]string{"10": "11", "20": "21"}[body]
		r = h.do(req{method: "PUT", path: "/counter.json", body: str(next), headers: map[string]string{"If-Match": tag}})
		if r.status == 200 {
			break
		}
		if r.status != 412 {
			t.Fatalf("attempt %d: %d %q", attempt, r.status, r.body)
		}
		body, tag = r.body, r.header.Get("ETag")
	}
	if got := h.tree(); got != `{"counter":21}` {
		t.Errorf("tree %s, want {\"counter\":21}", got)
	}
}
