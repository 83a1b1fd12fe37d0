package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

const (
	msgBadKey = "Invalid data; couldn't parse key beginning at %s. Key value can't be empty or contain $ # [ ] / or ."
)

func badKey(pos string) string { return strings.Replace(msgBadKey, "%s", pos, 1) }

// TestErrorTexts checks every client-error text of SPEC §6 that the data
// API produces, and that a refused write leaves the tree alone.
func TestErrorTexts(t *testing.T) {
	h := newHarness(t, nil, nil)
	deep := strings.Repeat(`{"a":`, 1000) + "1" + strings.Repeat("}", 1000)
	key768, key769 := strings.Repeat("k", 768), strings.Repeat("k", 769)
	segs33 := "/" + strings.Repeat("a/", 32) + "a.json"
	segs32 := "/" + strings.Repeat("a/", 31) + "a.json"
	h.run([]step{
		{name: "seed", req: req{method: "PUT", path: "/keep.json", body: str(`1`)}, status: 200, body: "1", tree: `{"keep":1}`},
		{name: "not JSON", req: req{method: "PUT", path: "/x.json", body: str(`dddd`)},
			status: 400, body: errBody(tree.MsgInvalidJSON), tree: `{"keep":1}`},
		{name: "trailing garbage", req: req{method: "PUT", path: "/x.json", body: str(`{"a":1}x`)},
			status: 400, body: errBody(tree.MsgInvalidJSON)},
		{name: "invalid UTF-8", req: req{method: "PUT", path: "/x.json", body: str("\"\xff\"")},
			status: 400, body: errBody(tree.MsgInvalidJSON)},
		{name: "bad key", req: req{method: "PUT", path: "/x.json", body: str(`{"a":{"b.c":1}}`)},
			status: 400, body: errBody(badKey("1:7"))},
		{name: "bad key on line 3", req: req{method: "POST", path: "/x.json", body: str("{\n \"ok\": 1,\n  \"b[\": 2}")},
			status: 400, body: errBody(badKey("3:3"))},
		{name: "empty key", req: req{method: "PATCH", path: "/x.json", body: str(`{"a":{"":1}}`)},
			status: 400, body: errBody(badKey("1:7")), tree: `{"keep":1}`},
		{name: "bad path token", req: req{method: "GET", path: "/a$b.json"}, status: 400, body: errBody(tree.MsgInvalidToken)},
		{name: "dot in path", req: req{method: "GET", path: "/servers/server1.json.json"}, status: 400, body: errBody(tree.MsgInvalidToken)},
		{name: "encoded slash", req: req{method: "PUT", path: "/a%2Fb.json", body: str(`1`)}, status: 400, body: errBody(tree.MsgInvalidToken)},
		{name: "control char", req: req{method: "GET", path: "/a%01b.json"}, status: 400, body: errBody(tree.MsgInvalidToken)},
		{name: "invalid UTF-8 path", req: req{method: "GET", path: "/a%FF.json"}, status: 400, body: errBody(tree.MsgInvalidToken)},
		{name: "priority in the middle", req: req{method: "GET", path: "/a/.priority/b.json"}, status: 400, body: errBody(tree.MsgInvalidToken)},
		{name: "33 segments", req: req{method: "GET", path: segs33}, status: 400, body: errBody(tree.MsgPathTooLong)},
		{name: "32 segments", req: req{method: "GET", path: segs32}, status: 200, body: "null"},
		{name: "key of 769 bytes", req: req{method: "GET", path: "/" + key769 + ".json"}, status: 400, body: errBody(tree.MsgPathTooLong)},
		{name: "key of 768 bytes", req: req{method: "PUT", path: "/" + key768 + ".json", body: str(`1`)},
			status: 200, body: "1", tree: `{"keep":1,"` + key768 + `":1}`},
		{name: "oversize body key", req: req{method: "PUT", path: "/x.json", body: str(`{"` + key769 + `":1}`)},
			status: 400, body: errBody(tree.MsgPathTooLong)},
		{name: "1000-deep body", req: req{method: "PUT", path: "/x.json", body: str(deep)},
			status: 400, body: errBody(tree.MsgPathTooLong), tree: `{"keep":1,"` + key768 + `":1}`},
		{name: "push below 32 levels", req: req{method: "POST", path: segs32, body: str(`1`)},
			status: 400, body: errBody(tree.MsgPathTooLong)},
		{name: "missing PUT body", req: req{method: "PUT", path: "/x.json"}, status: 400, body: errBody(tree.MsgMissingData)},
		{name: "empty POST body", req: req{method: "POST", path: "/x.json", body: str("")}, status: 400, body: errBody(tree.MsgMissingData)},
		{name: "blank PATCH body", req: req{method: "PATCH", path: "/x.json", body: str(" \n")}, status: 400, body: errBody(tree.MsgMissingData)},
		{name: "unknown server value", req: req{method: "PUT", path: "/x.json", body: str(`{"a":{".sv":"later"}}`)},
			status: 400, body: errBody(tree.MsgUnknownSV)},
		{name: "no .json", req: req{method: "GET", path: "/users/jack"}, status: 404, body: errBody(msgNoJSON)},
		{name: "no .json on write", req: req{method: "PUT", path: "/users/jack/", body: str(`1`)}, status: 404, body: errBody(msgNoJSON)},
		{name: "not an endpoint", req: req{method: "GET", path: "/livez/"}, status: 404, body: errBody(msgNoJSON)},
		{name: "tree unchanged", req: req{method: "GET", path: "/keep.json"}, status: 200, body: "1",
			tree: `{"keep":1,"` + key768 + `":1}`},
	})
	if n := h.fsm.proposed(); n != 2 {
		t.Errorf("%d commands proposed, want 2: refused requests must not reach the log", n)
	}
}

// TestDepthLimit checks that a write may nest 32 levels below the root
// and no more (SPEC §1), counting the request path.
func TestDepthLimit(t *testing.T) {
	h := newHarness(t, nil, nil)
	nest := func(n int) string { return strings.Repeat(`{"k":`, n) + "1" + strings.Repeat("}", n) }
	h.run([]step{
		{name: "30 below /a/b", req: req{method: "PUT", path: "/a/b.json", body: str(nest(30))}, status: 200, body: nest(30)},
		{name: "31 below /a/b", req: req{method: "PUT", path: "/a/b.json", body: str(nest(31))},
			status: 400, body: errBody(tree.MsgPathTooLong)},
		{name: "push 29 below /a/b", req: req{method: "POST", path: "/a/c.json", body: str(nest(29))}, status: 200,
			body: `{"name":"` + pushKey(testNow.UnixMilli(), [12]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}) + `"}`},
		{name: "push 30 below /a/b", req: req{method: "POST", path: "/a/c.json", body: str(nest(30))},
			status: 400, body: errBody(tree.MsgPathTooLong)},
	})
}

// TestPatchBodies checks PATCH's body rules (SPEC §2).
func TestPatchBodies(t *testing.T) {
	h := newHarness(t, nil, nil)
	h.run([]step{
		{name: "seed", req: req{method: "PUT", path: "/a.json", body: str(`{"b":1,"c":{"d":2}}`)}, status: 200,
			body: `{"b":1,"c":{"d":2}}`},
		{name: "not an object", req: req{method: "PATCH", path: "/a.json", body: str(`5`)},
			status: 400, body: errBody("Invalid data; a PATCH body must be a JSON object")},
		{name: "array", req: req{method: "PATCH", path: "/a.json", body: str(`[1]`)},
			status: 400, body: errBody("Invalid data; a PATCH body must be a JSON object")},
		{name: "overlap", req: req{method: "PATCH", path: "/a.json", body: str(`{"c":1,"c/d":2}`)},
			status: 400, body: errBody("Invalid data; path /c overlaps path /c/d in the same update")},
		{name: "empty object", req: req{method: "PATCH", path: "/a.json", body: str(`{}`)}, status: 200, body: "{}",
			tree: `{"a":{"b":1,"c":{"d":2}}}`},
		{name: "priority field", req: req{method: "PATCH", path: "/a.json", body: str(`{"c/.priority":7}`)}, status: 200,
			body: `{"c/.priority":7}`},
		{name: "export shows it", req: req{method: "GET", path: "/a/c.json?format=export"}, status: 200,
			body: `{".priority":7,"d":2}`},
		{name: "null deletes", req: req{method: "PATCH", path: "/a.json", body: str(`null`)}, status: 200, body: "null",
			tree: "null"},
	})
}

// TestBackendErrors checks the statuses of errors from the database:
// 503 with Retry-After, 500 "Internal error" with the detail logged, and
// client errors that come back through the seam (e.g. forwarded).
func TestBackendErrors(t *testing.T) {
	cases := []struct {
		name   string
		err    error
		status int
		body   string
		retry  bool
	}{
		{"no leader", fsm.ErrNoLeader, 503, errBody("Service unavailable: no leader"), true},
		{"wrapped no leader", wrap(fsm.ErrNoLeader), 503, errBody("Service unavailable: no leader"), true},
		{"forwarded no leader", fsm.FromCode(fsm.Code(fsm.ErrNoLeader), "raft: no leader"), 503,
			errBody("Service unavailable: no leader"), true},
		{"timeout", fsm.ErrTimeout, 503, errBody("Service unavailable: timeout"), true},
		{"outcome unknown, leader lost", fmt.Errorf("propose: connection to leader lost: %w; %w", fsm.ErrNoLeader, fsm.ErrOutcomeUnknown), 503,
			errBody("Service unavailable: " + msgOutcomeUnknown), false},
		{"outcome unknown, time out", fmt.Errorf("%w (%w); %w", fsm.ErrTimeout, context.DeadlineExceeded, fsm.ErrOutcomeUnknown), 503,
			errBody("Service unavailable: " + msgOutcomeUnknown), false},
		{"deadline", context.DeadlineExceeded, 503, errBody("Service unavailable: timeout"), true},
		{"shutting down", fsm.ErrShuttingDown, 503, errBody("Service unavailable: shutting down"), true},
		{"not ready", fsm.ErrNotReady, 503, errBody("Service unavailable: not ready"), true},
		{"internal", errBoom, 500, errBody("Internal error"), false},
		{"unsupported version", fsm.ErrUnsupportedVersion, 500, errBody("Internal error"), false},
		{"forwarded bad data", fsm.FromCode(fsm.Code(tree.ErrInvalidData), tree.MsgInvalidJSON), 400,
			errBody(tree.MsgInvalidJSON), false},
		{"bare bad data", wrap(tree.ErrInvalidData), 400, errBody(tree.MsgInvalidJSON), false},
		{"too large", tree.Public(tree.ErrTooLarge, tree.MsgWriteTooBig), 413, errBody(tree.MsgWriteTooBig), false},
		{"precondition without value", fsm.ErrPreconditionFailed, 412, errBody("Precondition failed"), false},
		{"permission", fsm.ErrPermissionDenied, 401, errBody("Permission denied"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			db := &fakeDB{
				read:    func(context.Context, fsm.Read) (fsm.ReadResult, error) { return fsm.ReadResult{}, tc.err },
				propose: func(context.Context, fsm.Command) (fsm.Answer, error) { return fsm.Answer{}, tc.err },
			}
			h := newHarness(t, db, nil)
			for _, r := range []req{
				{method: "GET", path: "/a.json"},
				{method: "PUT", path: "/a.json", body: str(`1`)},
				{method: "DELETE", path: "/a.json"},
			} {
				resp := h.do(r)
				if resp.status != tc.status || resp.body != tc.body {
					t.Errorf("%s: %d %q, want %d %q", r.method, resp.status, resp.body, tc.status, tc.body)
				}
				if got := resp.header.Get("Retry-After"); (got == "1") != tc.retry {
					t.Errorf("%s: Retry-After %q", r.method, got)
				}
				if ct := resp.header.Get("Content-Type"); ct != jsonContentType {
					t.Errorf("%s: Content-Type %q", r.method, ct)
				}
			}
			if tc.status == 500 && !strings.Contains(h.logs.String(), tc.err.Error()) {
				t.Errorf("detail of the 500 not logged; log:\n%s", h.logs.String())
			}
		})
	}
}

// TestPanicIsInternalError checks that a panic becomes a logged 500 and
// that the server keeps serving.
func TestPanicIsInternalError(t *testing.T) {
	db := &fakeDB{read: func(context.Context, fsm.Read) (fsm.ReadResult, error) { panic("kaboom") }}
	h := newHarness(t, db, nil)
	r := h.get("/a.json")
	if r.status != 500 || r.body != errBody("Internal error") {
		t.Fatalf("got %d %q", r.status, r.body)
	}
	if !strings.Contains(h.logs.String(), "kaboom") {
		t.Errorf("panic not logged:\n%s", h.logs.String())
	}
	if r := h.do(req{method: "GET", path: "/livez"}); r.status != http.StatusOK {
		t.Errorf("livez after panic: %d", r.status)
	}
}

// TestErrorBody checks the exact error framing and JSON escaping.
func TestErrorBody(t *testing.T) {
	got := string(errorBody(`Index not defined, add ".indexOn": "a<b", for path "/x"`))
	want := "{\n  \"error\" : \"Index not defined, add \\\".indexOn\\\": \\\"a<b\\\", for path \\\"/x\\\"\"\n}\n"
	if got != want {
		t.Errorf("errorBody:\n got %q\nwant %q", got, want)
	}
	if got := string(errorBody("Permission denied")); len(got) != 36 {
		t.Errorf("Permission denied body is %d bytes, Firebase's is 36", len(got))
	}
}

func wrap(err error) error { return &wrapped{err} }

type wrapped struct{ err error }

func (w *wrapped) Error() string { return "cluster: " + w.err.Error() }
func (w *wrapped) Unwrap() error { return w.err }
