package httpapi

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
	"github.com/arbordb/arbor/httpapi/ssetest"
)

// openStreamAs opens a stream on path with auth as its bearer token ("":
// none) and fails unless it answers 200 with an event stream.
func openStreamAs(t *testing.T, h *harness, path, auth string, headers map[string]string) *sseStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", h.ts.URL+path, nil)
	req.Header.Set("Accept", "text/event-stream")
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := h.ts.Client().Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream; charset=utf-8" {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		t.Fatalf("stream %s: %d %s %s", path, resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	s := &sseStream{t: t, resp: resp, r: bufio.NewReader(resp.Body), frames: make(chan string, 100), cancel: cancel}
	go s.read()
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	return s
}

// qPath is a stream or GET path with the query parameters of raw (name=value
// pairs separated by &, values not yet escaped).
func qPath(path, raw string) string {
	if raw == "" {
		return path
	}
	var parts []string
	for _, kv := range strings.Split(raw, "&") {
		name, value, _ := strings.Cut(kv, "=")
		parts = append(parts, name+"="+url.QueryEscape(value))
	}
	return path + "?" + strings.Join(parts, "&")
}

// putAt and patchAt are the frames a test expects, with data as JSON text.
func putAt(data string) string   { return `put {"path":"/","data":` + data + `}` }
func patchAt(data string) string { return `patch {"path":"/","data":` + data + `}` }

// queryStep is one write and the frames the query stream must send for it
// (none when the window did not change).
type queryStep struct {
	write  req
	frames []string
}

// putReq, patchReq and delReq are admin writes.
func putReq(path, body string) req   { return req{method: "PUT", path: path, body: str(body)} }
func patchReq(path, body string) req { return req{method: "PATCH", path: path, body: str(body)} }
func delReq(path string) req         { return req{method: "DELETE", path: path} }

// TestStreamQueryFrames runs, for each query, a series of writes and checks
// every frame of a stream with that query: the initial put is the GET's
// answer, each write sends exactly the change of the window (or nothing),
// and at the end the client's copy equals the GET again. A step without
// frames is always followed by one with frames, so a frame that should not
// have been sent is caught.
func TestStreamQueryFrames(t *testing.T) {
	cases := []struct {
		name  string
		setup string // the value of /l
		query string
		first string // the initial put's data
		steps []queryStep
	}{{
		name:  "limitToLast pushes a child out",
		setup: `{"a":{"n":1},"b":{"n":2},"c":{"n":3}}`,
		query: `orderBy="n"&limitToLast=2`,
		first: `{"b":{"n":2},"c":{"n":3}}`,
		steps: []queryStep{
			{putReq("/l/d.json", `{"n":4}`), []string{patchAt(`{"d":{"n":4},"b":null}`)}},
			{putReq("/l/a/n.json", `0`), nil}, // outside the window
			{putReq("/l/c/n.json", `0`), []string{patchAt(`{"b":{"n":2},"c":null}`)}},
			{delReq("/l/d.json"), []string{patchAt(`{"c":{"n":0},"d":null}`)}},
			{putReq("/l/b/n.json", `7`), []string{patchAt(`{"b":{"n":7}}`)}},
			{delReq("/l.json"), []string{putAt(`null`)}},
			{putReq("/l/x.json", `{"n":1}`), []string{putAt(`{"x":{"n":1}}`)}},
		},
	}, {
		name:  "orderBy a child: a value change reorders",
		setup: `{"a":{"s":1},"b":{"s":2},"c":{"s":3}}`,
		query: `orderBy="s"&limitToFirst=2`,
		first: `{"a":{"s":1},"b":{"s":2}}`,
		steps: []queryStep{
			{putReq("/l/c/s.json", `0`), []string{patchAt(`{"c":{"s":0},"b":null}`)}},
			{putReq("/l/a/s.json", `5`), []string{patchAt(`{"b":{"s":2},"a":null}`)}},
			{putReq("/l/b/t.json", `true`), []string{patchAt(`{"b":{"s":2,"t":true}}`)}},
			{putReq("/l/a/s.json", `"x"`), nil}, // strings sort after numbers
			{putReq("/l/a/s.json", `-1`), []string{patchAt(`{"a":{"s":-1},"b":null}`)}},
		},
	}, {
		name:  "orderBy a deeper child path, no limit",
		setup: `{"a":{"p":{"q":2}},"b":{"p":{"q":5}},"c":1}`,
		query: `orderBy="p/q"&startAt=2&endBefore=5`,
		first: `{"a":{"p":{"q":2}}}`,
		steps: []queryStep{
			{putReq("/l/b/p/q.json", `4`), []string{patchAt(`{"b":{"p":{"q":4}}}`)}},
			{putReq("/l/a/p.json", `7`), []string{patchAt(`{"a":null}`)}},
			{putReq("/l/c.json", `{"p":{"q":3}}`), []string{patchAt(`{"c":{"p":{"q":3}}}`)}},
		},
	}, {
		name:  "equalTo",
		setup: `{"a":{"c":"red"},"b":{"c":"blue"}}`,
		query: `orderBy="c"&equalTo="red"`,
		first: `{"a":{"c":"red"}}`,
		steps: []queryStep{
			{putReq("/l/b/c.json", `"red"`), []string{patchAt(`{"b":{"c":"red"}}`)}},
			{putReq("/l/a/c.json", `"green"`), []string{patchAt(`{"a":null}`)}},
			{putReq("/l/a/x.json", `1`), nil},
			// A multi-path PATCH at the location: one frame for the entry.
			{patchReq("/l.json", `{"b/c":"blue","a/c":"red","z":{"c":"red"}}`), []string{patchAt(`{"a":{"c":"red","x":1},"z":{"c":"red"},"b":null}`)}},
			{delReq("/l/a.json"), []string{patchAt(`{"a":null}`)}},
			{delReq("/l/z.json"), []string{putAt(`null`)}},
		},
	}, {
		name:  "writes above the location",
		setup: `{"a":1,"b":2}`,
		query: `orderBy="$key"&startAt="b"`,
		first: `{"b":2}`,
		steps: []queryStep{
			{putReq("/.json", `{"l":{"a":1,"b":2,"c":3},"m":1}`), []string{patchAt(`{"c":3}`)}},
			{patchReq("/.json", `{"l/a":5,"m":2}`), nil}, // a field in the location, outside the window
			{patchReq("/.json", `{"l/d":4,"l/b":null,"m":3}`), []string{patchAt(`{"d":4,"b":null}`)}},
			{patchReq("/.json", `{"l":{"e":true}}`), []string{patchAt(`{"e":true,"c":null,"d":null}`)}},
			{putReq("/.json", `{"m":2}`), []string{putAt(`null`)}},
			{putReq("/.json", `{"l":{"b":"x"}}`), []string{putAt(`{"b":"x"}`)}},
		},
	}, {
		name:  "orderBy value with limitToLast",
		setup: `{"a":3,"b":1,"c":2}`,
		query: `orderBy="$value"&limitToLast=2`,
		first: `{"c":2,"a":3}`,
		steps: []queryStep{
			{patchReq("/l.json", `{"b":10,"d":0}`), []string{patchAt(`{"b":10,"c":null}`)}},
			{putReq("/l/a.json", `{"o":1}`), []string{patchAt(`{"a":{"o":1}}`)}}, // objects sort last
			{putReq("/l/a.json", `"s"`), []string{patchAt(`{"a":"s"}`)}},
		},
	}, {
		name:  "orderBy priority",
		setup: `{"a":{".value":1,".priority":3},"b":{".value":2,".priority":1}}`,
		query: `orderBy="$priority"&limitToFirst=1`,
		first: `{"b":2}`,
		steps: []queryStep{
			{putReq("/l/a/.priority.json", `0`), []string{patchAt(`{"a":1,"b":null}`)}},
			{putReq("/l/b.json", `{".value":2,".priority":-1}`), []string{patchAt(`{"b":2,"a":null}`)}},
		},
	}, {
		name:  "a location that is not an object",
		setup: `5`,
		query: `orderBy="$key"`,
		first: `5`,
		steps: []queryStep{
			{putReq("/l.json", `6`), []string{putAt(`6`)}},
			{putReq("/l.json", `6`), nil},
			{putReq("/l/a.json", `1`), []string{putAt(`{"a":1}`)}},
			{putReq("/l/b.json", `2`), []string{patchAt(`{"b":2}`)}},
			{putReq("/l.json", `"s"`), []string{putAt(`"s"`)}},
		},
	}, {
		name:  "arrays are rendered as a GET renders them",
		setup: `["x","y"]`,
		query: `orderBy="$key"&limitToFirst=3`,
		first: `["x","y"]`,
		steps: []queryStep{
			{putReq("/l/2.json", `"z"`), []string{patchAt(`{"2":"z"}`)}},
			{putReq("/l/3.json", `"w"`), nil},
			{delReq("/l/0.json"), []string{patchAt(`{"3":"w","0":null}`)}},
		},
	}, {
		name:  "shallow",
		setup: `{"a":{"x":1},"b":2}`,
		query: `shallow=true`,
		first: `{"a":true,"b":true}`,
		steps: []queryStep{
			{putReq("/l/a/x.json", `2`), nil},
			{putReq("/l/c.json", `{"y":1}`), []string{patchAt(`{"c":true}`)}},
			{delReq("/l/b.json"), []string{patchAt(`{"b":null}`)}},
			{putReq("/l.json", `7`), []string{putAt(`7`)}},
		},
	}, {
		name:  "shallow with a limit pages in key order",
		setup: `{"a":1,"b":2,"c":3}`,
		query: `shallow=true&limitToFirst=2`,
		first: `{"a":true,"b":true}`,
		steps: []queryStep{
			{putReq("/l/b.json", `20`), nil},
			{delReq("/l/a.json"), []string{patchAt(`{"c":true,"a":null}`)}},
			{putReq("/l/0.json", `0`), []string{patchAt(`{"0":true,"c":null}`)}},
		},
	}, {
		name:  "writes elsewhere send nothing",
		setup: `{"a":1}`,
		query: `orderBy="$key"`,
		first: `{"a":1}`,
		steps: []queryStep{
			{putReq("/m.json", `1`), nil},
			{putReq("/lx.json", `1`), nil},
			{patchReq("/.json", `{"m":2,"n/o":3}`), nil},
			{putReq("/l/b.json", `2`), []string{patchAt(`{"b":2}`)}},
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil, nil)
			if r := h.do(putReq("/l.json", tc.setup)); r.status != 200 {
				t.Fatalf("setup: %d %s", r.status, r.body)
			}
			path := qPath("/l.json", tc.query)
			if got := h.get(path).body; got != tc.first {
				t.Fatalf("GET %s = %s, want %s", path, got, tc.first)
			}
			s := openStream(t, h, path)
			s.want(putAt(tc.first))
			var frames []string
			frames = append(frames, putAt(tc.first))
			for i, st := range tc.steps {
				if r := h.do(st.write); r.status != 200 {
					t.Fatalf("step %d %s %s: %d %s", i, st.write.method, st.write.path, r.status, r.body)
				}
				for _, w := range st.frames {
					if got := s.next(); got != w {
						t.Fatalf("step %d %s %s %s: frame\n got %s\nwant %s", i, st.write.method, st.write.path, strOr(st.write.body), got, w)
					}
					frames = append(frames, w)
				}
			}
			held := clientCopy(t, frames)
			if want := decodeNormal(t, h.get(path).body); !reflect.DeepEqual(held, want) {
				t.Fatalf("the client's copy %v, GET %v", held, want)
			}
		})
	}
}

func strOr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// TestStreamQueryMatchesGETUnderRandomWrites: several query streams on one
// location through random writes at, below and above it; after each write
// every stream's copy, built from its frames as a client builds it, must
// equal the GET with the same query.
func TestStreamQueryMatchesGETUnderRandomWrites(t *testing.T) {
	h := newHarness(t, nil, nil)
	queries := []string{
		`orderBy="n"&limitToLast=3`,
		`orderBy="n"&limitToFirst=2&startAfter=1`,
		`orderBy="n"&startAt=2&endAt=6`,
		`orderBy="n"&equalTo=3`,
		`orderBy="$key"&startAfter="b"&limitToFirst=2`,
		`orderBy="$key"&endAt="c"`,
		`orderBy="$value"&limitToFirst=2`,
		`orderBy="$priority"&limitToLast=2`,
		`orderBy="p/q"&endBefore=5`,
		`shallow=true`,
		`shallow=true&limitToLast=2`,
	}
	type watcher struct {
		path   string
		s      *sseStream
		frames []string
	}
	var ws []*watcher
	for _, q := range queries {
		p := qPath("/r.json", q)
		w := &watcher{path: p, s: openStream(t, h, p)}
		w.frames = append(w.frames, w.s.next())
		ws = append(ws, w)
	}
	rnd := rand.New(rand.NewPCG(15, 1))
	keys := []string{"a", "b", "c", "d", "e", "f"}
	key := func() string { return keys[rnd.IntN(len(keys))] }
	child := func() string {
		switch rnd.IntN(4) {
		case 0:
			return fmt.Sprint(rnd.IntN(8))
		case 1:
			return fmt.Sprintf(`{".value":%d,".priority":%d}`, rnd.IntN(8), rnd.IntN(4))
		case 2:
			return fmt.Sprintf(`{"p":{"q":%d}}`, rnd.IntN(8))
		}
		return fmt.Sprintf(`{"n":%d,"m":"%s"}`, rnd.IntN(8), key())
	}
	for i := range 150 {
		var w req
		switch op := rnd.IntN(20); {
		case op < 6:
			w = putReq("/r/"+key()+".json", child())
		case op < 9:
			w = putReq("/r/"+key()+"/n.json", fmt.Sprint(rnd.IntN(8)))
		case op < 11:
			w = delReq("/r/" + key() + ".json")
		case op < 14:
			k1, k2 := key(), key()
			for k2 == k1 {
				k2 = key()
			}
			w = patchReq("/r.json", fmt.Sprintf(`{"%s":%s,"%s/n":%d,"x%d":null}`, k1, child(), k2, rnd.IntN(8), rnd.IntN(3)))
		case op < 15:
			w = req{method: "POST", path: "/r.json", body: str(child())}
		case op < 16:
			w = patchReq("/.json", fmt.Sprintf(`{"r/%s":%s,"other":%d}`, key(), child(), i))
		case op < 17:
			w = putReq("/.json", fmt.Sprintf(`{"r":{"%s":%s,"%s":%s},"other":1}`, key(), child(), key(), child()))
		case op < 18:
			w = delReq("/r.json")
		case op < 19:
			w = putReq("/r.json", fmt.Sprint(rnd.IntN(3)))
		default:
			w = putReq("/elsewhere.json", fmt.Sprint(i))
		}
		if r := h.do(w); r.status != 200 {
			t.Fatalf("write %d %s %s %s: %d %s", i, w.method, w.path, strOr(w.body), r.status, r.body)
		}
		for _, wt := range ws {
			want := decodeNormal(t, h.get(wt.path).body)
			deadline := time.Now().Add(5 * time.Second)
			for {
				if reflect.DeepEqual(clientCopy(t, wt.frames), want) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("write %d %s %s %s: stream %s\n copy %v\n GET  %v\nframes %q", i, w.method, w.path, strOr(w.body), wt.path, clientCopy(t, wt.frames), want, wt.frames)
				}
				select {
				case f, ok := <-wt.s.frames:
					if !ok {
						t.Fatalf("stream %s ended", wt.path)
					}
					if !strings.HasPrefix(f, "keep-alive ") {
						wt.frames = append(wt.frames, f)
					}
				case <-time.After(50 * time.Millisecond):
				}
			}
		}
	}
}

// TestStreamQueryIndexes: a query answered from an `.indexOn` index
// streams like one that scans, and under StrictIndexes a stream refuses a
// query without its index with the GET's 400.
func TestStreamQueryIndexes(t *testing.T) {
	h := newHarness(t, nil, func(c *Config) { c.StrictIndexes = true })
	h.run([]step{
		{name: "rules", req: req{method: "PUT", path: "/.settings/rules.json", body: str(`{"rules":{"l":{".indexOn":["n"]}}}`)}, status: 200, body: `{"status":"ok"}`},
		{name: "seed", req: putReq("/l.json", `{"a":{"n":3,"m":1},"b":{"n":1,"m":2}}`), status: 200, body: `{"a":{"m":1,"n":3},"b":{"m":2,"n":1}}`},
	})
	stream := map[string]string{"Accept": "text/event-stream"}
	for _, q := range []string{`orderBy="m"`, `orderBy="$value"&limitToFirst=1`} {
		p := qPath("/l.json", q)
		get, st := h.get(p), h.do(req{method: "GET", path: p, headers: stream})
		if get.status != 400 || st.status != 400 || st.body != get.body {
			t.Fatalf("%s: GET %d %s, stream %d %s", q, get.status, get.body, st.status, st.body)
		}
	}
	s := openStream(t, h, qPath("/l.json", `orderBy="n"&limitToLast=1`))
	s.want(putAt(`{"a":{"m":1,"n":3}}`))
	h.do(putReq("/l/b/n.json", `9`))
	s.want(patchAt(`{"b":{"m":2,"n":9},"a":null}`))
	h.do(putReq("/l/c.json", `{"n":10}`))
	s.want(patchAt(`{"c":{"n":10},"b":null}`))
	keys := openStream(t, h, qPath("/l.json", `orderBy="$key"&limitToFirst=1`)) // needs no index
	keys.want(putAt(`{"a":{"m":1,"n":3}}`))
}

// TestStreamQueryPriorityPath: a query on a ".priority" path answers like
// the GET: the priority as is when the query only orders.
func TestStreamQueryPriorityPath(t *testing.T) {
	h := newHarness(t, nil, nil)
	h.do(putReq("/l.json", `{"a":1,".priority":5}`))
	p := qPath("/l/.priority.json", `orderBy="$key"`)
	if got := h.get(p).body; got != "5" {
		t.Fatalf("GET %s = %s", p, got)
	}
	s := openStream(t, h, p)
	s.want(putAt(`5`))
	h.do(putReq("/l/b.json", `2`)) // the priority stays
	h.do(putReq("/l/.priority.json", `"x"`))
	s.want(putAt(`"x"`))
}

// TestStreamQueryRules: a stream's reader is judged with its query
// (`query.*` in .read rules), and a reader that loses read access gets
// cancel at the next change of the location.
func TestStreamQueryRules(t *testing.T) {
	h := newRulesHarness(t, time.Now) // the stream's auth_revoked timer runs on the real clock
	h.run([]step{
		{name: "rules", req: req{method: "PUT", path: "/.settings/rules.json", body: str(`{"rules":{"l":{
			".read": "auth != null && query.orderByChild == 'owner' && query.equalTo == auth.uid && root.child('open').val() == true"}}}`)},
			status: 200, body: `{"status":"ok"}`},
		{name: "seed", req: patchReq("/.json", `{"open":true,"l":{"a":{"owner":"alice","v":1},"b":{"owner":"bob","v":2}}}`), status: 200,
			body: `{"open":true,"l":{"a":{"owner":"alice","v":1},"b":{"owner":"bob","v":2}}}`},
	})
	alice := userToken(t, "alice", time.Now().Add(time.Hour)) // the stream's auth_revoked timer runs on the real clock
	mine := qPath("/l.json", `orderBy="owner"&equalTo="alice"`)
	stream := map[string]string{"Accept": "text/event-stream", "Authorization": "Bearer " + alice}
	if r := h.do(req{method: "GET", path: qPath("/l.json", `orderBy="owner"&equalTo="bob"`), headers: stream}); r.status != 401 {
		t.Fatalf("another user's query: %d %s", r.status, r.body)
	}
	s := openStreamAs(t, h, mine, alice, nil)
	s.want(putAt(`{"a":{"owner":"alice","v":1}}`))
	h.do(putReq("/l/c.json", `{"owner":"alice","v":3}`))
	s.want(patchAt(`{"c":{"owner":"alice","v":3}}`))
	h.do(putReq("/open.json", `false`))
	h.do(putReq("/l/b/v.json", `5`))
	s.want(`cancel "Permission denied"`, "closed")
}

// TestStreamQueryResume: with ?resume=true a query stream's frames carry
// the log index; reconnecting with Last-Event-ID gets a fresh put of the
// current window, never a replay.
func TestStreamQueryResume(t *testing.T) {
	h := newHarness(t, nil, nil)
	h.do(putReq("/l.json", `{"a":1,"b":2}`)) // index 1
	p := qPath("/l.json", `orderBy="$value"&limitToLast=1`) + "&resume=true"
	frames := rawFrames(t, h, p, nil)
	if got := nextRaw(t, frames); got != "id: 1\nevent: put\ndata: {\"path\":\"/\",\"data\":{\"b\":2}}" {
		t.Fatalf("initial frame %q", got)
	}
	h.do(putReq("/x.json", `0`))   // 2: elsewhere
	h.do(putReq("/l/c.json", `3`)) // 3
	if got := nextRaw(t, frames); got != "id: 3\nevent: patch\ndata: {\"path\":\"/\",\"data\":{\"c\":3,\"b\":null}}" {
		t.Fatalf("frame %q", got)
	}
	h.do(putReq("/l/a.json", `9`)) // 4
	again := rawFrames(t, h, qPath("/l.json", `orderBy="$value"&limitToLast=1`), map[string]string{"Last-Event-ID": "3"})
	if got := nextRaw(t, again); got != "id: 4\nevent: put\ndata: {\"path\":\"/\",\"data\":{\"a\":9}}" {
		t.Fatalf("resumed frame %q", got)
	}
	h.do(putReq("/l/a.json", `0`)) // 5
	if got := nextRaw(t, again); got != "id: 5\nevent: patch\ndata: {\"path\":\"/\",\"data\":{\"c\":3,\"a\":null}}" {
		t.Fatalf("live frame after the resume %q", got)
	}
}

// TestStreamQueryBatch: two changes of the location applied in one batch
// (fsm.FSM.ApplyBatch, whose intermediate state no read can see) arrive as
// one frame at the index of the last; the next batch as its own.
func TestStreamQueryBatch(t *testing.T) {
	h := newHarness(t, nil, nil)
	h.do(putReq("/l.json", `{"a":1}`)) // index 1
	frames := rawFrames(t, h, qPath("/l.json", `orderBy="$value"&limitToLast=2`)+"&resume=true", nil)
	if got := nextRaw(t, frames); got != "id: 1\nevent: put\ndata: {\"path\":\"/\",\"data\":{\"a\":1}}" {
		t.Fatalf("initial frame %q", got)
	}
	set := func(path, body string) []byte {
		p, _ := tree.SplitPath(path)
		c := parsed(t, fsm.Command{Kind: fsm.CmdSet, Path: p, Body: []byte(body)})
		return c.Encode()
	}
	db := h.fsm
	db.mu.Lock()
	db.f.ApplyBatch([]fsm.Entry{
		{Index: 2, Command: true, Data: set("/l/b", `2`)},
		{Index: 3, Command: true, Data: set("/m", `0`)},
		{Index: 4, Command: true, Data: set("/l/c", `3`)},
		{Index: 5, Command: true, Data: set("/m", `1`)},
	})
	db.mu.Unlock()
	if got := nextRaw(t, frames); got != "id: 4\nevent: patch\ndata: {\"path\":\"/\",\"data\":{\"b\":2,\"c\":3,\"a\":null}}" {
		t.Fatalf("the batch's frame %q", got)
	}
	db.mu.Lock()
	db.f.ApplyBatch([]fsm.Entry{{Index: 6, Command: true, Data: set("/l/a", `4`)}})
	db.index = 6
	db.mu.Unlock()
	if got := nextRaw(t, frames); got != "id: 6\nevent: patch\ndata: {\"path\":\"/\",\"data\":{\"a\":4,\"b\":null}}" {
		t.Fatalf("the next batch's frame %q", got)
	}
}

// TestStreamQuerySlowIsCancelled: a query stream whose captured states
// pile up past its budget is cancelled, as a slow plain stream is.
func TestStreamQuerySlowIsCancelled(t *testing.T) {
	var hb hub
	sub := newSubscriber(tree.Path{"l"}, 1<<20, nil)
	hb.subscribe(sub)
	qs := &queryStream{loc: tree.Path{"l"}, sub: sub, budget: 3 * queryCaptureCost}
	for i := range 3 {
		qs.push(queryCapture{index: uint64(i + 1)}, queryCaptureCost)
	}
	select {
	case <-sub.done:
		t.Fatal("cancelled within its budget")
	default:
	}
	qs.push(queryCapture{index: 4}, queryCaptureCost)
	select {
	case <-sub.done:
	default:
		t.Fatal("not cancelled past its budget")
	}
	if sub.reason != msgTooSlow {
		t.Fatalf("reason %q", sub.reason)
	}
}

// TestQueryWatches: the registry finds the query streams a change concerns
// (at, above or below it; a PATCH above only through its fields) and
// forgets the removed ones.
func TestQueryWatches(t *testing.T) {
	var w queryWatches
	mk := func(p ...string) *queryStream { return &queryStream{loc: tree.Path(p)} }
	root, l, lb, m := mk(), mk("l"), mk("l", "b"), mk("m")
	for _, qs := range []*queryStream{root, l, lb, m} {
		w.add(qs)
	}
	names := map[*queryStream]string{root: "/", l: "/l", lb: "/l/b", m: "/m"}
	check := func(e fsm.Event, want string) {
		t.Helper()
		var got []string
		for qs, touch := range w.concerned([]fsm.Event{e}) {
			if touch.index != e.Index {
				t.Errorf("index %d, want %d", touch.index, e.Index)
			}
			got = append(got, names[qs])
		}
		if s := strings.Join(slices.Sorted(slices.Values(got)), " "); s != want {
			t.Errorf("event %v at %s: %q, want %q", e.Kind, e.Path, s, want)
		}
	}
	check(fsm.Event{Index: 1, Kind: fsm.EventPut, Path: tree.Path{"l", "b", "c"}}, "/ /l /l/b")
	check(fsm.Event{Index: 2, Kind: fsm.EventPut, Path: tree.Path{"l"}}, "/ /l /l/b")
	check(fsm.Event{Index: 3, Kind: fsm.EventPut, Path: nil}, "/ /l /l/b /m")
	check(fsm.Event{Index: 4, Kind: fsm.EventPatch, Path: nil, Fields: []tree.Field{{Path: tree.Path{"l", "x"}}}}, "/ /l")
	check(fsm.Event{Index: 5, Kind: fsm.EventPatch, Path: tree.Path{"l"}, Fields: []tree.Field{{Path: tree.Path{"b", "q"}}}}, "/ /l /l/b")
	check(fsm.Event{Index: 6, Kind: fsm.EventPut, Path: tree.Path{"lx"}}, "/")
	check(fsm.Event{Index: 7, Kind: fsm.EventRules}, "")
	w.remove(lb)
	w.remove(root)
	check(fsm.Event{Index: 8, Kind: fsm.EventPut, Path: tree.Path{"l", "b"}}, "/l")
	w.remove(l)
	w.remove(m)
	if w.n != 0 || len(w.at) != 0 || len(w.below) != 0 {
		t.Fatalf("left behind: %d %v %v", w.n, w.at, w.below)
	}
}

// clientCopy is what a client holds after frames (ssetest.Copy).
func clientCopy(t *testing.T, frames []string) any {
	t.Helper()
	held, err := ssetest.Copy(frames)
	if err != nil {
		t.Fatal(err)
	}
	return held
}

// decodeNormal decodes JSON into the tree it stands for (ssetest.Normal).
func decodeNormal(t *testing.T, s string) any {
	t.Helper()
	v, err := ssetest.Normal(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestStreamQueryBehindSkipsToTheNewest: a query stream that fell behind
// evaluates only the newest captured state, and sends one frame at its
// index: the window re-run at a log position, as after a batch.
func TestStreamQueryBehindSkipsToTheNewest(t *testing.T) {
	q, err := tree.NewQuery(tree.QuerySpec{Order: tree.OrderByValue, Limit: 1, HasLimit: true, LimitToLast: true})
	if err != nil {
		t.Fatal(err)
	}
	sub := newSubscriber(tree.Path{"l"}, 1<<20, nil)
	qs := &queryStream{loc: tree.Path{"l"}, path: tree.Path{"l"}, query: q, sub: sub, budget: 1 << 20,
		shared: &sharedWindow{}, cpu: semaphore.NewWeighted(1)}
	val := func(s string) *tree.Node {
		n, err := tree.ParseBody([]byte(s), 32)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if _, err := qs.start(context.Background(), fsm.ReadResult{Value: val(`{"a":1}`), Index: 1}, false); err != nil {
		t.Fatal(err)
	}
	for i, v := range []string{`{"a":1,"b":5}`, `{"a":1,"b":5,"c":9}`, `{"a":7}`} {
		qs.push(queryCapture{index: uint64(i + 2), value: val(v)}, queryCaptureCost)
	}
	frames, err := qs.frames(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(frames) != 1 || frames[0].index != 4 || string(frames[0].bytes()) != "event: patch\ndata: {\"path\":\"/\",\"data\":{\"a\":7}}\n\n" {
		t.Fatalf("frames %d: %v", len(frames), frames)
	}
}
