package httpapi

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

// TestQueryParameters checks the parameters of SPEC §3 other than the
// orderBy family, in one sequence over a real FSM.
func TestQueryParameters(t *testing.T) {
	h := newHarness(t, nil, nil)
	big := `"` + strings.Repeat("x", 100*1024) + `"`
	pretty := "{\n  \"a\" : {\n    \"b\" : 1\n  },\n  \"c\" : \"x\"\n}"
	key := pushKey(testNow.UnixMilli(), [12]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})
	h.run([]step{
		{name: "seed", req: req{method: "PUT", path: "/d.json", body: str(`{"a":{"b":1},"c":"x"}`)}, status: 200,
			body: `{"a":{"b":1},"c":"x"}`},
		{name: "unknown parameter", req: req{method: "GET", path: "/d.json?foo=1"}, status: 400,
			body: errBody("Invalid query parameter: foo")},
		{name: "unknown on write", req: req{method: "PUT", path: "/d.json?cache=no", body: str(`1`)}, status: 400,
			body: errBody("Invalid query parameter: cache"), tree: `{"d":{"a":{"b":1},"c":"x"}}`},
		{name: "first unknown in name order", req: req{method: "GET", path: "/d.json?zz=1&aa=2"}, status: 400,
			body: errBody("Invalid query parameter: aa")},
		{name: "names are case-sensitive", req: req{method: "GET", path: "/d.json?Print=pretty"}, status: 400,
			body: errBody("Invalid query parameter: Print")},
		{name: "repeated", req: req{method: "GET", path: "/d.json?print=pretty&print=pretty"}, status: 400,
			body: errBody("Query parameter print may be given only once")},
		{name: "malformed query", req: req{method: "GET", path: "/d.json?print=%zz"}, status: 400,
			body: errBody("Invalid query string: parameters must be name=value pairs separated by &")},
		// print
		{name: "pretty", req: req{method: "GET", path: "/d.json?print=pretty"}, status: 200, body: pretty},
		{name: "pretty put", req: req{method: "PUT", path: "/d.json?print=pretty", body: str(`{"a":{"b":1},"c":"x"}`)},
			status: 200, body: pretty},
		{name: "pretty post", req: req{method: "POST", path: "/q.json?print=pretty", body: str(`1`)},
			status: 200, body: "{\n  \"name\" : \"" + key + "\"\n}"},
		{name: "pretty delete", req: req{method: "DELETE", path: "/q.json?print=pretty"}, status: 200, body: "null"},
		{name: "bad print", req: req{method: "GET", path: "/d.json?print=loud"}, status: 400,
			body: errBody("print must be pretty or silent")},
		{name: "silent get", req: req{method: "GET", path: "/d.json?print=silent"}, status: 204, body: ""},
		{name: "silent put", req: req{method: "PUT", path: "/s.json?print=silent", body: str(`1`)}, status: 204, body: "",
			tree: `{"d":{"a":{"b":1},"c":"x"},"s":1}`},
		{name: "silent patch", req: req{method: "PATCH", path: "/s2.json?print=silent", body: str(`{"x":1}`)}, status: 204,
			body: "", tree: `{"d":{"a":{"b":1},"c":"x"},"s":1,"s2":{"x":1}}`},
		{name: "silent post", req: req{method: "POST", path: "/s3.json?print=silent", body: str(`1`)}, status: 204, body: ""},
		{name: "silent delete", req: req{method: "DELETE", path: "/s3.json?print=silent"}, status: 204, body: ""},
		{name: "silent delete 2", req: req{method: "DELETE", path: "/s2.json?print=silent"}, status: 204, body: ""},
		{name: "silent override", req: req{method: "POST", path: "/s.json?print=silent&x-http-method-override=DELETE"},
			status: 204, body: "", tree: `{"d":{"a":{"b":1},"c":"x"}}`},
		// shallow
		{name: "shallow", req: req{method: "GET", path: "/d.json?shallow=true"}, status: 200, body: `{"a":true,"c":true}`},
		{name: "shallow pretty", req: req{method: "GET", path: "/d.json?shallow=true&print=pretty"}, status: 200,
			body: "{\n  \"a\" : true,\n  \"c\" : true\n}"},
		{name: "shallow primitive", req: req{method: "GET", path: "/d/c.json?shallow=true"}, status: 200, body: `"x"`},
		{name: "shallow null", req: req{method: "GET", path: "/none.json?shallow=true"}, status: 200, body: `null`},
		{name: "shallow false", req: req{method: "GET", path: "/d.json?shallow=false"}, status: 200, body: `{"a":{"b":1},"c":"x"}`},
		{name: "bad shallow", req: req{method: "GET", path: "/d.json?shallow=yes"}, status: 400,
			body: errBody("shallow must be true or false")},
		{name: "shallow on PUT", req: req{method: "PUT", path: "/d.json?shallow=true", body: str(`1`)}, status: 400,
			body: errBody("Query parameter shallow is only supported on GET requests")},
		// format
		{name: "bad format", req: req{method: "GET", path: "/d.json?format=xml"}, status: 400,
			body: errBody("format must be export")},
		// callback
		{name: "callback", req: req{method: "GET", path: "/d.json?callback=my.cb_1$"}, status: 200,
			body: `my.cb_1$({"a":{"b":1},"c":"x"});`, header: map[string]string{"Content-Type": jsContentType}},
		{name: "bad callback", req: req{method: "GET", path: "/d.json?callback=alert(1)"}, status: 400,
			body: errBody("callback must be a JavaScript identifier matching ^[A-Za-z_$][A-Za-z0-9_$.]*$")},
		{name: "callback digit first", req: req{method: "GET", path: "/d.json?callback=1cb"}, status: 400,
			body: errBody("callback must be a JavaScript identifier matching ^[A-Za-z_$][A-Za-z0-9_$.]*$")},
		{name: "callback on PUT", req: req{method: "PUT", path: "/d.json?callback=cb", body: str(`1`)}, status: 400,
			body: errBody("Query parameter callback is only supported on GET requests")},
		// download
		{name: "download", req: req{method: "GET", path: "/d/c.json?download=backup.json"}, status: 200, body: `"x"`,
			header: map[string]string{"Content-Disposition": `attachment; filename="backup.json"`, "Content-Type": jsonContentType}},
		{name: "bad download", req: req{method: "GET", path: "/d.json?download=a%22b"}, status: 400,
			body: errBody("download must be a file name without quotes, backslashes or control characters")},
		// timeout
		{name: "timeout ms", req: req{method: "GET", path: "/d/c.json?timeout=5000ms"}, status: 200, body: `"x"`},
		{name: "timeout s", req: req{method: "GET", path: "/d/c.json?timeout=3s"}, status: 200, body: `"x"`},
		{name: "timeout 15min", req: req{method: "GET", path: "/d/c.json?timeout=15min"}, status: 200, body: `"x"`},
		{name: "timeout 16min", req: req{method: "GET", path: "/d/c.json?timeout=16min"}, status: 400, body: errBody(msgTimeout)},
		{name: "timeout 901s", req: req{method: "GET", path: "/d/c.json?timeout=901s"}, status: 400, body: errBody(msgTimeout)},
		{name: "timeout 0", req: req{method: "GET", path: "/d/c.json?timeout=0s"}, status: 400, body: errBody(msgTimeout)},
		{name: "timeout hours", req: req{method: "GET", path: "/d/c.json?timeout=1h"}, status: 400, body: errBody(msgTimeout)},
		{name: "timeout decimal", req: req{method: "GET", path: "/d/c.json?timeout=1.5s"}, status: 400, body: errBody(msgTimeout)},
		{name: "timeout negative", req: req{method: "GET", path: "/d/c.json?timeout=-1s"}, status: 400, body: errBody(msgTimeout)},
		// writeSizeLimit
		{name: "tiny limit, big body", req: req{method: "PUT", path: "/big.json?writeSizeLimit=tiny", body: str(big)},
			status: 413, body: errBody(tree.MsgWriteTooBig), tree: `{"d":{"a":{"b":1},"c":"x"}}`},
		{name: "small limit, big body", req: req{method: "PUT", path: "/big.json?writeSizeLimit=small", body: str(big)},
			status: 200, body: big},
		{name: "tiny limit, big delete", req: req{method: "DELETE", path: "/big.json?writeSizeLimit=tiny"},
			status: 413, body: errBody(tree.MsgWriteTooBig)},
		{name: "tiny limit, big PATCH delete", req: req{method: "PATCH", path: "/.json?writeSizeLimit=tiny", body: str(`{"big":null}`)},
			status: 413, body: errBody(tree.MsgWriteTooBig)},
		{name: "unlimited delete", req: req{method: "DELETE", path: "/big.json?writeSizeLimit=unlimited"}, status: 200, body: "null",
			tree: `{"d":{"a":{"b":1},"c":"x"}}`},
		{name: "bad limit", req: req{method: "PUT", path: "/big.json?writeSizeLimit=huge", body: str(`1`)}, status: 400,
			body: errBody("writeSizeLimit must be tiny, small, medium, large or unlimited")},
		// consistency
		{name: "local", req: req{method: "GET", path: "/d/c.json?consistency=local"}, status: 200, body: `"x"`},
		{name: "linearizable", req: req{method: "GET", path: "/d/c.json?consistency=linearizable"}, status: 200, body: `"x"`},
		{name: "bad consistency", req: req{method: "GET", path: "/d/c.json?consistency=eventual"}, status: 400,
			body: errBody("consistency must be linearizable or local")},
		// accepted for compatibility
		{name: "ignored parameters", req: req{method: "GET",
			path: "/d/c.json?ns=demo&ac=tok&disableTriggers=true&dryRun=false"},
			status: 200, body: `"x"`},
		{name: "firebase-tools delete", req: req{method: "PATCH",
			path: "/d/a.json?print=silent&writeSizeLimit=tiny&disableTriggers=true", body: str(`null`)},
			status: 204, body: "", tree: `{"d":{"c":"x"}}`},
		{name: "bad override JSON", req: req{method: "GET", path: "/d/c.json?auth_variable_override=%7Buid"}, status: 400,
			body: errBody("auth_variable_override must be a JSON object or null")},
		// a stream's query is checked like a GET's (streamquery_test.go has the served ones)
		{name: "streaming with a refused query", req: req{method: "GET", path: `/d.json?shallow=true&orderBy="$key"`, headers: map[string]string{"Accept": "text/event-stream"}},
			status: 400, body: errBody(MsgShallowMix)},
		{name: "rules", req: req{method: "GET", path: "/.settings/rules.json"}, status: 200,
			body: "{\n  \"rules\": {\n    \".read\": false,\n    \".write\": false\n  }\n}"},
		{name: "rules put", req: req{method: "PUT", path: "//.settings/rules.json", body: str(`{"rules":{}}`)}, status: 200,
			body: `{"status":"ok"}`, tree: `{"d":{"c":"x"}}`},
		{name: "other settings", req: req{method: "GET", path: "/.settings/limits.json"}, status: 400,
			body: errBody("Unknown settings path: only /.settings/rules.json exists")},
		{name: "rules non-admin", req: req{method: "GET", path: "/.settings/rules.json", anon: true}, status: 401,
			body: errBody("Permission denied")},
	})
}

const msgTimeout = "timeout must be a positive number followed by ms, s or min, at most 15min"

// TestWriteCommands checks the commands the handler builds: kinds, bodies,
// clock, randomness in 0..63 and write limits.
func TestWriteCommands(t *testing.T) {
	h := newHarness(t, nil, func(c *Config) {
		c.Rand = strings.NewReader(strings.Repeat("\xff", 12))
		c.DefaultWriteSizeLimit = "small"
	})
	h.do(req{method: "POST", path: "/p.json?writeSizeLimit=large", body: str(` {"a" : 1} `)})
	c := h.fsm.lastCommand(t)
	want := fsm.Command{Kind: fsm.CmdPush, Path: tree.Path{"p"}, Body: []byte(` {"a" : 1} `), Now: testNow.UnixMilli(),
		WriteLimit: 64 << 20}
	for i := range want.Rand {
		want.Rand[i] = 63
	}
	if want = parsed(t, want); string(c.Encode()) != string(want.Encode()) {
		t.Errorf("POST command %+v, want %+v", c, want)
	}
	checks := []struct {
		r    req
		want fsm.Command
	}{
		{req{method: "PUT", path: "/a/b.json", body: str(`[1]`), headers: map[string]string{"If-Match": "abc"}},
			fsm.Command{Kind: fsm.CmdSet, Path: tree.Path{"a", "b"}, Body: []byte(`[1]`), IfMatch: "abc", HasIfMatch: true,
				Now: testNow.UnixMilli(), WriteLimit: 1 << 20}},
		{req{method: "PATCH", path: "/a.json?writeSizeLimit=tiny", body: str(`{"b/c":1}`)},
			fsm.Command{Kind: fsm.CmdUpdate, Path: tree.Path{"a"}, Body: []byte(`{"b/c":1}`), Now: testNow.UnixMilli(), WriteLimit: 64 << 10}},
		{req{method: "PATCH", path: "/a.json", body: str(" null ")},
			fsm.Command{Kind: fsm.CmdSet, Path: tree.Path{"a"}, Now: testNow.UnixMilli(), WriteLimit: 1 << 20}},
		{req{method: "DELETE", path: "/a.json?writeSizeLimit=medium", body: str(`ignored`)},
			fsm.Command{Kind: fsm.CmdSet, Path: tree.Path{"a"}, Now: testNow.UnixMilli(), WriteLimit: 16 << 20}},
		{req{method: "PUT", path: "/a/.priority.json", body: str(`2`)},
			fsm.Command{Kind: fsm.CmdSet, Path: tree.Path{"a", ".priority"}, Body: []byte(`2`), Now: testNow.UnixMilli(), WriteLimit: 1 << 20}},
	}
	for _, ck := range checks {
		h.do(ck.r)
		if got, want := h.fsm.lastCommand(t), parsed(t, ck.want); string(got.Encode()) != string(want.Encode()) {
			t.Errorf("%s %s: command %+v, want %+v", ck.r.method, ck.r.path, got, ck.want)
		}
	}
}

// TestReadConsistency checks that ?consistency= and the configured default
// choose the read kind.
func TestReadConsistency(t *testing.T) {
	for _, tc := range []struct {
		def, param string
		want       bool
	}{
		{"", "", true},
		{ConsistencyLocal, "", false},
		{ConsistencyLocal, "linearizable", true},
		{ConsistencyLinearizable, "local", false},
	} {
		var mu sync.Mutex
		var got fsm.Read
		db := &fakeDB{read: func(_ context.Context, r fsm.Read) (fsm.ReadResult, error) {
			mu.Lock()
			got = r
			mu.Unlock()
			return fsm.ReadResult{Value: tree.Int(1)}, nil
		}}
		h := newHarness(t, db, func(c *Config) { c.DefaultConsistency = tc.def })
		path := "/a/b.json"
		if tc.param != "" {
			path += "?consistency=" + tc.param
		}
		if r := h.get(path); r.status != 200 || r.body != "1" {
			t.Fatalf("%+v: %d %q", tc, r.status, r.body)
		}
		mu.Lock()
		if got.Linearizable != tc.want || got.Path.String() != "/a/b" {
			t.Errorf("%+v: read %+v", tc, got)
		}
		mu.Unlock()
	}
}

// TestTimeouts checks that a read slower than ?timeout= is a 400 and that a
// read or write slower than WriteTimeout is a 503 with Retry-After.
func TestTimeouts(t *testing.T) {
	block := func(ctx context.Context) error {
		<-ctx.Done()
		return ctx.Err()
	}
	db := &fakeDB{
		read: func(ctx context.Context, _ fsm.Read) (fsm.ReadResult, error) { return fsm.ReadResult{}, block(ctx) },
		propose: func(ctx context.Context, _ fsm.Command) (fsm.Answer, error) {
			return fsm.Answer{}, block(ctx)
		},
	}
	h := newHarness(t, db, func(c *Config) { c.WriteTimeout = 200 * time.Millisecond })
	r := h.get("/a.json?timeout=20ms")
	if r.status != 400 || r.body != errBody("The read did not finish within the requested timeout") {
		t.Errorf("read past ?timeout=: %d %q", r.status, r.body)
	}
	for _, rq := range []req{
		{method: "GET", path: "/a.json"},
		{method: "GET", path: "/a.json?timeout=1s"},
		{method: "PUT", path: "/a.json", body: str(`1`)},
	} {
		r := h.do(rq)
		if r.status != http.StatusServiceUnavailable || r.body != errBody("Service unavailable: timeout") ||
			r.header.Get("Retry-After") != "1" {
			t.Errorf("%s %s past WriteTimeout: %d %q %v", rq.method, rq.path, r.status, r.body, r.header)
		}
	}
}
