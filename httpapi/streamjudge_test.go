package httpapi

import (
	"bufio"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

// docsRules make a document readable while it is public: a read that
// depends on the data.
const docsRules = `{"rules": {
  "docs": {"$d": {".read": "data.child('public').val() === true", ".write": "auth.uid === 'owner'"}},
  "open": {".read": "auth != null", ".write": "auth.uid === 'owner'"}
}}`

// as is the query parameter that makes an admin request act as uid.
func as(uid string) string {
	return "auth_variable_override=" + url.QueryEscape(`{"uid":"`+uid+`"}`)
}

// ownerDo sends an owner's write and fails the test unless it succeeds.
func ownerDo(t *testing.T, h *harness, method, path, body string) {
	t.Helper()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	if r := h.do(req{method: method, path: path + sep + as("owner"), body: str(body)}); r.status != 200 {
		t.Fatalf("%s %s: %d %s", method, path, r.status, r.body)
	}
}

func setTestRules(t *testing.T, h *harness, src string) {
	t.Helper()
	if r := h.do(req{method: "PUT", path: "/.settings/rules.json", body: str(src)}); r.status != 200 {
		t.Fatalf("rules: %d %s", r.status, r.body)
	}
}

// TestResumeReplaysOnlyWhatTheReaderCouldRead: a reader whose permission
// depends on the data never gets a replay of events from before it
// could read; it gets a fresh put of what it may read now.
func TestResumeReplaysOnlyWhatTheReaderCouldRead(t *testing.T) {
	h := newHarness(t, nil, nil)
	setTestRules(t, h, docsRules)
	ownerDo(t, h, "PUT", "/docs/d.json", `{"title":"draft","secret":"TOP-SECRET"}`)
	ownerDo(t, h, "DELETE", "/docs/d/secret.json", ``)
	ownerDo(t, h, "PUT", "/docs/d/public.json", `true`)
	frames := rawFrames(t, h, "/docs/d.json?"+as("alice"), map[string]string{"Last-Event-ID": "1"})
	got := nextRaw(t, frames)
	if strings.Contains(got, "TOP-SECRET") || !strings.HasSuffix(got, `event: put`+"\n"+`data: {"path":"/","data":{"public":true,"title":"draft"}}`) {
		t.Fatalf("alice's resumed stream began with %q", got)
	}
}

// TestResumeReplaysForFixedPermission: a reader whose permission holds
// whatever the data gets the events it missed, unless the rules changed
// since.
func TestResumeReplaysForFixedPermission(t *testing.T) {
	h := newHarness(t, nil, nil)
	setTestRules(t, h, docsRules)             // 1
	ownerDo(t, h, "PUT", "/open/a.json", `1`) // 2
	ownerDo(t, h, "PUT", "/open/b.json", `2`) // 3
	frames := rawFrames(t, h, "/open.json?"+as("alice"), map[string]string{"Last-Event-ID": "2"})
	if got := nextRaw(t, frames); got != "id: 3\nevent: put\ndata: {\"path\":\"/b\",\"data\":2}" {
		t.Fatalf("replay %q", got)
	}
	setTestRules(t, h, docsRules+" ")         // 4: the rules changed
	ownerDo(t, h, "PUT", "/open/c.json", `3`) // 5
	again := rawFrames(t, h, "/open.json?"+as("alice"), map[string]string{"Last-Event-ID": "3"})
	if got := nextRaw(t, again); got != "id: 5\nevent: put\ndata: {\"path\":\"/\",\"data\":{\"a\":1,\"b\":2,\"c\":3}}" {
		t.Fatalf("resume across a rules change %q", got)
	}
}

// TestResumeFromTheFutureGetsAFreshPut: a Last-Event-ID beyond what the
// node applied gets a fresh put, and the stream goes on.
func TestResumeFromTheFutureGetsAFreshPut(t *testing.T) {
	h := newHarness(t, nil, nil)
	h.do(req{method: "PUT", path: "/f/a.json", body: str(`1`)}) // 1
	frames := rawFrames(t, h, "/f.json", map[string]string{"Last-Event-ID": "1000"})
	if got := nextRaw(t, frames); got != "id: 1\nevent: put\ndata: {\"path\":\"/\",\"data\":{\"a\":1}}" {
		t.Fatalf("resume from the future %q", got)
	}
	h.do(req{method: "PUT", path: "/f/b.json", body: str(`2`)}) // 2
	if got := nextRaw(t, frames); got != "id: 2\nevent: put\ndata: {\"path\":\"/b\",\"data\":2}" {
		t.Fatalf("the next event %q", got)
	}
}

// TestPausedReaderGetsNothingFromItsDeniedPeriod: frames are judged with
// the batch that made them, not when the reader reads: a reader that
// lost access while it was not reading is cancelled, and the frames of
// the denied period (and after) never reach its queue.
func TestPausedReaderGetsNothingFromItsDeniedPeriod(t *testing.T) {
	h := newHarness(t, nil, nil)
	setTestRules(t, h, docsRules)
	ownerDo(t, h, "PUT", "/docs/d.json", `{"public":true,"title":"t"}`)
	alice := &fsm.Access{Auth: map[string]any{"uid": "alice"}}
	judge := func() (bool, bool) {
		res, err := h.fsm.f.ReadAs(fsm.Read{Path: tree.Path{"docs", "d"}, Access: alice, Watch: true})
		return err == nil, res.AccessFixed
	}
	sub := newSubscriber(tree.Path{"docs", "d"}, 1<<20, judge) // never reads until the end
	if !h.s.hub.subscribe(sub) {
		t.Fatal("hub closed")
	}
	ownerDo(t, h, "PUT", "/docs/d/title.json", `"public title"`)
	ownerDo(t, h, "PUT", "/docs/d/public.json", `false`)
	ownerDo(t, h, "PUT", "/docs/d/secret.json", `"TOP-SECRET"`)
	ownerDo(t, h, "PUT", "/docs/d/public.json", `true`)
	select {
	case <-sub.done:
	case <-time.After(5 * time.Second):
		t.Fatal("the reader was not cancelled when it lost access")
	}
	if sub.reason != tree.MsgPermission {
		t.Fatalf("cancel reason %q", sub.reason)
	}
	var got []string
	for _, f := range sub.take() {
		got = append(got, string(f.bytes()))
	}
	if want := `event: put` + "\n" + `data: {"path":"/title","data":"public title"}` + "\n\n"; strings.Join(got, "") != want {
		t.Fatalf("queued for the paused reader:\n%q\nwant only\n%q", got, want)
	}
}

// TestRulesChangeJudgesEveryReader: a batch that changes the rules judges
// every open stream against the new rules before its frames are queued.
func TestRulesChangeJudgesEveryReader(t *testing.T) {
	h := newHarness(t, nil, nil)
	setTestRules(t, h, docsRules)
	s := rawFrames(t, h, "/open.json?"+as("alice"), nil)
	if got := nextRaw(t, s); got != "event: put\ndata: {\"path\":\"/\",\"data\":null}" {
		t.Fatalf("first frame %q", got)
	}
	setTestRules(t, h, `{"rules": {".write": true}}`)
	if got := nextRaw(t, s); got != `event: cancel`+"\n"+`data: "Permission denied"` {
		t.Fatalf("after the rules closed the read: %q", got)
	}
	ownerDo(t, h, "PUT", "/open/x.json", `"after"`)
	select {
	case f, ok := <-s:
		if ok {
			t.Fatalf("a frame after the cancel: %q", f)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the cancelled stream stayed open")
	}
}

// TestStreamCharsetKeepsNonASCII: a client that decodes by the charset
// the stream announces, as Python's requests does (Latin-1 when none is
// given), reads non-ASCII keys and values as they were written.
func TestStreamCharsetKeepsNonASCII(t *testing.T) {
	h := newHarness(t, nil, nil)
	h.do(req{method: "PUT", path: "/u.json", body: str(`{"clé":"café ☕"}`)})
	r, err := http.NewRequest("GET", h.ts.URL+"/u.json", nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Accept", "text/event-stream")
	r.Header.Set("Authorization", "Bearer "+adminSecret)
	resp, err := h.ts.Client().Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, params, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	for err == nil && !strings.HasPrefix(line, "data: ") {
		line, err = br.ReadString('\n')
	}
	b := []byte(line)
	var text string
	if strings.EqualFold(params["charset"], "utf-8") {
		text = string(b)
	} else { // Latin-1: each byte a code point
		rs := make([]rune, len(b))
		for i, c := range b {
			rs[i] = rune(c)
		}
		text = string(rs)
	}
	if !strings.Contains(text, `{"clé":"café ☕"}`) {
		t.Fatalf("decoded as the stream's charset (%q): %q", params["charset"], text)
	}
}
