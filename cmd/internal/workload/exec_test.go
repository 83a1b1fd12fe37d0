package workload

import (
	"context"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arbordb/arbor/cmd/internal/client"
	"github.com/arbordb/arbor/cmd/internal/history"
)

// node is the name the httptest certificate carries.
const node = "example.com"

// fakeArbor answers like an arbor node for the few requests the tests
// make; handler decides per request.
func fakeArbor(t *testing.T, handler http.HandlerFunc) (*Exec, *httptest.Server) {
	t.Helper()
	srv := httptest.NewTLSServer(handler)
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	cl := client.New(client.Config{
		Endpoints: []client.Endpoint{{Node: node, Addr: srv.Listener.Addr().String()}},
		CA:        pool,
		Secret:    "s3cret",
		Timeout:   2 * time.Second,
	})
	t.Cleanup(cl.Close)
	return &Exec{Client: cl, Recorder: history.NewRecorder(), ID: 3}, srv
}

func TestExecRecordsOutcomes(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	e, _ := fakeArbor(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.String()+" "+string(body)+" if-match="+r.Header.Get("if-match")+" auth="+r.Header.Get("Authorization"))
		mu.Unlock()
		switch {
		case r.URL.Path == "/reg/a.json" && r.Method == "GET":
			w.Header().Set("ETag", "E1")
			io.WriteString(w, `"c1-1"`)
		case r.URL.Path == "/reg/a.json" && r.Header.Get("if-match") == "stale":
			w.Header().Set("ETag", "E1")
			w.WriteHeader(412)
			io.WriteString(w, `"c1-1"`)
		case r.URL.Path == "/reg/a.json":
			io.WriteString(w, string(body))
		case r.URL.Path == "/reg/busy.json":
			w.WriteHeader(503)
			io.WriteString(w, "{\n  \"error\" : \"Service unavailable: no leader\"\n}\n")
		case r.URL.Path == "/ctr/a.json":
			io.WriteString(w, "7")
		case r.URL.Path == "/list/a.json" && r.Method == "POST":
			io.WriteString(w, `{"name":"-AAAAAAAAAAAAAAAAAAA"}`)
		case r.URL.Path == "/list/a.json":
			io.WriteString(w, `{"-B":"second","-A":"first"}`) // the node's key order, kept as sent
		default:
			w.WriteHeader(400)
			io.WriteString(w, "{\n  \"error\" : \"Invalid path: Invalid token in path\"\n}\n")
		}
	})
	ctx := context.Background()

	r := e.Read(ctx, node, "reg/a", history.Register, false, false)
	if r.Outcome != history.OK || r.Out != `"c1-1"` || r.ETag != "E1" || r.Local || r.Client != 3 || r.Return < r.Call {
		t.Errorf("read: %+v", r)
	}
	if r := e.Read(ctx, node, "reg/a", history.Register, true, false); !r.Local {
		t.Errorf("local read not marked local: %+v", r)
	}
	if r := e.Read(ctx, node, "reg/a", history.Register, true, true); r.Local {
		t.Errorf("judged local read marked local: %+v", r)
	}
	if w := e.Write(ctx, node, "reg/a", `"c3-1"`); w.Outcome != history.OK || w.Value != `"c3-1"` {
		t.Errorf("write: %+v", w)
	}
	if c := e.CAS(ctx, node, "reg/a", `"c0-9"`, "stale", `"c3-2"`); c.Outcome != history.Rejected || c.Out != `"c1-1"` || c.ETag != "E1" {
		t.Errorf("rejected cas: %+v", c)
	}
	if c := e.CAS(ctx, node, "reg/a", `"c1-1"`, "E1", `"c3-3"`); c.Outcome != history.OK || c.Expect != `"c1-1"` {
		t.Errorf("cas: %+v", c)
	}
	if b := e.Write(ctx, node, "reg/busy", `"c3-4"`); b.Outcome != history.Unknown || b.Status != 503 || b.Error != "Service unavailable: no leader" {
		t.Errorf("503: %+v", b)
	}
	if d := e.Delete(ctx, node, "reg/gone"); d.Outcome != history.Fail || d.Status != 400 || d.Value != history.Null {
		t.Errorf("400: %+v", d)
	}
	if i := e.Incr(ctx, node, "ctr/a", 4); i.Outcome != history.OK || i.OutNum != 7 || i.Delta != 4 {
		t.Errorf("incr: %+v", i)
	}
	if a := e.Append(ctx, node, "list/a", "c3-5"); a.Outcome != history.OK || a.Name != "-AAAAAAAAAAAAAAAAAAA" {
		t.Errorf("append: %+v", a)
	}
	l := e.Read(ctx, node, "list/a", history.List, false, false)
	want := []history.Item{{Name: "-B", Value: "second"}, {Name: "-A", Value: "first"}}
	if !slices.Equal(l.Items, want) {
		t.Errorf("list read %+v, want the items in the order sent %+v", l.Items, want)
	}

	ops := e.Recorder.Ops()
	if len(ops) != 11 {
		t.Fatalf("%d operations recorded, want 11", len(ops))
	}
	for i, op := range ops {
		if op.ID != i {
			t.Errorf("op %d has id %d", i, op.ID)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, s := range seen {
		if !strings.HasSuffix(s, "auth=Bearer s3cret") {
			t.Errorf("request without the admin secret: %s", s)
		}
	}
	wantSeen := []string{
		`GET /reg/a.json?consistency=local`,
		`PUT /reg/a.json "c3-2" if-match=stale`,
		`PUT /ctr/a.json {".sv":{"increment":4}}`,
		`POST /list/a.json "c3-5"`,
	}
	for _, w := range wantSeen {
		if !slices.ContainsFunc(seen, func(s string) bool { return strings.HasPrefix(s, w) }) {
			t.Errorf("no request %s in %q", w, seen)
		}
	}
}

// TestExecRefusedConnectionIsAFailure: a refused connection proves the
// request never ran; a connection cut after the request was sent does not.
func TestExecRefusedConnectionIsAFailure(t *testing.T) {
	e, srv := fakeArbor(t, func(w http.ResponseWriter, r *http.Request) {
		// Take the request, then drop the connection without answering.
		hj, _ := w.(http.Hijacker)
		conn, _, _ := hj.Hijack()
		conn.Close()
	})
	ctx := context.Background()
	if w := e.Write(ctx, node, "reg/a", `"c3-1"`); w.Outcome != history.Unknown || w.Error == "" {
		t.Errorf("dropped connection: %+v", w)
	}
	// Nothing listens on the port once the server is closed: the dial is
	// refused.
	srv.Close()
	if w := e.Write(ctx, node, "reg/a", `"c3-2"`); w.Outcome != history.Fail {
		t.Errorf("refused connection: %+v", w)
	}
}

func TestParseValue(t *testing.T) {
	cases := []struct {
		kind history.Kind
		body string
		want history.Op
	}{
		{history.Counter, "null", history.Op{Out: "null", OutNum: 0}},
		{history.Counter, "12\n", history.Op{Out: "12", OutNum: 12}},
		{history.Counter, "1.5", history.Op{Out: "1.5", Error: "unexpected body: not an integer"}},
		{history.Register, `"x"`, history.Op{Out: `"x"`}},
		{history.Register, `7`, history.Op{Out: `7`, Error: "unexpected body: not a string or null"}},
		{history.List, `null`, history.Op{}},
		{history.List, `[1]`, history.Op{Out: `[1]`, Error: "unexpected body: not an object"}},
	}
	for _, c := range cases {
		op := history.Op{Kind: c.kind}
		parseValue(&op, []byte(c.body))
		if op.Out != c.want.Out || op.OutNum != c.want.OutNum || op.Error != c.want.Error || len(op.Items) != 0 {
			t.Errorf("%s %s: %+v, want %+v", c.kind, c.body, op, c.want)
		}
	}
}

func TestKindOf(t *testing.T) {
	for key, want := range map[string]history.Kind{"reg/g0/k1": history.Register, "ctr/g2/k0": history.Counter, "list/g1/k1": history.List, "other/x": "", "reg": ""} {
		if got, _ := KindOf(key); got != want {
			t.Errorf("KindOf(%q) = %q, want %q", key, got, want)
		}
	}
}

// TestRunRecordsEveryOperationUntilDone runs the real workload against a
// fake node for a moment: every kind of operation shows up, each client
// writes unique values, and Run returns once its context ends.
func TestRunRecordsEveryOperationUntilDone(t *testing.T) {
	_, srv := fakeArbor(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == "POST":
			io.WriteString(w, `{"name":"-AAAAAAAAAAAAAAAAAAA"}`)
		case strings.HasPrefix(r.URL.Path, "/ctr/"):
			io.WriteString(w, "1")
		case strings.HasPrefix(r.URL.Path, "/list/") && r.Method == "GET":
			io.WriteString(w, "null")
		case r.Method == "GET":
			w.Header().Set("ETag", "null_etag")
			io.WriteString(w, "null")
		default:
			b, _ := io.ReadAll(r.Body)
			w.Write(b)
		}
	})
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	cfg := DefaultConfig()
	cfg.Clients, cfg.Roaming, cfg.Rate = 3, 1, 0
	cfg.Nodes = []string{node}
	cfg.Client = client.Config{Endpoints: []client.Endpoint{{Node: node, Addr: srv.Listener.Addr().String()}}, CA: pool, Timeout: 2 * time.Second}
	rec := history.NewRecorder()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := Run(ctx, cfg, rec); err != nil {
		t.Fatal(err)
	}
	ops := rec.Ops()
	types := map[history.Type]bool{}
	values := map[string]int{}
	for _, op := range ops {
		types[op.Type] = true
		if op.Type != history.Read && op.Type != history.Delete && op.Type != history.Incr {
			values[op.Value]++
		}
		if k, ok := KindOf(op.Key); !ok || k != op.Kind {
			t.Errorf("op %+v: key and kind disagree", op)
		}
	}
	if len(types) != 6 {
		t.Errorf("%d operations of types %v; want all six", len(ops), types)
	}
	for v, n := range values {
		if n > 1 {
			t.Errorf("value %s written %d times", v, n)
		}
	}
}

// TestExecPatchWritesTheParent: a PATCH write sends the key as the one
// field of its parent and is recorded as a write of the key.
func TestExecPatchWritesTheParent(t *testing.T) {
	var got string
	e, _ := fakeArbor(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got = r.Method + " " + r.URL.Path + " " + string(body)
		io.WriteString(w, string(body))
	})
	op := e.Patch(context.Background(), node, "reg/g0/k1", `"c3-9"`)
	if got != `PATCH /reg/g0.json {"k1":"c3-9"}` {
		t.Errorf("request %q", got)
	}
	if op.Outcome != history.OK || op.Type != history.Write || !op.Patch || op.Key != "reg/g0/k1" || op.Value != `"c3-9"` {
		t.Errorf("recorded %+v", op)
	}
}
