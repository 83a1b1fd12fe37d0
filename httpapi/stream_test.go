package httpapi

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

// sseStream is an open stream read with a strict SSE parser: every frame
// must be exactly "event: <name>\ndata: <one line>\n\n".
type sseStream struct {
	t      *testing.T
	resp   *http.Response
	r      *bufio.Reader
	frames chan string
	cancel context.CancelFunc
}

func openStream(t *testing.T, h *harness, path string) *sseStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", h.ts.URL+path, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+adminSecret)
	resp, err := h.ts.Client().Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream; charset=utf-8" {
		cancel()
		t.Fatalf("stream %s: %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	s := &sseStream{t: t, resp: resp, r: bufio.NewReader(resp.Body), frames: make(chan string, 100), cancel: cancel}
	go s.read()
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	return s
}

func (s *sseStream) read() {
	defer close(s.frames)
	for {
		ev, err := s.r.ReadString('\n')
		if err != nil {
			return
		}
		data, err := s.r.ReadString('\n')
		if err != nil {
			s.frames <- "truncated frame: " + ev
			return
		}
		blank, err := s.r.ReadString('\n')
		if err != nil || blank != "\n" || !strings.HasPrefix(ev, "event: ") || !strings.HasPrefix(data, "data: ") {
			s.frames <- fmt.Sprintf("malformed frame: %q %q %q", ev, data, blank)
			return
		}
		s.frames <- strings.TrimPrefix(strings.TrimSuffix(ev, "\n"), "event: ") + " " + strings.TrimPrefix(strings.TrimSuffix(data, "\n"), "data: ")
	}
}

// next returns the next frame other than keep-alive as "name data".
func (s *sseStream) next() string {
	s.t.Helper()
	for {
		select {
		case f, ok := <-s.frames:
			if !ok {
				return "closed"
			}
			if !strings.HasPrefix(f, "keep-alive ") {
				return f
			}
		case <-time.After(5 * time.Second):
			s.t.Fatal("no frame within 5 s")
		}
	}
}

func (s *sseStream) want(frames ...string) {
	s.t.Helper()
	for _, w := range frames {
		if got := s.next(); got != w {
			s.t.Fatalf("frame\n got %s\nwant %s", got, w)
		}
	}
}

// TestStreamEventMapping writes at, below and above streams' locations
// and checks every frame (SPEC §5).
func TestStreamEventMapping(t *testing.T) {
	h := newHarness(t, nil, nil)
	h.run([]step{{name: "setup", req: req{method: "PUT", path: "/s.json", body: str(`{"a":1,"b":{"c":true}}`)}, status: 200, body: `{"a":1,"b":{"c":true}}`}})
	at := openStream(t, h, "/s.json")
	below := openStream(t, h, "/s/b.json")
	root := openStream(t, h, "/.json")
	at.want(`put {"path":"/","data":{"a":1,"b":{"c":true}}}`)
	below.want(`put {"path":"/","data":{"c":true}}`)
	root.want(`put {"path":"/","data":{"s":{"a":1,"b":{"c":true}}}}`)

	h.do(req{method: "PUT", path: "/s/b/c.json", body: str(`false`)})
	at.want(`put {"path":"/b/c","data":false}`)
	below.want(`put {"path":"/c","data":false}`)
	root.want(`put {"path":"/s/b/c","data":false}`)

	// A multi-path PATCH spanning the locations.
	h.do(req{method: "PATCH", path: "/s.json", body: str(`{"a":2,"b/d":"x","b/c":null}`)})
	at.want(`patch {"path":"/","data":{"a":2,"b/d":"x","b/c":null}}`)
	below.want(`put {"path":"/d","data":"x"}`, `put {"path":"/c","data":null}`)
	root.want(`patch {"path":"/s","data":{"a":2,"b/d":"x","b/c":null}}`)

	// A write above: the location's new value at "/".
	h.do(req{method: "PUT", path: "/.json", body: str(`{"s":{"b":{"e":[1,2]}},"t":1}`)})
	at.want(`put {"path":"/","data":{"b":{"e":[1,2]}}}`)
	below.want(`put {"path":"/","data":{"e":[1,2]}}`)
	root.want(`put {"path":"/","data":{"s":{"b":{"e":[1,2]}},"t":1}}`)

	// POST is a put at the new key; server values arrive resolved.
	r := h.do(req{method: "POST", path: "/s/b.json", body: str(`{"at":{".sv":"timestamp"}}`)})
	key := strings.TrimSuffix(strings.TrimPrefix(r.body, `{"name":"`), `"}`)
	ts := testNow.UnixMilli()
	below.want(fmt.Sprintf(`put {"path":"/%s","data":{"at":%d}}`, key, ts))
	at.want(fmt.Sprintf(`put {"path":"/b/%s","data":{"at":%d}}`, key, ts))

	// DELETE: null. A PATCH above the location with a field inside it.
	h.do(req{method: "DELETE", path: "/s/b/e.json"})
	below.want(`put {"path":"/e","data":null}`)
	h.do(req{method: "PATCH", path: "/.json", body: str(`{"s/b/f":7,"u":1}`)})
	below.want(`put {"path":"/f","data":7}`)
	at.want(`put {"path":"/b/e","data":null}`, `put {"path":"/b/f","data":7}`)
	// Unrelated writes send nothing: the next frame is this one.
	h.do(req{method: "PUT", path: "/t.json", body: str(`2`)})
	h.do(req{method: "PUT", path: "/s/b/g.json", body: str(`"g"`)})
	below.want(`put {"path":"/g","data":"g"}`)
}

// TestStreamSlowSubscriberIsCancelled: a stream whose queue passes its
// budget gets a cancel frame and is closed; the others go on.
func TestStreamSlowSubscriberIsCancelled(t *testing.T) {
	h := newHarness(t, nil, func(c *Config) { c.StreamBufferBytes = 64 })
	s := openStream(t, h, "/x.json")
	s.want(`put {"path":"/","data":null}`)
	sub := newSubscriber(tree.Path{"x"}, 64, nil)
	h.s.hub.subscribe(sub) // never read: falls behind
	h.do(req{method: "PUT", path: "/x.json", body: str(`"` + strings.Repeat("y", 100) + `"`)})
	select {
	case <-sub.done:
	case <-time.After(5 * time.Second):
		t.Fatal("a subscriber over its budget was not cancelled")
	}
	if sub.reason == "" {
		t.Fatal("no cancel reason")
	}
	if got := s.next(); !strings.HasPrefix(got, "cancel ") {
		t.Fatalf("a 100-byte event over a 64-byte budget: %s", got)
	}
}

// TestStreamsEndOnShutdown: CloseStreams ends open streams and refuses
// new ones with a 503.
func TestStreamsEndOnShutdown(t *testing.T) {
	h := newHarness(t, nil, nil)
	s := openStream(t, h, "/x.json")
	s.want(`put {"path":"/","data":null}`)
	h.s.CloseStreams()
	if got := s.next(); got != "closed" {
		t.Fatalf("after CloseStreams: %s", got)
	}
	r := h.do(req{method: "GET", path: "/x.json", headers: map[string]string{"Accept": "text/event-stream"}})
	if r.status != 503 {
		t.Fatalf("a stream after CloseStreams: %d %s", r.status, r.body)
	}
	if n := h.s.hub.open(); n != 0 {
		t.Fatalf("%d streams still registered", n)
	}
}

// TestStreamKeepAlive: a quiet stream gets keep-alive frames.
func TestStreamKeepAlive(t *testing.T) {
	h := newHarness(t, nil, func(c *Config) { c.StreamKeepAlive = 20 * time.Millisecond })
	s := openStream(t, h, "/x.json")
	s.want(`put {"path":"/","data":null}`)
	select {
	case f := <-s.frames:
		if f != "keep-alive null" {
			t.Fatalf("frame %q, want keep-alive", f)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no keep-alive")
	}
}

// rawFrames reads a stream's frames with their id lines, strictly:
// ["id: N\n"] "event: E\n" "data: D\n" "\n".
func rawFrames(t *testing.T, h *harness, path string, headers map[string]string) <-chan string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", h.ts.URL+path, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+adminSecret)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := h.ts.Client().Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("stream %s: %v %v", path, err, resp)
	}
	out := make(chan string, 100)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		r := bufio.NewReader(resp.Body)
		var frame strings.Builder
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			if line == "\n" {
				out <- strings.TrimSuffix(frame.String(), "\n")
				frame.Reset()
				continue
			}
			frame.WriteString(line)
		}
	}()
	return out
}

func nextRaw(t *testing.T, frames <-chan string) string {
	t.Helper()
	select {
	case f := <-frames:
		return f
	case <-time.After(5 * time.Second):
		t.Fatal("no frame within 5 s")
		return ""
	}
}

// TestStreamResume: with ?resume=true frames carry the log index; a
// client reconnecting with Last-Event-ID gets exactly what it missed,
// without an initial put.
func TestStreamResume(t *testing.T) {
	h := newHarness(t, nil, nil)
	h.do(req{method: "PUT", path: "/r/a.json", body: str(`1`)}) // index 1
	frames := rawFrames(t, h, "/r.json?resume=true", nil)
	if got := nextRaw(t, frames); got != "id: 1\nevent: put\ndata: {\"path\":\"/\",\"data\":{\"a\":1}}" {
		t.Fatalf("initial frame %q", got)
	}
	h.do(req{method: "PUT", path: "/r/b.json", body: str(`2`)})         // 2
	h.do(req{method: "PUT", path: "/x.json", body: str(`0`)})           // 3: elsewhere
	h.do(req{method: "PATCH", path: "/r.json", body: str(`{"c/d":3}`)}) // 4
	if got := nextRaw(t, frames); got != "id: 2\nevent: put\ndata: {\"path\":\"/b\",\"data\":2}" {
		t.Fatalf("frame %q", got)
	}
	if got := nextRaw(t, frames); got != "id: 4\nevent: patch\ndata: {\"path\":\"/\",\"data\":{\"c/d\":3}}" {
		t.Fatalf("frame %q", got)
	}
	// Reconnect after id 2: the PATCH (4) comes again, nothing else; a
	// stream below the PATCH's location gets it as a put.
	again := rawFrames(t, h, "/r.json", map[string]string{"Last-Event-ID": "2"})
	if got := nextRaw(t, again); got != "id: 4\nevent: patch\ndata: {\"path\":\"/\",\"data\":{\"c/d\":3}}" {
		t.Fatalf("resumed frame %q", got)
	}
	below := rawFrames(t, h, "/r/c.json", map[string]string{"Last-Event-ID": "1"})
	if got := nextRaw(t, below); got != "id: 4\nevent: put\ndata: {\"path\":\"/d\",\"data\":3}" {
		t.Fatalf("resumed frame below %q", got)
	}
	h.do(req{method: "PUT", path: "/r/c/d.json", body: str(`4`)}) // 5
	if got := nextRaw(t, below); got != "id: 5\nevent: put\ndata: {\"path\":\"/d\",\"data\":4}" {
		t.Fatalf("live frame after the resume %q", got)
	}
	// From before the history: a fresh put.
	old := rawFrames(t, h, "/r.json", map[string]string{"Last-Event-ID": "0"})
	if got := nextRaw(t, old); !strings.HasPrefix(got, "id: 5\nevent: put\ndata: {\"path\":\"/\",") {
		t.Fatalf("resume from before the history %q", got)
	}
	if r := h.do(req{method: "GET", path: "/r.json", headers: map[string]string{"Accept": "text/event-stream", "Last-Event-ID": "x"}}); r.status != 400 {
		t.Fatalf("a bad Last-Event-ID: %d", r.status)
	}
}

// TestFramesForMatchesDeliver: the one-stream mapping used for resumes
// gives the same frames as the trie's fan-out, for streams at, above,
// below and beside random writes.
func TestFramesForMatchesDeliver(t *testing.T) {
	paths := []tree.Path{nil, {"a"}, {"a", "b"}, {"a", "b", "c"}, {"a", "x"}, {"z"}}
	val, _ := tree.ParseBody([]byte(`{"b":{"c":1,"d":2},"x":true}`), 32)
	fields, _ := tree.ParseUpdate([]byte(`{"b/c":5,"x":null,"y/z":"w"}`), 32)
	events := []fsm.Event{
		{Index: 1, Kind: fsm.EventPut, Path: tree.Path{"a"}, Value: val},
		{Index: 2, Kind: fsm.EventPut, Path: nil, Value: val},
		{Index: 3, Kind: fsm.EventPatch, Path: tree.Path{"a"}, Fields: fields},
		{Index: 4, Kind: fsm.EventPatch, Path: nil, Fields: []tree.Field{{Path: tree.Path{"a", "b"}, Value: val}}},
		{Index: 5, Kind: fsm.EventPut, Path: tree.Path{"a", "b", "c", "q"}, Value: nil},
	}
	for _, p := range paths {
		var h hub
		sub := newSubscriber(p, 1<<20, nil)
		h.subscribe(sub)
		h.publish(5, events)
		var got []string
		for _, f := range sub.take() {
			got = append(got, string(f.bytes()))
		}
		var want []string
		for i := range events {
			for _, f := range framesFor(p, &events[i]) {
				want = append(want, string(f))
			}
		}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("stream at %s:\n deliver  %q\n framesFor %q", p, got, want)
		}
	}
}

// TestHistoryIsBounded: the resume history keeps at most historyEvents
// events and historyBytes of values; what it dropped is no longer offered.
func TestHistoryIsBounded(t *testing.T) {
	var r history
	for i := range historyEvents + 10 {
		r.add(fsm.Event{Index: uint64(i + 1), Kind: fsm.EventPut, Value: tree.Int(1)})
	}
	if r.n != historyEvents {
		t.Fatalf("%d events kept", r.n)
	}
	if _, ok := r.since(9); ok { // event 10 was dropped
		t.Fatal("a resume from a dropped event was offered")
	}
	if got, ok := r.since(10); !ok || len(got) != historyEvents {
		t.Fatalf("resume from the oldest kept: %d events, %v", len(got), ok)
	}
	big := tree.String(strings.Repeat("x", historyBytes/3))
	for i := range 5 {
		r.add(fsm.Event{Index: uint64(historyEvents + 11 + i), Kind: fsm.EventPut, Value: big})
	}
	if r.bytes > historyBytes {
		t.Fatalf("%d bytes held, bound %d", r.bytes, historyBytes)
	}
}
