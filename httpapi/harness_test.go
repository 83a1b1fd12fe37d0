package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

// adminSecret is the admin token of test servers.
const adminSecret = "s3cret-admin"

// testNow is the injected clock of test servers: 2023-11-14T22:13:20Z.
var testNow = time.UnixMilli(1700000000000)

// fsmDB is a DB that applies commands to a real fsm.FSM in-process, so tests
// see the real semantics of writes and reads.
type fsmDB struct {
	mu       sync.Mutex
	f        *fsm.FSM
	index    uint64
	commands []fsm.Command
	// holdIndexes leaves the indexes new rules declare unbuilt (their
	// queries scan); otherwise each proposal builds them before it
	// returns, as a node's builder soon does.
	holdIndexes bool
}

func newFSMDB() *fsmDB { return &fsmDB{f: fsm.New()} }

func (d *fsmDB) Read(_ context.Context, r fsm.Read) (fsm.ReadResult, error) {
	return d.f.ReadAs(r)
}

func (d *fsmDB) Judge(_ context.Context, c *fsm.Command, _ bool) error { return d.f.Judge(c) }

// Propose applies c as the leader would: as its log entry and its
// answer rendered as cluster renders it (answerFor).
func (d *fsmDB) Propose(_ context.Context, c fsm.Command, o fsm.AnswerOptions) (fsm.Answer, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.index++
	d.commands = append(d.commands, c)
	data := c.Encode()
	ar := d.f.Apply(fsm.Entry{Index: d.index, Command: true, Data: data})
	if ar == nil {
		return fsm.Answer{}, fmt.Errorf("apply of command %d answered nothing", d.index)
	}
	if !d.holdIndexes {
		if err := d.f.BuildIndexes(context.Background()); err != nil {
			return fsm.Answer{}, err
		}
	}
	return answerFor(fsm.AnswerKind(data), ar.Result, ar.Err, o)
}

// answerFor renders a write's answer as cluster's leader does
// (cluster/answer.go), which httpapi cannot import: the answer, or err
// with a failed if-match's current value left for writeError to render.
func answerFor(kind fsm.CommandKind, res fsm.Result, err error, o fsm.AnswerOptions) (fsm.Answer, error) {
	if err != nil {
		return fsm.Answer{}, err
	}
	ro := tree.RenderOptions{Pretty: o.Pretty}
	a := fsm.Answer{ETag: res.ETag, Index: res.Index}
	if o.Delete {
		a.ETag = (*tree.Node)(nil).ETag()
	}
	switch {
	case o.Silent:
	case kind == fsm.CmdPush:
		b := tree.NewObjectBuilder()
		b.Set("name", tree.String(res.Name))
		a.Body = tree.AppendJSON(nil, b.Build(nil), ro)
	case o.Delete:
		a.Body = tree.AppendJSON(nil, nil, ro)
	case kind == fsm.CmdUpdate && res.Fields != nil:
		a.Body = tree.AppendFields(nil, res.Fields, ro)
	default:
		a.Body = tree.AppendJSON(nil, res.Value, ro)
	}
	return a, nil
}

func (d *fsmDB) Ready(context.Context) error { return nil }

func (d *fsmDB) Status(context.Context) (any, error) {
	return map[string]any{"id": "node-1", "role": "leader", "applied": d.f.AppliedIndex()}, nil
}

// lastCommand returns the last proposed command.
func (d *fsmDB) lastCommand(t *testing.T) fsm.Command {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.commands) == 0 {
		t.Fatal("no command was proposed")
	}
	return d.commands[len(d.commands)-1]
}

// proposed returns how many commands were proposed.
func (d *fsmDB) proposed() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.commands)
}

// fakeDB is a DB made of function fields, for error paths; nil fields
// succeed with zero values.
type fakeDB struct {
	read    func(context.Context, fsm.Read) (fsm.ReadResult, error)
	propose func(context.Context, fsm.Command) (fsm.Answer, error)
	ready   func(context.Context) error
	status  func(context.Context) (any, error)
	judge   func(context.Context, *fsm.Command, bool) error
}

func (d *fakeDB) Judge(ctx context.Context, c *fsm.Command, fresh bool) error {
	if d.judge == nil {
		return nil
	}
	return d.judge(ctx, c, fresh)
}

func (d *fakeDB) Read(ctx context.Context, r fsm.Read) (fsm.ReadResult, error) {
	if d.read == nil {
		return fsm.ReadResult{}, nil
	}
	return d.read(ctx, r)
}

func (d *fakeDB) Propose(ctx context.Context, c fsm.Command, _ fsm.AnswerOptions) (fsm.Answer, error) {
	if d.propose == nil {
		return fsm.Answer{}, nil
	}
	return d.propose(ctx, c)
}

func (d *fakeDB) Ready(ctx context.Context) error {
	if d.ready == nil {
		return nil
	}
	return d.ready(ctx)
}

func (d *fakeDB) Status(ctx context.Context) (any, error) {
	if d.status == nil {
		return map[string]string{}, nil
	}
	return d.status(ctx)
}

// seqReader is a deterministic randomness source: 0, 1, 2, … (mod 256).
type seqReader struct {
	mu   sync.Mutex
	next byte
}

func (r *seqReader) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range p {
		p[i] = r.next
		r.next++
	}
	return len(p), nil
}

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// harness is a Server on a loopback httptest server.
type harness struct {
	t    testing.TB
	s    *Server
	ts   *httptest.Server
	db   DB
	fsm  *fsmDB // when db is an fsmDB
	logs *syncBuffer
	reg  *prometheus.Registry
}

// testConfig is the configuration of test servers: one admin secret, an
// injected clock and randomness, logs captured.
func testConfig(logs *syncBuffer, reg *prometheus.Registry) Config {
	cfg := DefaultConfig()
	cfg.AdminSecrets = []string{adminSecret, "second-admin"}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg.Now = func() time.Time { return testNow }
	cfg.Rand = &seqReader{}
	cfg.Registerer = reg
	cfg.Gatherer = reg
	return cfg
}

// newHarness starts a server over db (a fresh fsmDB when nil); edit may
// change the configuration.
func newHarness(t testing.TB, db DB, edit func(*Config)) *harness {
	t.Helper()
	h := &harness{t: t, logs: &syncBuffer{}, reg: prometheus.NewRegistry()}
	if db == nil {
		h.fsm = newFSMDB()
		db = h.fsm
	}
	h.db = db
	cfg := testConfig(h.logs, h.reg)
	if edit != nil {
		edit(&cfg)
	}
	s, err := New(cfg, db)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.s = s
	if h.fsm != nil {
		h.fsm.f.SetEventSink(s.PublishEvents)
	}
	h.ts = httptest.NewServer(s.Handler())
	t.Cleanup(h.ts.Close)
	return h
}

// response is what a request got.
type response struct {
	status int
	header http.Header
	body   string
}

// req is one request. Unless anon is set or headers name an Authorization,
// it carries the admin secret as a Bearer token.
type req struct {
	method  string
	path    string // path and query, e.g. "/users/jack.json?print=pretty"
	headers map[string]string
	body    *string // nil: no body
	anon    bool
}

// str makes a request body.
func str(s string) *string { return &s }

func (h *harness) do(r req) response {
	h.t.Helper()
	var body io.Reader
	if r.body != nil {
		body = strings.NewReader(*r.body)
	}
	hr, err := http.NewRequest(r.method, h.ts.URL+r.path, body)
	if err != nil {
		h.t.Fatalf("NewRequest(%s %s): %v", r.method, r.path, err)
	}
	if !r.anon {
		hr.Header.Set("Authorization", "Bearer "+adminSecret)
	}
	for k, v := range r.headers {
		if v == "" {
			hr.Header.Del(k)
			continue
		}
		hr.Header.Set(k, v)
	}
	resp, err := http.DefaultTransport.RoundTrip(hr)
	if err != nil {
		h.t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatalf("%s %s: read body: %v", r.method, r.path, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// get is an admin GET of path.
func (h *harness) get(path string) response {
	h.t.Helper()
	return h.do(req{method: http.MethodGet, path: path})
}

// tree returns the whole database as compact JSON.
func (h *harness) tree() string {
	h.t.Helper()
	r := h.get("/.json")
	if r.status != http.StatusOK {
		h.t.Fatalf("GET /.json: %d %s", r.status, r.body)
	}
	return r.body
}

// step is one request of a sequential table test and what must follow.
type step struct {
	name   string
	req    req
	status int
	body   string            // exact response body
	header map[string]string // exact response headers ("" means absent)
	tree   string            // the whole tree after the step ("" skips the check)
}

// run executes steps in order, checking each answer and then the tree.
func (h *harness) run(steps []step) {
	h.t.Helper()
	for i, st := range steps {
		r := h.do(st.req)
		where := fmt.Sprintf("step %d %q (%s %s)", i, st.name, st.req.method, st.req.path)
		if r.status != st.status {
			h.t.Errorf("%s: status %d, want %d; body %q", where, r.status, st.status, r.body)
		}
		if r.body != st.body {
			h.t.Errorf("%s: body\n got %q\nwant %q", where, r.body, st.body)
		}
		for k, want := range st.header {
			if got := r.header.Get(k); got != want {
				h.t.Errorf("%s: header %s = %q, want %q", where, k, got, want)
			}
		}
		if st.tree != "" {
			if got := h.tree(); got != st.tree {
				h.t.Errorf("%s: tree\n got %s\nwant %s", where, got, st.tree)
			}
		}
	}
}

// errBody is SPEC §6's error body for msg (msg must need no escaping).
func errBody(msg string) string { return "{\n  \"error\" : \"" + msg + "\"\n}\n" }

// pushChars is the push key alphabet (SPEC §2).
const pushChars = "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz"

// pushKey is the key of a first push at ms with random digits rnd.
func pushKey(ms int64, rnd [12]byte) string {
	var b [20]byte
	for i := 7; i >= 0; i-- {
		b[i] = pushChars[ms%64]
		ms /= 64
	}
	for i, r := range rnd {
		b[8+i] = pushChars[r]
	}
	return string(b[:])
}

var errBoom = errors.New("boom: disk on fire")

// parsed is c with its JSON Body parsed into Value or Fields, as the
// handlers parse a request's body: a write's log entry carries them.
func parsed(tb testing.TB, c fsm.Command) fsm.Command {
	tb.Helper()
	var err error
	switch c.Kind {
	case fsm.CmdUpdate:
		c.Fields, err = tree.ParseUpdate(c.Body, tree.MaxDepth-len(c.Path))
	case fsm.CmdSet, fsm.CmdPush:
		if len(c.Body) > 0 {
			c.Value, err = tree.ParseBody(c.Body, tree.MaxDepth-len(c.Path))
		}
	default:
		return c
	}
	if err != nil {
		tb.Fatalf("parse %s: %v", c.Body, err)
	}
	c.Parsed = true
	return c
}
