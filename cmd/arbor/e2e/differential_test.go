package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"firebase.google.com/go/v4/db"
)

// TestFollowerAnswersLikeLeader is a differential test of SPEC §9's promise
// that a follower "returns the leader's answer": every kind of request of
// SPEC §2–§6 is sent once through the leader and once through a follower
// of one real three-node cluster, from the same state, and the two answers
// must be the same — status, body bytes, Content-Type, ETag and the other
// headers a client sees. A randomized round then mirrors random writes
// (multi-path PATCHes above all) through a follower and the leader.
//
// Environment: ARBOR_DIFF_SEED fixes the random round's seed (it is logged
// on every run); ARBOR_DIFF_VERBOSE=1 logs every case's answers through the
// leader.
func TestFollowerAnswersLikeLeader(t *testing.T) {
	start := time.Now()
	c := StartCluster(t, 3, "--write-timeout", "5s")
	d := &differ{c: c}
	d.refresh(t)
	t.Logf("cluster ready in %s; leader %s, followers %s and %s", time.Since(start).Round(time.Millisecond),
		d.leader.Name, d.followers[0].Name, d.followers[1].Name)

	casesStart := time.Now()
	t.Run("Cases", func(t *testing.T) {
		cases := diffCases()
		seen := map[string]bool{}
		for i, tc := range cases {
			key := caseKey(tc.name)
			if seen[key] {
				t.Fatalf("two cases named %q", key)
			}
			seen[key] = true
			t.Run(key, func(t *testing.T) { d.runCase(t, i, tc) })
		}
		if len(d.failed) > 0 {
			t.Logf("%d of %d cases answer differently through a follower: %s", len(d.failed), d.ran, strings.Join(d.failed, ", "))
		} else {
			t.Logf("all %d cases answer alike through the leader and a follower", d.ran)
		}
	})
	t.Logf("table: %s, %d retries after a 503 or a transport error", time.Since(casesStart).Round(time.Millisecond), d.retries)
	if st, ok := d.leader.Status(); !ok || st.Role != "leader" {
		// Not a failure: every pair was still two nodes answering the same
		// request from the same state; only the roles named may be stale.
		t.Logf("leadership moved during the table (%s now says role %q, leader %q)", d.leader.Name, st.Role, st.Leader)
	}

	randStart := time.Now()
	t.Run("Random", func(t *testing.T) { d.runRandom(t) })
	t.Run("FirebaseAdminGo", func(t *testing.T) { testAdminSDKThroughEveryNode(t, c) })
	t.Run("Realtime", func(t *testing.T) { testRealtimeThroughEveryNode(t, c) })
	t.Logf("random round: %s; whole test %s", time.Since(randStart).Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}

// Normalizations of a case: parts of an answer that legitimately differ
// between two sends of the same request. Each is replaced only where it is
// valid for the send (a push key or a timestamp of the time the send ran),
// so a malformed one still shows as a difference.
const (
	normPushKeys   = 1 << iota // 20-character push keys → "<push-key>"
	normTimestamps             // 13-digit millisecond timestamps → <timestamp>
)

// diffCase is one request of the table. Paths may use {base} (the case's
// own location, /diff/<case>), {etag} (in header values) and {push} (in
// after paths: the key a POST answered).
type diffCase struct {
	name    string
	setup   string   // JSON PUT at {base} (through the leader) before each send; "" = nothing there
	method  string   // the request's method
	path    string   // with {base}; the query part is escaped at send time ("→%22, $→%24, space→%20)
	body    string   // "" sends no body
	headers []string // name, value pairs; values may contain {etag}
	etagOf  string   // read this path with X-Firebase-ETag on the serving node first; its ETag is {etag}
	anon    bool     // send no credentials
	stream  bool     // Accept: text/event-stream; read only the status, headers and first frame
	norm    int      // normPushKeys | normTimestamps
	want    int      // the status SPEC gives the request (checked on both nodes); 0 = not checked
	after   []string // reads through the serving node after the request; writes also read {base} exported
}

// readOnly reports whether the case cannot change the state, so the
// follower's send needs no second setup.
func (tc *diffCase) readOnly() bool {
	return (tc.method == "GET" || tc.method == "OPTIONS") && len(tc.after) == 0
}

// diffAnswer is one step of a send: a label and the (normalized) response.
type diffAnswer struct {
	label string
	r     Response
}

// differ holds the cluster and the roles of its nodes.
type differ struct {
	c         *Cluster
	leader    *Node
	followers []*Node
	retries   int
	ran       int
	failed    []string
}

// refresh (re)learns the leader and the followers.
func (d *differ) refresh(t *testing.T) {
	t.Helper()
	d.leader = d.c.WaitStable(t, d.c.Nodes...)
	d.followers = d.c.Others(d.leader)
	if len(d.followers) != 2 {
		t.Fatalf("%d followers", len(d.followers))
	}
}

// caseKey turns a case name into a key usable in a path and a test name.
func caseKey(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			if s := b.String(); s != "" && !strings.HasSuffix(s, "_") {
				b.WriteByte('_')
			}
		}
	}
	return strings.TrimSuffix(b.String(), "_")
}

// sendRetryWindow bounds the retries of one send after 503s (no leader,
// timeout) or transport errors, as a client would retry.
const sendRetryWindow = 30 * time.Second

// runCase sends tc through the leader, then through a follower (the two
// followers alternate over the table), and compares every step.
func (d *differ) runCase(t *testing.T, i int, tc diffCase) {
	d.ran++
	base := "/diff/" + caseKey(tc.name)
	leader, follower := d.leader, d.followers[i%2]
	l := d.send(t, tc, base, leader, true)
	f := d.send(t, tc, base, follower, !tc.readOnly())

	var problems []string
	if len(l) != len(f) {
		problems = append(problems, fmt.Sprintf("%d steps through the leader, %d through the follower", len(l), len(f)))
	}
	for k := 0; k < len(l) && k < len(f); k++ {
		if p := compareResponses(l[k].r, f[k].r); p != "" {
			problems = append(problems, l[k].label+": "+p)
		}
	}
	for _, side := range []struct {
		who string
		as  []diffAnswer
	}{{"leader " + leader.Name, l}, {"follower " + follower.Name, f}} {
		for _, a := range side.as {
			if a.r.Status >= 500 {
				problems = append(problems, fmt.Sprintf("%s: %s answered %d (SPEC §6: never a 500)", a.label, side.who, a.r.Status))
			}
			if a.label == "request" && tc.want != 0 && a.r.Status != tc.want {
				problems = append(problems, fmt.Sprintf("request: %s answered %d, SPEC says %d", side.who, a.r.Status, tc.want))
			}
		}
	}
	if os.Getenv("ARBOR_DIFF_VERBOSE") != "" {
		t.Logf("%s %s through the leader %s:%s", tc.method, tc.path, leader.Name, formatAnswers(l))
	}
	if len(problems) == 0 {
		return
	}
	d.failed = append(d.failed, caseKey(tc.name))
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", tc.method, strings.ReplaceAll(tc.path, "{base}", base))
	if tc.body != "" {
		fmt.Fprintf(&b, " body %s", truncate(tc.body))
	}
	if len(tc.headers) > 0 {
		fmt.Fprintf(&b, " headers %q", tc.headers)
	}
	if tc.setup != "" {
		fmt.Fprintf(&b, "\nsetup at %s: %s", base, truncate(tc.setup))
	}
	fmt.Fprintf(&b, "\nDIFFERENCES:\n  %s", strings.Join(problems, "\n  "))
	fmt.Fprintf(&b, "\n--- through the leader %s:%s", leader.Name, formatAnswers(l))
	fmt.Fprintf(&b, "\n--- through the follower %s:%s", follower.Name, formatAnswers(f))
	t.Errorf("%s", b.String())
}

// send runs one send of tc through n — setup, read-back, request, reads
// after — retrying the whole of it (from the setup, so a retry starts from
// the same state) while some step answers 503 or gets no answer.
func (d *differ) send(t *testing.T, tc diffCase, base string, n *Node, setup bool) []diffAnswer {
	t.Helper()
	deadline := time.Now().Add(sendRetryWindow)
	for attempt := 1; ; attempt++ {
		out, retry := d.attempt(t, tc, base, n, setup)
		if retry == "" {
			return out
		}
		d.retries++
		if time.Now().After(deadline) {
			t.Fatalf("%s through %s: still failing after %s: %s", tc.name, n.Name, sendRetryWindow, retry)
		}
		t.Logf("%s through %s, attempt %d: %s; retrying", tc.name, n.Name, attempt, retry)
		d.refresh(t) // waits (polling) until the nodes agree on a leader again
		setup = true
	}
}

// attempt is one try of a send. retry is non-empty when a step answered
// 503 or got no answer.
func (d *differ) attempt(t *testing.T, tc diffCase, base string, n *Node, setup bool) (out []diffAnswer, retry string) {
	t.Helper()
	expand := func(s string) string { return strings.ReplaceAll(s, "{base}", base) }
	transient := func(step string, r Response, err error) string {
		switch {
		case err != nil:
			return step + ": " + err.Error()
		case r.Status == http.StatusServiceUnavailable:
			return fmt.Sprintf("%s: %d %s", step, r.Status, strings.TrimSpace(r.Body))
		}
		return ""
	}

	if setup {
		body := tc.setup
		if body == "" {
			body = "null"
		}
		r, err := d.leader.TryDo("PUT", base+".json", body)
		if why := transient("setup", r, err); why != "" {
			return nil, why
		}
		if r.Status != http.StatusOK {
			t.Fatalf("%s: setup PUT %s.json through %s: %d %s", tc.name, base, d.leader.Name, r.Status, r.Body)
		}
	}
	// The state the request will see, read back through the serving node:
	// a linearizable read waits until the node has applied the setup. The
	// step is compared with the leader's like every other.
	r, err := n.TryDo("GET", base+".json?format=export", "")
	if why := transient("read-back", r, err); why != "" {
		return nil, why
	}
	out = append(out, diffAnswer{"read-back of the setup (linearizable, format=export)", r})
	want := r.Body
	// consistency=local reads the node's applied state at once; after the
	// linearizable read it must have the setup too.
	var local Response
	poll(t, 10*time.Second, n.Name+" to read the setup state locally", func() bool {
		local, err = n.TryDo("GET", base+".json?format=export&consistency=local", "")
		return err == nil && local.Status == http.StatusOK && local.Body == want
	}, func() string { return fmt.Sprintf("last answer %d %q, want %q", local.Status, local.Body, want) })

	etag := ""
	if tc.etagOf != "" {
		r, err := n.TryDo("GET", expand(tc.etagOf), "", "X-Firebase-ETag", "true")
		if why := transient("ETag read", r, err); why != "" {
			return nil, why
		}
		out = append(out, diffAnswer{"ETag read GET " + tc.etagOf, r})
		etag = r.Header.Get("ETag")
	}

	hdrs := slices.Clone(tc.headers)
	for k := 1; k < len(hdrs); k += 2 {
		hdrs[k] = strings.ReplaceAll(hdrs[k], "{etag}", etag)
	}
	auth := AdminSecret
	if tc.anon {
		auth = noAuth
	}
	startMs := time.Now().UnixMilli()
	path := escapeQuery(expand(tc.path))
	if tc.stream {
		r, err = firstStreamFrame(n, auth, path, hdrs...)
	} else {
		r, err = n.TryDoWith(n.Client(), auth, tc.method, path, tc.body, hdrs...)
	}
	if why := transient("request", r, err); why != "" {
		return nil, why
	}
	out = append(out, diffAnswer{"request", r})
	push := ""
	var name struct {
		Name string `json:"name"`
	}
	if r.Status == http.StatusOK && json.Unmarshal([]byte(r.Body), &name) == nil && validPushKey(name.Name) {
		push = name.Name
	}

	after := slices.Clone(tc.after)
	if tc.method != "GET" && tc.method != "OPTIONS" {
		after = append(after, "{base}.json?format=export")
	}
	for _, p := range after {
		label := "after: GET " + p
		if strings.Contains(p, "{push}") {
			if push == "" {
				out = append(out, diffAnswer{label + " (no push key in the answer)", Response{}})
				continue
			}
			p = strings.ReplaceAll(p, "{push}", push)
		}
		var hdr []string
		if tc.norm == 0 { // with a push key or a timestamp in it, the ETag differs by design
			hdr = []string{"X-Firebase-ETag", "true"}
		}
		r, err := n.TryDo("GET", escapeQuery(expand(p)), "", hdr...)
		if why := transient("after "+p, r, err); why != "" {
			return nil, why
		}
		out = append(out, diffAnswer{label, r})
	}
	endMs := time.Now().UnixMilli()

	for k := range out {
		b := out[k].r.Body
		if tc.norm&normPushKeys != 0 {
			b = normalizePushKeys(b, startMs-10_000, endMs+10_000)
		}
		if tc.norm&normTimestamps != 0 {
			b = normalizeTimestamps(b, startMs, endMs)
		}
		out[k].r.Body = b
	}
	return out, ""
}

// comparedHeaders are the response headers a client may rely on.
var comparedHeaders = []string{
	"Content-Type", "ETag", "Content-Disposition", "Cache-Control", "Access-Control-Allow-Origin",
	"Access-Control-Allow-Methods", "Access-Control-Allow-Headers", "Retry-After",
}

// compareResponses describes how l and f differ ("" if they do not).
func compareResponses(l, f Response) string {
	var diffs []string
	if l.Status != f.Status {
		diffs = append(diffs, fmt.Sprintf("status %d vs %d", l.Status, f.Status))
	}
	if l.Body != f.Body {
		diffs = append(diffs, fmt.Sprintf("body %s vs %s", truncate(strconv.Quote(l.Body)), truncate(strconv.Quote(f.Body))))
	}
	for _, h := range comparedHeaders {
		lv, fv := l.Header.Values(h), f.Header.Values(h)
		if !slices.Equal(lv, fv) {
			diffs = append(diffs, fmt.Sprintf("header %s %q vs %q", h, lv, fv))
		}
	}
	return strings.Join(diffs, "; ")
}

func formatAnswers(as []diffAnswer) string {
	var b strings.Builder
	for _, a := range as {
		fmt.Fprintf(&b, "\n  [%s] %d", a.label, a.r.Status)
		for _, h := range comparedHeaders {
			if v := a.r.Header.Values(h); len(v) > 0 {
				fmt.Fprintf(&b, " %s=%q", h, strings.Join(v, ", "))
			}
		}
		fmt.Fprintf(&b, "\n    body: %s", truncate(strconv.Quote(a.r.Body)))
	}
	return b.String()
}

func truncate(s string) string {
	const max = 600
	if len(s) <= max {
		return s
	}
	return fmt.Sprintf("%s…(%d bytes)", s[:max], len(s))
}

// escapeQuery percent-encodes, in the query part of path, the characters
// the table writes literally for readability.
func escapeQuery(path string) string {
	p, q, ok := strings.Cut(path, "?")
	if !ok {
		return path
	}
	var b strings.Builder
	for i := 0; i < len(q); i++ {
		switch c := q[i]; {
		case c == '"' || c == '$' || c == ' ' || c == '#' || c == '\\' || c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&b, "%%%02X", c)
		default:
			b.WriteByte(c)
		}
	}
	return p + "?" + b.String()
}

var (
	pushKeyRE   = regexp.MustCompile(`"[-0-9A-Za-z_]{20}"`)
	timestampRE = regexp.MustCompile(`\b1[0-9]{12}\b`)
)

// normalizePushKeys replaces every quoted push key whose time lies in
// [lo, hi] (milliseconds) with "<push-key>".
func normalizePushKeys(s string, lo, hi int64) string {
	return pushKeyRE.ReplaceAllStringFunc(s, func(m string) string {
		k := m[1 : len(m)-1]
		if ms := pushKeyMillis(k); validPushKey(k) && ms >= lo && ms <= hi {
			return `"<push-key>"`
		}
		return m
	})
}

// normalizeTimestamps replaces every 13-digit number in [lo, hi] with
// <timestamp>.
func normalizeTimestamps(s string, lo, hi int64) string {
	return timestampRE.ReplaceAllStringFunc(s, func(m string) string {
		if v, err := strconv.ParseInt(m, 10, 64); err == nil && v >= lo && v <= hi {
			return "<timestamp>"
		}
		return m
	})
}

// firstStreamFrame sends GET path with Accept: text/event-stream and
// returns the status, the headers and, for an event stream, its first
// frame only (for any other answer, the whole body).
func firstStreamFrame(n *Node, auth, path string, headers ...string) (Response, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", n.URL(path), nil)
	if err != nil {
		return Response{}, err
	}
	if auth != noAuth {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	req.Header.Set("Accept", "text/event-stream")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := n.Client().Do(req)
	if err != nil {
		return Response{}, err
	}
	defer resp.Body.Close()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, err := io.ReadAll(resp.Body)
		return Response{Status: resp.StatusCode, Header: resp.Header, Body: string(b)}, err
	}
	var frame strings.Builder
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		frame.WriteString(line)
		if err != nil {
			return Response{}, fmt.Errorf("reading the first frame (%q so far): %w", frame.String(), err)
		}
		if line == "\n" {
			return Response{Status: resp.StatusCode, Header: resp.Header, Body: frame.String()}, nil
		}
	}
}

// Data sets of the table.
const (
	dinosSetup = `{` +
		`"bruhathkayosaurus":{".priority":3,"appeared":-70000000,"height":25,"length":44,"order":"saurischia","weight":135000,"stats":{"speed":3}},` +
		`"lambeosaurus":{".priority":"b","appeared":-76000000,"height":2.1,"length":12.5,"order":"ornithischia","weight":5000,"stats":{"speed":7}},` +
		`"linhenykus":{".priority":1,"appeared":-85000000,"height":0.6,"length":1,"order":"theropoda","weight":3,"stats":{"speed":12}},` +
		`"pterodactyl":{".priority":1,"appeared":-150000000,"height":0.6,"length":0.8,"order":"pterosauria","weight":2},` +
		`"stegosaurus":{".priority":"a","appeared":-155000000,"height":4,"length":9,"order":"ornithischia","weight":2500,"stats":{"speed":5.5}},` +
		`"triceratops":{"appeared":-68000000,"height":3,"length":8,"order":"ornithischia","weight":11000,"stats":{"speed":"slow"}}}`
	valuesSetup = `{"a":3,"b":"x","c":true,"d":1.5,"e":false,"f":{"z":1},"g":3,"10":2,"9":"y","-1":0,"h":"abc","i":-2.25,"j":"é","k":"😀"}`
	arraySetup  = `["zero","one","two","three","four"]`
	mixedSetup  = `{"arr":[1,2.0,"s",true,{"x":[0]}],"sparse":{"0":"a","2":"c"},"notarr":{"2":"c","4":"e"},"leaf":"v","n":5,"d":5.0,"nest":{"a":{"b":{"c":1}}},"esc":"q\"b\\n\n\t\u0001\u2028<&>é😀"}`
	prioSetup   = `{"tom":{".priority":1.0,"name":{".priority":"p","first":"Tom"}},"n":{".value":5,".priority":"hi"},"list":{"0":{".value":"a",".priority":2},"1":"b"}}`
	patchSetup  = `{"users":{"alan":{"name":"Alan","nickname":"A"},"grace":{"name":"Grace","nickname":"G"},"tim":{"name":"Tim"}},"shared":{"n0":false},"list":["a","b","c","d","e"]}`
	counterSet  = `{"a":10,"b":1.5,"s":"text","max":9223372036854775807,"x":{"n":1}}`
)

// diffCases is the table: every request kind SPEC §2–§6 defines.
func diffCases() []diffCase {
	big := `"` + strings.Repeat("x", 70<<10) + `"` // over tiny (64 KiB)
	segs := func(k int) string { return strings.Repeat("/s", k) }
	k768, k769 := strings.Repeat("k", 768), strings.Repeat("k", 769)
	get := func(name, setup, path string, want int, headers ...string) diffCase {
		return diffCase{name: name, setup: setup, method: "GET", path: path, want: want, headers: headers}
	}
	q := func(name, setup, query string, want int) diffCase {
		return get(name, setup, "{base}.json?"+query, want)
	}
	cases := []diffCase{
		// --- GET, plain and addressing (SPEC §1, §2).
		get("GET object", mixedSetup, "{base}.json", 200),
		get("GET leaf", mixedSetup, "{base}/leaf.json", 200),
		get("GET int leaf", mixedSetup, "{base}/n.json", 200),
		get("GET double leaf", mixedSetup, "{base}/d.json", 200),
		get("GET escaped string", mixedSetup, "{base}/esc.json", 200),
		get("GET array", mixedSetup, "{base}/arr.json", 200),
		get("GET sparse array", mixedSetup, "{base}/sparse.json", 200),
		get("GET object with integer keys", mixedSetup, "{base}/notarr.json", 200),
		get("GET missing", mixedSetup, "{base}/nothing/here.json", 200),
		get("GET below a leaf", mixedSetup, "{base}/leaf/child.json", 200),
		get("GET slash json form", mixedSetup, "{base}/nest/.json", 200),
		get("GET repeated slashes", mixedSetup, "/{base}//nest//a.json", 200),
		get("GET percent encoded unicode", `{"é":{"c d":1},"a+b":"plus"}`, "{base}/%C3%A9/c%20d.json", 200),
		get("GET plus in path", `{"é":{"c d":1},"a+b":"plus"}`, "{base}/a+b.json", 200),
		get("GET 768 byte key", `{"`+k768+`":1}`, "{base}/"+k768+".json", 200),
		get("GET 32 segments", "", "{base}"+segs(30)+".json", 200),
		get("GET root shallow", "", "/.json?shallow=true", 200),
		get("GET parent of all cases shallow", "", "/diff.json?shallow=true", 200),

		// --- Read options (SPEC §3, §9).
		q("shallow object", mixedSetup, "shallow=true", 200),
		get("shallow array", mixedSetup, "{base}/arr.json?shallow=true", 200),
		get("shallow primitive", mixedSetup, "{base}/leaf.json?shallow=true", 200),
		get("shallow missing", mixedSetup, "{base}/zz.json?shallow=true", 200),
		q("shallow false", mixedSetup, "shallow=false", 200),
		q("shallow pretty", mixedSetup, "shallow=true&print=pretty", 200),
		q("shallow limitToFirst", dinosSetup, "shallow=true&limitToFirst=2", 200),
		q("shallow startAt endAt", dinosSetup, `shallow=true&startAt="l"&endAt="t"`, 200),
		q("format export", mixedSetup, "format=export", 200),
		q("format export priorities", prioSetup, "format=export", 200),
		get("format export leaf with priority", prioSetup, "{base}/n.json?format=export", 200),
		q("print pretty", mixedSetup, "print=pretty", 200),
		get("print pretty array", mixedSetup, "{base}/arr.json?print=pretty", 200),
		get("print pretty leaf", mixedSetup, "{base}/esc.json?print=pretty", 200),
		q("print pretty export", prioSetup, "print=pretty&format=export", 200),
		q("print silent GET", mixedSetup, "print=silent", 204),
		q("callback", mixedSetup, "callback=gotData", 200),
		get("callback missing", mixedSetup, "{base}/zz.json?callback=$app.cb_1", 200),
		q("download", mixedSetup, "download=data.json", 200),
		// Longer than --write-timeout: a slow read is a 503 (retried), never a 400.
		q("timeout", mixedSetup, "timeout=20s", 200),
		q("consistency local", mixedSetup, "consistency=local", 200),
		q("consistency linearizable", mixedSetup, "consistency=linearizable", 200),
		q("consistency local query", dinosSetup, `consistency=local&orderBy="height"&limitToFirst=2`, 200),
		diffCase{name: "auth query", setup: mixedSetup, method: "GET", path: "{base}.json?auth=" + AdminSecret, anon: true, want: 200},
		diffCase{name: "access_token query", setup: mixedSetup, method: "GET", path: "{base}/n.json?access_token=" + AdminSecret, anon: true, want: 200},
		q("ignored ns ac", mixedSetup, "ns=other&ac=x&disableTriggers=true", 200),

		// --- Queries (SPEC §3) on a child, $key, $value, $priority.
		q("orderBy child", dinosSetup, `orderBy="height"`, 200),
		q("orderBy child startAt", dinosSetup, `orderBy="height"&startAt=3`, 200),
		q("orderBy child endAt", dinosSetup, `orderBy="height"&endAt=3`, 200),
		q("orderBy child range", dinosSetup, `orderBy="height"&startAt=0.6&endAt=4`, 200),
		q("orderBy child equalTo", dinosSetup, `orderBy="height"&equalTo=0.6`, 200),
		q("orderBy child startAfter", dinosSetup, `orderBy="height"&startAfter=0.6`, 200),
		q("orderBy child endBefore", dinosSetup, `orderBy="height"&endBefore=4`, 200),
		q("orderBy child limitToFirst", dinosSetup, `orderBy="height"&limitToFirst=2`, 200),
		q("orderBy child limitToLast", dinosSetup, `orderBy="height"&limitToLast=2`, 200),
		q("orderBy child key tiebreak", dinosSetup, `orderBy="height"&startAt=0.6,"pterodactyl"`, 200),
		q("orderBy child range and limit", dinosSetup, `orderBy="height"&startAt=1&limitToLast=2`, 200),
		q("orderBy nested child", dinosSetup, `orderBy="stats/speed"`, 200),
		q("orderBy child equalTo string", dinosSetup, `orderBy="order"&equalTo="ornithischia"`, 200),
		q("orderBy child pretty", dinosSetup, `orderBy="height"&limitToFirst=2&print=pretty`, 200),
		q("orderBy child export", dinosSetup, `orderBy="height"&limitToFirst=3&format=export`, 200),
		q("orderBy key", dinosSetup, `orderBy="$key"`, 200),
		q("orderBy key range", dinosSetup, `orderBy="$key"&startAt="l"&endAt="t"`, 200),
		q("orderBy key exclusive", dinosSetup, `orderBy="$key"&startAfter="linhenykus"&endBefore="triceratops"`, 200),
		q("orderBy key equalTo", dinosSetup, `orderBy="$key"&equalTo="stegosaurus"`, 200),
		q("orderBy key limitToFirst", dinosSetup, `orderBy="$key"&limitToFirst=3`, 200),
		q("orderBy key limitToLast 0", dinosSetup, `orderBy="$key"&limitToLast=0`, 200),
		q("orderBy key on array", arraySetup, `orderBy="$key"&limitToFirst=2`, 200),
		q("orderBy key on array tail", arraySetup, `orderBy="$key"&limitToLast=2`, 200),
		q("orderBy priority", dinosSetup, `orderBy="$priority"`, 200),
		q("orderBy priority range", dinosSetup, `orderBy="$priority"&startAt=1&endAt=3`, 200),
		q("orderBy priority equalTo", dinosSetup, `orderBy="$priority"&equalTo="a"`, 200),
		q("orderBy priority limit", dinosSetup, `orderBy="$priority"&startAt="a"&limitToFirst=1`, 200),
		q("orderBy value", valuesSetup, `orderBy="$value"`, 200),
		q("orderBy value startAt", valuesSetup, `orderBy="$value"&startAt=2`, 200),
		q("orderBy value equalTo", valuesSetup, `orderBy="$value"&equalTo=true`, 200),
		q("orderBy value strings", valuesSetup, `orderBy="$value"&startAt="x"&endAt="y"`, 200),
		q("orderBy value limitToLast", valuesSetup, `orderBy="$value"&limitToLast=3`, 200),
		q("orderBy value startAfter tiebreak", valuesSetup, `orderBy="$value"&startAfter=3,"a"`, 200),
		q("orderBy value unicode", valuesSetup, `orderBy="$value"&startAt="%C3%A9"`, 200),
		q("query callback", dinosSetup, `orderBy="$key"&limitToFirst=1&callback=cb`, 200),

		// --- ETags and conditional GETs (SPEC §4).
		get("GET ETag", mixedSetup, "{base}.json", 200, "X-Firebase-ETag", "true"),
		get("GET ETag any case", mixedSetup, "{base}/arr.json", 200, "x-firebase-etag", "TRUE"),
		get("GET ETag missing", mixedSetup, "{base}/zz.json", 200, "X-Firebase-ETag", "true"),
		get("GET ETag priority", prioSetup, "{base}/tom.json", 200, "X-Firebase-ETag", "true"),
		{name: "If-None-Match matching", setup: mixedSetup, method: "GET", path: "{base}.json", etagOf: "{base}.json", headers: []string{"If-None-Match", "{etag}"}, want: 304},
		get("If-None-Match stale", mixedSetup, "{base}.json", 200, "If-None-Match", "stale-etag"),
		get("If-None-Match null_etag missing", mixedSetup, "{base}/zz.json", 304, "If-None-Match", "null_etag"),
		get("If-None-Match null_etag present", mixedSetup, "{base}/leaf.json", 200, "If-None-Match", "null_etag"),
		get("If-None-Match pretty", mixedSetup, "{base}/arr.json?print=pretty", 200, "If-None-Match", "x"),

		// --- PUT (SPEC §1, §2).
		{name: "PUT object", setup: mixedSetup, method: "PUT", path: "{base}/o.json", body: `{"z":1,"a":{"y":true,"b":"s"},"m":[1,2]}`, want: 200},
		{name: "PUT replaces", setup: mixedSetup, method: "PUT", path: "{base}.json", body: `{"only":1}`, want: 200},
		{name: "PUT array", setup: mixedSetup, method: "PUT", path: "{base}/arr.json", body: `["a",["b",{"c":[1]}],3]`, want: 200},
		{name: "PUT array with nulls", setup: mixedSetup, method: "PUT", path: "{base}/a.json", body: `[1,null,3,null]`, want: 200},
		{name: "PUT sparse integer keys", setup: mixedSetup, method: "PUT", path: "{base}/a.json", body: `{"2":"c","4":"e"}`, want: 200},
		{name: "PUT non canonical integer keys", setup: "", method: "PUT", path: "{base}.json", body: `{"01":1,"1":2,"10":3,"9":4,"-1":5,"2147483648":6,"a":7}`, want: 200},
		{name: "PUT nested", setup: "", method: "PUT", path: "{base}/a/b/c.json", body: `{"d":{"e":{"f":"deep"}}}`, want: 200},
		{name: "PUT leaf int", setup: mixedSetup, method: "PUT", path: "{base}/n.json", body: `5`, want: 200},
		{name: "PUT leaf double 5.0", setup: mixedSetup, method: "PUT", path: "{base}/n.json", body: `5.0`, want: 200},
		{name: "PUT doubles", setup: "", method: "PUT", path: "{base}.json", body: `{"a":1e3,"b":0.1,"c":-2.5e-8,"d":1e300,"e":-0.0,"f":123456789.125,"g":1.0}`, want: 200},
		{name: "PUT integers", setup: "", method: "PUT", path: "{base}.json", body: `{"max":9223372036854775807,"min":-9223372036854775808,"big":9007199254740993,"zero":0,"neg":-7}`, want: 200},
		{name: "PUT bool", setup: mixedSetup, method: "PUT", path: "{base}/leaf.json", body: `false`, want: 200},
		{name: "PUT string escapes", setup: "", method: "PUT", path: "{base}/s.json", body: `"tab\t quote\" back\\ nl\n ctrl\u0001 del\u007f sep\u2028 html<&> é\u00e9 日本 😀\ud83d\ude00 slash\/"`, want: 200},
		{name: "PUT unicode keys", setup: "", method: "PUT", path: "{base}.json", body: `{"é":1,"日本":{"😀":true},"a b":"s","q\"k":2,"b\\k":3,"<&>":4}`, want: 200},
		{name: "PUT null member dropped", setup: "", method: "PUT", path: "{base}.json", body: `{"a":1,"b":null,"c":{"d":null}}`, want: 200},
		{name: "PUT null deletes", setup: mixedSetup, method: "PUT", path: "{base}/nest.json", body: `null`, want: 200},
		{name: "PUT empty object deletes", setup: mixedSetup, method: "PUT", path: "{base}/nest/a.json", body: `{}`, want: 200},
		{name: "PUT form content type", setup: "", method: "PUT", path: "{base}.json", body: `{"f":1}`, headers: []string{"Content-Type", "application/x-www-form-urlencoded"}, want: 200},
		{name: "PUT slash json form", setup: "", method: "PUT", path: "{base}/x/.json", body: `{"y":1}`, want: 200},
		{name: "PUT repeated slashes", setup: "", method: "PUT", path: "/{base}///x//y//.json", body: `1`, want: 200},
		{name: "PUT encoded path", setup: "", method: "PUT", path: "{base}/c%20d/%C3%A9/a+b.json", body: `"v"`, want: 200},
		{name: "PUT 32 segments", setup: "", method: "PUT", path: "{base}" + segs(30) + ".json", body: `1`, want: 200},
		{name: "PUT deep body at the limit", setup: "", method: "PUT", path: "{base}" + segs(29) + ".json", body: `{"a":1}`, want: 200},
		{name: "PUT 768 byte key in body", setup: "", method: "PUT", path: "{base}.json", body: `{"` + k768 + `":1}`, want: 200},
		{name: "PUT pretty", setup: "", method: "PUT", path: "{base}.json?print=pretty", body: `{"a":{"b":[1,2.0,"s"]},"c":true,"d":"x","e":{}}`, want: 200},
		{name: "PUT silent", setup: mixedSetup, method: "PUT", path: "{base}/n.json?print=silent", body: `{"s":1}`, want: 204},
		{name: "PUT ETag", setup: mixedSetup, method: "PUT", path: "{base}/n.json", body: `{"v":[1,2]}`, headers: []string{"X-Firebase-ETag", "true"}, want: 200},
		{name: "PUT ETag null", setup: mixedSetup, method: "PUT", path: "{base}/n.json", body: `null`, headers: []string{"X-Firebase-ETag", "true"}, want: 200},
		{name: "PUT auth query", setup: "", method: "PUT", path: "{base}.json?auth=" + AdminSecret, body: `1`, anon: true, want: 200},
		{name: "PUT timeout and size limit", setup: "", method: "PUT", path: "{base}.json?timeout=20s&writeSizeLimit=tiny&disableTriggers=true", body: `"ok"`, want: 200},
		{name: "PUT big with small limit", setup: "", method: "PUT", path: "{base}.json?writeSizeLimit=small&print=silent", body: big, want: 204},

		// --- POST (SPEC §2): push keys differ between sends.
		{name: "POST object", setup: mixedSetup, method: "POST", path: "{base}/list.json", body: `{"text":"hi","n":[1,2]}`, norm: normPushKeys, want: 200, after: []string{"{base}/list/{push}.json", "{base}/list.json"}},
		{name: "POST string", setup: "", method: "POST", path: "{base}.json", body: `"second"`, norm: normPushKeys, want: 200, after: []string{"{base}/{push}.json"}},
		{name: "POST form content type", setup: "", method: "POST", path: "{base}.json", body: `{"f":1.0}`, headers: []string{"Content-Type", "application/x-www-form-urlencoded"}, norm: normPushKeys, want: 200, after: []string{"{base}/{push}.json"}},
		{name: "POST pretty", setup: "", method: "POST", path: "{base}.json?print=pretty", body: `{"a":[1]}`, norm: normPushKeys, want: 200, after: []string{"{base}/{push}.json?print=pretty"}},
		{name: "POST silent", setup: "", method: "POST", path: "{base}.json?print=silent", body: `1`, norm: normPushKeys, want: 204, after: []string{"{base}.json"}},
		{name: "POST ETag", setup: "", method: "POST", path: "{base}.json", body: `{"e":true}`, headers: []string{"X-Firebase-ETag", "true"}, norm: normPushKeys, want: 200, after: []string{"{base}/{push}.json"}},
		{name: "POST with priority", setup: "", method: "POST", path: "{base}.json", body: `{".priority":2,"v":1}`, norm: normPushKeys, want: 200, after: []string{"{base}/{push}.json?format=export"}},
		{name: "POST timestamp", setup: "", method: "POST", path: "{base}.json", body: `{"at":{".sv":"timestamp"}}`, norm: normPushKeys | normTimestamps, want: 200, after: []string{"{base}/{push}.json"}},
		{name: "POST increment", setup: "", method: "POST", path: "{base}.json", body: `{".sv":{"increment":4}}`, norm: normPushKeys, want: 200, after: []string{"{base}/{push}.json"}},

		// --- PATCH (SPEC §2).
		{name: "PATCH single path", setup: patchSetup, method: "PATCH", path: "{base}/users/alan.json", body: `{"nick":"J"}`, want: 200},
		{name: "PATCH multi path slash keys", setup: patchSetup, method: "PATCH", path: "{base}.json", body: `{"n1":1,"shared/n1":true}`, want: 200},
		{name: "PATCH multi path nicknames", setup: patchSetup, method: "PATCH", path: "{base}/users.json", body: `{"alan/nickname":"Alan The Machine","grace/nickname":"Amazing Grace"}`, want: 200},
		{name: "PATCH deep path", setup: patchSetup, method: "PATCH", path: "{base}.json", body: `{"a/b/c/d":1}`, want: 200},
		{name: "PATCH nested object replaces", setup: patchSetup, method: "PATCH", path: "{base}/users.json", body: `{"alan":{"nickname":"Al"}}`, want: 200},
		{name: "PATCH nulls", setup: patchSetup, method: "PATCH", path: "{base}/users.json", body: `{"tim":null,"grace/nickname":null,"ada/name":"Ada"}`, want: 200},
		{name: "PATCH all nulls prunes", setup: patchSetup, method: "PATCH", path: "{base}/users/tim.json", body: `{"name":null}`, want: 200},
		{name: "PATCH null body", setup: patchSetup, method: "PATCH", path: "{base}/users.json", body: `null`, want: 200},
		{name: "PATCH array value", setup: patchSetup, method: "PATCH", path: "{base}.json", body: `{"arr":[1,[2,3],{"x":null,"y":4}],"shared/arr":["a"]}`, want: 200},
		{name: "PATCH into array", setup: patchSetup, method: "PATCH", path: "{base}/list.json", body: `{"1":"B","3":null}`, want: 200},
		{name: "PATCH array to object", setup: patchSetup, method: "PATCH", path: "{base}/list.json", body: `{"0":null,"1":null,"3":null}`, want: 200},
		{name: "PATCH integer and double", setup: patchSetup, method: "PATCH", path: "{base}.json", body: `{"i":5,"d":5.0,"shared/e":1e3}`, want: 200},
		{name: "PATCH unicode paths", setup: patchSetup, method: "PATCH", path: "{base}.json", body: `{"é/日本":"😀","shared/a b":"q\"\\<&>\u2028"}`, want: 200},
		{name: "PATCH with priority", setup: patchSetup, method: "PATCH", path: "{base}.json", body: `{"p":{".value":1,".priority":2},"shared/q":{".priority":"x","v":true}}`, want: 200, after: []string{"{base}.json?format=export&print=pretty"}},
		{name: "PATCH timestamp", setup: patchSetup, method: "PATCH", path: "{base}.json", body: `{"at":{".sv":"timestamp"},"shared/at":{".sv":"timestamp"}}`, norm: normTimestamps, want: 200},
		{name: "PATCH increment", setup: counterSet, method: "PATCH", path: "{base}.json", body: `{"a":{".sv":{"increment":5}},"b":{".sv":{"increment":1}},"c":{".sv":{"increment":7}}}`, want: 200},
		{name: "PATCH increment multi path", setup: counterSet, method: "PATCH", path: "{base}.json", body: `{"x/n":{".sv":{"increment":2}},"s":{".sv":{"increment":-1}},"max":{".sv":{"increment":1}}}`, want: 200},
		{name: "PATCH pretty", setup: patchSetup, method: "PATCH", path: "{base}/users.json?print=pretty", body: `{"alan":{"nickname":"Al"},"x":[1,2.0]}`, want: 200},
		{name: "PATCH pretty multi path", setup: patchSetup, method: "PATCH", path: "{base}.json?print=pretty", body: `{"users/tim/age":40,"shared/n9":{"a":[true]}}`, want: 200},
		{name: "PATCH silent", setup: patchSetup, method: "PATCH", path: "{base}.json?print=silent", body: `{"shared/s":1}`, want: 204},
		{name: "PATCH ETag", setup: patchSetup, method: "PATCH", path: "{base}.json", body: `{"e":1}`, headers: []string{"X-Firebase-ETag", "true"}, want: 200},
		{name: "PATCH missing base", setup: "", method: "PATCH", path: "{base}.json", body: `{"a":1,"b/c":2}`, want: 200},

		// --- Server values (SPEC §2).
		{name: "PUT timestamp", setup: "", method: "PUT", path: "{base}/t.json", body: `{"at":{".sv":"timestamp"},"n":1}`, norm: normTimestamps, want: 200, after: []string{"{base}/t.json"}},
		{name: "PUT timestamp leaf", setup: "", method: "PUT", path: "{base}/t.json", body: `{".sv":"timestamp"}`, norm: normTimestamps, want: 200},
		{name: "PUT increment missing", setup: counterSet, method: "PUT", path: "{base}/new.json", body: `{".sv":{"increment":1}}`, want: 200},
		{name: "PUT increment int", setup: counterSet, method: "PUT", path: "{base}/a.json", body: `{".sv":{"increment":41}}`, want: 200},
		{name: "PUT increment negative", setup: counterSet, method: "PUT", path: "{base}/a.json", body: `{".sv":{"increment":-12}}`, want: 200},
		{name: "PUT increment double", setup: counterSet, method: "PUT", path: "{base}/a.json", body: `{".sv":{"increment":2.5}}`, want: 200},
		{name: "PUT increment on double", setup: counterSet, method: "PUT", path: "{base}/b.json", body: `{".sv":{"increment":1}}`, want: 200},
		{name: "PUT increment on string", setup: counterSet, method: "PUT", path: "{base}/s.json", body: `{".sv":{"increment":3}}`, want: 200},
		{name: "PUT increment overflow", setup: counterSet, method: "PUT", path: "{base}/max.json", body: `{".sv":{"increment":1}}`, want: 200},
		{name: "PUT increment nested", setup: counterSet, method: "PUT", path: "{base}/x.json", body: `{"n":{".sv":{"increment":3}},"m":{".sv":{"increment":1.5}}}`, want: 200},
		{name: "PUT increment ETag", setup: counterSet, method: "PUT", path: "{base}/a.json", body: `{".sv":{"increment":1}}`, headers: []string{"X-Firebase-ETag", "true"}, want: 200},

		// --- DELETE (SPEC §2).
		{name: "DELETE", setup: mixedSetup, method: "DELETE", path: "{base}/nest.json", want: 200},
		{name: "DELETE missing", setup: mixedSetup, method: "DELETE", path: "{base}/nobody.json", want: 200},
		{name: "DELETE prunes parents", setup: mixedSetup, method: "DELETE", path: "{base}/nest/a/b/c.json", want: 200},
		{name: "DELETE array element", setup: mixedSetup, method: "DELETE", path: "{base}/arr/1.json", want: 200},
		{name: "DELETE pretty", setup: mixedSetup, method: "DELETE", path: "{base}/leaf.json?print=pretty", want: 200},
		{name: "DELETE silent", setup: mixedSetup, method: "DELETE", path: "{base}/leaf.json?print=silent", want: 204},
		{name: "DELETE ETag", setup: mixedSetup, method: "DELETE", path: "{base}/leaf.json", headers: []string{"X-Firebase-ETag", "true"}, want: 200},

		// --- Conditional writes (SPEC §4).
		{name: "PUT if-match matching", setup: mixedSetup, method: "PUT", path: "{base}/arr.json", body: `[9]`, etagOf: "{base}/arr.json", headers: []string{"if-match", "{etag}"}, want: 200},
		{name: "PUT if-match matching ETag", setup: mixedSetup, method: "PUT", path: "{base}/arr.json", body: `{"x":1}`, etagOf: "{base}/arr.json", headers: []string{"If-Match", "{etag}", "X-Firebase-ETag", "true"}, want: 200},
		{name: "PUT if-match mismatching", setup: mixedSetup, method: "PUT", path: "{base}/arr.json", body: `[9]`, headers: []string{"if-match", "not-the-etag"}, want: 412},
		{name: "PUT if-match mismatching pretty", setup: mixedSetup, method: "PUT", path: "{base}/nest.json?print=pretty", body: `1`, headers: []string{"if-match", "not-the-etag"}, want: 412},
		{name: "PUT if-match stale", setup: mixedSetup, method: "PUT", path: "{base}/n.json", body: `6`, etagOf: "{base}/d.json", headers: []string{"if-match", "{etag}"}, want: 412},
		{name: "PUT if-match null_etag absent", setup: mixedSetup, method: "PUT", path: "{base}/new.json", body: `{"created":true}`, headers: []string{"if-match", "null_etag"}, want: 200},
		{name: "PUT if-match null_etag present", setup: mixedSetup, method: "PUT", path: "{base}/nest.json", body: `{"created":true}`, headers: []string{"if-match", "null_etag"}, want: 412},
		{name: "PUT if-match increment", setup: counterSet, method: "PUT", path: "{base}/a.json", body: `{".sv":{"increment":1}}`, etagOf: "{base}/a.json", headers: []string{"if-match", "{etag}"}, want: 200},
		{name: "DELETE if-match matching", setup: mixedSetup, method: "DELETE", path: "{base}/nest.json", etagOf: "{base}/nest.json", headers: []string{"if-match", "{etag}"}, want: 200},
		{name: "DELETE if-match mismatching", setup: mixedSetup, method: "DELETE", path: "{base}/nest.json", headers: []string{"if-match", "stale"}, want: 412},
		{name: "DELETE if-match absent", setup: mixedSetup, method: "DELETE", path: "{base}/absent.json", headers: []string{"if-match", "stale"}, want: 412},
		{name: "if-match on PATCH", setup: mixedSetup, method: "PATCH", path: "{base}.json", body: `{"x":1}`, headers: []string{"if-match", "null_etag"}, want: 400},
		{name: "if-match on POST", setup: mixedSetup, method: "POST", path: "{base}.json", body: `1`, headers: []string{"if-match", "null_etag"}, want: 400},
		{name: "if-match with print silent", setup: mixedSetup, method: "PUT", path: "{base}.json?print=silent", body: `1`, headers: []string{"if-match", "null_etag"}, want: 400},
		{name: "if-match on GET", setup: mixedSetup, method: "GET", path: "{base}.json", headers: []string{"if-match", "null_etag"}, want: 400},

		// --- Method override (SPEC §2).
		{name: "override header DELETE", setup: mixedSetup, method: "POST", path: "{base}/leaf.json", headers: []string{"X-HTTP-Method-Override", "DELETE"}, want: 200},
		{name: "override query delete", setup: mixedSetup, method: "POST", path: "{base}/leaf.json?x-http-method-override=delete", want: 200},
		{name: "override header put", setup: mixedSetup, method: "POST", path: "{base}/p.json", body: `{"x":1.0}`, headers: []string{"X-HTTP-Method-Override", "put"}, want: 200},
		{name: "override query Patch", setup: patchSetup, method: "POST", path: "{base}/users.json?x-http-method-override=Patch", body: `{"tim":{"y":2}}`, want: 200},
		{name: "override header PATCH multi path", setup: patchSetup, method: "POST", path: "{base}.json", body: `{"n1":1,"shared/n1":true}`, headers: []string{"X-HTTP-Method-Override", "PATCH"}, want: 200},
		{name: "override header GET", setup: mixedSetup, method: "POST", path: "{base}/arr.json", headers: []string{"X-HTTP-Method-Override", "get"}, want: 200},
		{name: "override header POST", setup: "", method: "POST", path: "{base}.json", body: `"v"`, headers: []string{"X-HTTP-Method-Override", "POST"}, norm: normPushKeys, want: 200, after: []string{"{base}/{push}.json"}},
		{name: "override silent DELETE", setup: mixedSetup, method: "POST", path: "{base}.json?print=silent&x-http-method-override=DELETE", want: 204},
		{name: "override header FOO", setup: mixedSetup, method: "POST", path: "{base}/n.json", body: `7`, headers: []string{"X-HTTP-Method-Override", "FOO"}, want: 400},
		{name: "override query HEAD", setup: mixedSetup, method: "POST", path: "{base}/n.json?x-http-method-override=HEAD", body: `7`, want: 400},
		{name: "increment overflowing a double", setup: `{"d":1.7e308}`, method: "PUT", path: "{base}/d.json", body: `{".sv":{"increment":1.7e308}}`, want: 400, after: []string{"{base}.json"}},
		{name: "override conflicting header and query", setup: mixedSetup, method: "POST", path: "{base}/n.json?x-http-method-override=PUT", body: `7`, headers: []string{"X-HTTP-Method-Override", "DELETE"}, want: 400, after: []string{"{base}.json"}},

		// --- Priorities (SPEC §2).
		{name: "PUT with priority", setup: "", method: "PUT", path: "{base}/tom.json", body: `{"name":{"first":"Tom"},".priority":1.0}`, want: 200, after: []string{"{base}/tom/.priority.json"}},
		{name: "PUT value and priority", setup: "", method: "PUT", path: "{base}/n.json", body: `{".value":5,".priority":"hi"}`, want: 200, after: []string{"{base}/n.json"}},
		{name: "PUT deep priorities", setup: "", method: "PUT", path: "{base}/list.json", body: `{"0":{".value":"a",".priority":2},"1":"b"}`, want: 200, after: []string{"{base}/list.json"}},
		get("GET priority", prioSetup, "{base}/tom/.priority.json", 200),
		get("GET priority of leaf", prioSetup, "{base}/n/.priority.json", 200),
		get("GET priority missing", prioSetup, "{base}/tom/name/first/.priority.json", 200),
		get("GET priority ETag", prioSetup, "{base}/tom/.priority.json", 200, "X-Firebase-ETag", "true"),
		get("GET strips priorities", prioSetup, "{base}.json", 200),
		{name: "PUT priority path", setup: prioSetup, method: "PUT", path: "{base}/tom/name/.priority.json", body: `"q"`, want: 200},
		{name: "PUT priority path number", setup: prioSetup, method: "PUT", path: "{base}/list/1/.priority.json", body: `7.5`, want: 200},
		{name: "DELETE priority path", setup: prioSetup, method: "DELETE", path: "{base}/n/.priority.json", want: 200},
		{name: "POST priority path", setup: prioSetup, method: "POST", path: "{base}/tom/.priority.json", body: `1`, want: 400},
		{name: "PATCH priority path", setup: prioSetup, method: "PATCH", path: "{base}/tom/.priority.json", body: `{"a":1}`, want: 400},

		// --- Errors (SPEC §6): bodies.
		{name: "PUT not JSON", setup: mixedSetup, method: "PUT", path: "{base}.json", body: `dddd`, want: 400},
		{name: "POST not JSON", setup: mixedSetup, method: "POST", path: "{base}.json", body: `{"a":`, want: 400},
		{name: "PATCH not JSON", setup: mixedSetup, method: "PATCH", path: "{base}.json", body: `{'a':1}`, want: 400},
		{name: "PUT trailing garbage", setup: mixedSetup, method: "PUT", path: "{base}.json", body: `{"a":1}x`, want: 400},
		{name: "PUT bad key", setup: mixedSetup, method: "PUT", path: "{base}.json", body: `{"a.b":1}`, want: 400},
		{name: "PUT bad key multi line", setup: mixedSetup, method: "PUT", path: "{base}.json", body: "[\n  {\"fine\": true},\n\n      {\"bad$\": 1}\n]", want: 400},
		{name: "PUT empty key", setup: mixedSetup, method: "PUT", path: "{base}.json", body: `{"":1}`, want: 400},
		{name: "PUT slash key", setup: mixedSetup, method: "PUT", path: "{base}.json", body: `{"a/b":1}`, want: 400},
		{name: "POST bad key", setup: mixedSetup, method: "POST", path: "{base}.json", body: "{\"a\":\n{\"b\":\n{\"c#\":1}}}", want: 400},
		{name: "PATCH bad key in value", setup: mixedSetup, method: "PATCH", path: "{base}.json", body: `{"a/b":{"c.d":1}}`, want: 400},
		{name: "PATCH bad key in path", setup: mixedSetup, method: "PATCH", path: "{base}.json", body: `{"a/b]":1}`, want: 400},
		{name: "PUT missing body", setup: mixedSetup, method: "PUT", path: "{base}.json", want: 400},
		{name: "POST blank body", setup: mixedSetup, method: "POST", path: "{base}.json", body: " \n\t", want: 400},
		{name: "PATCH missing body", setup: mixedSetup, method: "PATCH", path: "{base}.json", want: 400},
		{name: "override PUT missing body", setup: mixedSetup, method: "POST", path: "{base}.json?x-http-method-override=PUT", want: 400},
		{name: "PUT bad server value", setup: mixedSetup, method: "PUT", path: "{base}/n.json", body: `{".sv":"nope"}`, want: 400},
		{name: "PATCH bad server value", setup: mixedSetup, method: "PATCH", path: "{base}.json", body: `{"x":{".sv":{"decrement":1}}}`, want: 400},
		{name: "PUT bad increment", setup: mixedSetup, method: "PUT", path: "{base}/n.json", body: `{".sv":{"increment":"1"}}`, want: 400},
		{name: "PATCH overlapping paths", setup: patchSetup, method: "PATCH", path: "{base}/users.json", body: `{"ada":1,"ada/name":2}`, want: 400},
		{name: "PATCH array body", setup: patchSetup, method: "PATCH", path: "{base}/users.json", body: `[1,2]`, want: 400},
		{name: "PATCH number body", setup: patchSetup, method: "PATCH", path: "{base}/users.json", body: `5`, want: 400},
		{name: "PATCH string body", setup: patchSetup, method: "PATCH", path: "{base}/users.json", body: `"x"`, want: 400},

		// --- Errors: paths.
		get("GET bad token dollar", "", "{base}/a$b.json", 400),
		get("GET bad token encoded hash", "", "{base}/a%23b.json", 400),
		get("GET bad token control", "", "{base}/a%01b.json", 400),
		get("GET bad token dot", "", "{base}/a.b.json", 400),
		get("GET json json", "", "{base}/x.json.json", 400),
		{name: "PUT bad token", setup: "", method: "PUT", path: "{base}/a%5Bb%5D.json", body: `1`, want: 400},
		{name: "DELETE bad token", setup: "", method: "DELETE", path: "{base}/a%24b.json", want: 400},
		get("GET 33 segments", "", "{base}"+segs(31)+".json", 400),
		{name: "PUT 33 segments", setup: "", method: "PUT", path: "{base}" + segs(31) + ".json", body: `1`, want: 400},
		{name: "PUT body too deep", setup: "", method: "PUT", path: "{base}" + segs(29) + ".json", body: `{"a":{"b":1}}`, want: 400},
		{name: "POST below 32 segments", setup: "", method: "POST", path: "{base}" + segs(30) + ".json", body: `1`, want: 400},
		get("GET 769 byte key", "", "{base}/"+k769+".json", 400),
		get("GET 770 byte UTF-8 key", "", "{base}/"+strings.Repeat("%C3%A9", 385)+".json", 400),
		{name: "PUT 769 byte key in body", setup: "", method: "PUT", path: "{base}.json", body: `{"` + k769 + `":1}`, want: 400},
		{name: "PATCH 769 byte key in path", setup: "", method: "PATCH", path: "{base}.json", body: `{"a/` + k769 + `":1}`, want: 400},
		get("GET without json", mixedSetup, "{base}/leaf", 404),
		{name: "PUT without json", setup: mixedSetup, method: "PUT", path: "{base}/leaf", body: `1`, want: 404},
		get("GET slash", "", "/", 404),

		// --- Errors: query parameters.
		q("unknown parameter", mixedSetup, "foo=1", 400),
		q("unknown parameter case", mixedSetup, "print=pretty&Shallow=true", 400),
		q("limit without orderBy", dinosSetup, "limitToFirst=1", 400),
		q("equalTo without orderBy", dinosSetup, "equalTo=1", 400),
		q("orderBy not JSON", dinosSetup, "orderBy=name", 400),
		q("key index not string", dinosSetup, `orderBy="$key"&startAt=0`, 400),
		q("shallow with orderBy", dinosSetup, `orderBy="$key"&shallow=true`, 400),
		q("shallow with equalTo", dinosSetup, `orderBy="$key"&shallow=true&equalTo="a"`, 400),
		q("both limits", dinosSetup, `orderBy="height"&limitToFirst=1&limitToLast=1`, 400),
		q("equalTo with range", dinosSetup, `orderBy="height"&equalTo=1&startAt=0`, 400),
		q("negative limit", dinosSetup, `orderBy="height"&limitToFirst=-1`, 400),
		q("limit not a number", dinosSetup, `orderBy="height"&limitToLast=x`, 400),
		q("bound not JSON", dinosSetup, `orderBy="height"&startAt=abc`, 400),
		q("print loud", mixedSetup, "print=loud", 400),
		q("shallow maybe", mixedSetup, "shallow=maybe", 400),
		q("format csv", mixedSetup, "format=csv", 400),
		q("consistency strong", mixedSetup, "consistency=strong", 400),
		q("callback invalid", mixedSetup, "callback=1f", 400),
		q("timeout too long", mixedSetup, "timeout=16min", 400),
		q("timeout no unit", mixedSetup, "timeout=10", 400),
		q("duplicate parameter", mixedSetup, "print=pretty&print=pretty", 400),
		q("malformed query string", mixedSetup, "a=%zz", 400),
		{name: "orderBy on PUT", setup: mixedSetup, method: "PUT", path: `{base}.json?orderBy="$key"`, body: `1`, want: 400},
		{name: "writeSizeLimit huge", setup: mixedSetup, method: "PUT", path: "{base}/n.json?writeSizeLimit=huge", body: `1`, want: 400},

		// --- Errors: write too big (SPEC §3, 413).
		{name: "PUT over tiny", setup: "", method: "PUT", path: "{base}/big.json?writeSizeLimit=tiny", body: big, want: 413},
		{name: "POST over tiny", setup: "", method: "POST", path: "{base}/list.json?writeSizeLimit=tiny", body: big, want: 413},
		{name: "PATCH over tiny", setup: "", method: "PATCH", path: "{base}.json?writeSizeLimit=tiny", body: `{"big":` + big + `}`, want: 413},
		{name: "DELETE over tiny", setup: `{"big":` + big + `}`, method: "DELETE", path: "{base}/big.json?writeSizeLimit=tiny", want: 413},
		{name: "overwrite over tiny", setup: `{"big":` + big + `}`, method: "PUT", path: "{base}/big.json?writeSizeLimit=tiny", body: `1`, want: 413},

		// --- Errors: credentials (SPEC §6, §8).
		{name: "no credential GET", setup: mixedSetup, method: "GET", path: "{base}.json", anon: true, want: 401},
		{name: "no credential PUT", setup: mixedSetup, method: "PUT", path: "{base}.json", body: `1`, anon: true, want: 401},
		{name: "no credential PATCH multi path", setup: patchSetup, method: "PATCH", path: "{base}.json", body: `{"n1":1,"shared/n1":true}`, anon: true, want: 401},
		{name: "wrong auth query", setup: mixedSetup, method: "GET", path: "{base}.json?auth=wrong", anon: true, want: 401},
		{name: "malformed Authorization", setup: mixedSetup, method: "GET", path: "{base}.json", headers: []string{"Authorization", "Basic czNjcmV0"}, want: 401},
		{name: "malformed Authorization with auth query", setup: mixedSetup, method: "DELETE", path: "{base}.json?auth=" + AdminSecret, headers: []string{"Authorization", "Bearer a b"}, anon: true, want: 401},
		// Rules (SPEC §8): whatever the implementation answers, both alike.
		{name: "GET rules", setup: "", method: "GET", path: "/.settings/rules.json"},
		{name: "GET rules without credential", setup: "", method: "GET", path: "/.settings/rules.json", anon: true, want: 401},

		// --- Streams (SPEC §5) and CORS preflight (SPEC §7).
		{name: "stream", setup: mixedSetup, method: "GET", path: "{base}.json", stream: true},
		{name: "stream query", setup: dinosSetup, method: "GET", path: `{base}.json?orderBy="height"&limitToFirst=2`, stream: true},
		{name: "preflight", setup: "", method: "OPTIONS", path: "{base}/x.json", anon: true,
			headers: []string{"Origin", "https://app.example", "Access-Control-Request-Method", "PATCH",
				"Access-Control-Request-Headers", "authorization, x-firebase-etag, if-match, content-type"}},
	}
	return cases
}

// runRandom mirrors random writes through a follower (alternating) and
// the leader on parallel paths, /rand/f/<i> and /rand/l/<i>, and compares
// the answers, the state read back, and the follower's echoes with it.
func (d *differ) runRandom(t *testing.T) {
	seed := time.Now().UnixNano()
	if s := os.Getenv("ARBOR_DIFF_SEED"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("ARBOR_DIFF_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("seed %d (rerun with ARBOR_DIFF_SEED=%d)", seed, seed)
	g := &valueGen{r: rand.New(rand.NewSource(seed))}
	const rounds, patchesPerRound = 8, 2
	requests := 0
	m := &mirror{d: d, t: t}
	for i := range rounds {
		f := d.followers[i%2]
		fp, lp := fmt.Sprintf("/rand/f/%d", i), fmt.Sprintf("/rand/l/%d", i)
		root := g.object(3)
		body := root.String()
		fr := m.pair(fmt.Sprintf("round %d: PUT", i), f, "PUT", fp+".json", lp+".json", body)
		if fr.Status == http.StatusOK {
			m.echoMatches(fmt.Sprintf("round %d: PUT echo", i), f, fp+".json", fr.Body, body)
		}
		requests += 3
		for j := range patchesPerRound {
			fields := g.patch(root)
			body := patchBody(fields)
			what := fmt.Sprintf("round %d: PATCH %d", i, j)
			fr := m.pair(what, f, "PATCH", fp+".json", lp+".json", body)
			requests += 2
			if fr.Status != http.StatusOK {
				continue
			}
			var echo map[string]json.RawMessage
			if err := json.Unmarshal([]byte(fr.Body), &echo); err != nil {
				m.report(what+": echo is not a JSON object", "body "+body, fmt.Sprintf("%q: %v", fr.Body, err))
				continue
			}
			for _, fl := range fields {
				p := fl.pathString()
				raw, ok := echo[p]
				if !ok {
					m.report(what+": echo lacks field "+strconv.Quote(p), "body "+body, fr.Body)
					continue
				}
				m.echoMatches(what+" echo of "+strconv.Quote(p), f, fp+"/"+escapeSegments(fl.path)+".json", string(raw), body)
				requests++
			}
		}
		for _, q := range []string{"", "?format=export", "?shallow=true", "?print=pretty"} {
			m.pair(fmt.Sprintf("round %d: GET%s", i, q), f, "GET", fp+".json"+q, lp+".json"+q, "", "X-Firebase-ETag", "true")
			requests += 2
		}
		// consistency=local on the follower: poll until it has applied the
		// writes (the linearizable reads above make that immediate).
		want := m.retry(d.leader, "GET", lp+".json?format=export&consistency=local", "")
		var got Response
		poll(t, 10*time.Second, f.Name+" to read round "+strconv.Itoa(i)+" locally", func() bool {
			got = m.retry(f, "GET", fp+".json?format=export&consistency=local", "")
			requests++
			return got.Status == want.Status && got.Body == want.Body
		}, func() string {
			return fmt.Sprintf("follower %d %q, leader %d %q", got.Status, got.Body, want.Status, want.Body)
		})
		requests++
	}
	t.Logf("%d requests, %d differences, %d retries", requests, m.diffs, m.retries)
}

// mirror sends the random round's requests and reports differences.
type mirror struct {
	d       *differ
	t       *testing.T
	diffs   int
	retries int
}

// maxReported bounds the differences printed in full.
const maxReported = 10

func (m *mirror) report(what string, details ...string) {
	m.t.Helper()
	m.diffs++
	if m.diffs > maxReported {
		if m.diffs == maxReported+1 {
			m.t.Errorf("more differences follow; only the count is reported from now on")
		}
		return
	}
	m.t.Errorf("%s\n  %s", what, strings.Join(details, "\n  "))
}

// retry sends an idempotent request (the random round has no server values
// and no pushes) until it gets an answer other than 503.
func (m *mirror) retry(n *Node, method, path, body string, headers ...string) Response {
	m.t.Helper()
	deadline := time.Now().Add(sendRetryWindow)
	for {
		r, err := n.TryDo(method, path, body, headers...)
		if err == nil && r.Status != http.StatusServiceUnavailable {
			return r
		}
		if time.Now().After(deadline) {
			m.t.Fatalf("%s %s through %s: no answer but 503s or errors for %s (last: %v %d %s)", method, path, n.Name, sendRetryWindow, err, r.Status, r.Body)
		}
		m.retries++
		m.t.Logf("%s %s through %s: %v %d %s; retrying", method, path, n.Name, err, r.Status, strings.TrimSpace(r.Body))
		m.d.refresh(m.t)
	}
}

// pair sends the request through follower f at fpath and through the
// leader at lpath, compares the answers and returns the follower's.
func (m *mirror) pair(what string, f *Node, method, fpath, lpath, body string, headers ...string) Response {
	m.t.Helper()
	fr := m.retry(f, method, fpath, body, headers...)
	lr := m.retry(m.d.leader, method, lpath, body, headers...)
	if p := compareResponses(lr, fr); p != "" || fr.Status >= 500 || lr.Status >= 500 {
		if p == "" {
			p = "both answered a 5xx"
		}
		details := []string{"DIFFERENCES: " + p}
		if body != "" {
			details = append(details, "request body: "+truncate(body))
		}
		details = append(details,
			fmt.Sprintf("leader %s (%s %s):%s", m.d.leader.Name, method, lpath, formatAnswers([]diffAnswer{{"answer", lr}})),
			fmt.Sprintf("follower %s (%s %s):%s", f.Name, method, fpath, formatAnswers([]diffAnswer{{"answer", fr}})))
		m.report(what+": the follower answers differently from the leader", details...)
	}
	return fr
}

// echoMatches checks that the follower's echo of a written value is what
// a GET of the location reads through the follower.
func (m *mirror) echoMatches(what string, f *Node, path, echo, body string) {
	m.t.Helper()
	r := m.retry(f, "GET", path, "")
	if r.Status != http.StatusOK || r.Body != echo {
		m.report(what+": the follower's echo is not what it reads back",
			"request body: "+truncate(body),
			"echo: "+truncate(strconv.Quote(echo)),
			fmt.Sprintf("GET %s through %s: %d %s", path, f.Name, r.Status, truncate(strconv.Quote(r.Body))))
	}
}

// rval is a random JSON value: a leaf (its JSON text), an object or an
// array (kids, with keys for an object).
type rval struct {
	leaf  string
	array bool
	keys  []string
	kids  []*rval
}

func (v *rval) isContainer() bool { return v.leaf == "" }

func (v *rval) String() string {
	var b strings.Builder
	v.write(&b)
	return b.String()
}

func (v *rval) write(b *strings.Builder) {
	switch {
	case !v.isContainer():
		b.WriteString(v.leaf)
	case v.array:
		b.WriteByte('[')
		for i, k := range v.kids {
			if i > 0 {
				b.WriteByte(',')
			}
			k.write(b)
		}
		b.WriteByte(']')
	default:
		b.WriteByte('{')
		for i, k := range v.kids {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(jsonString(v.keys[i]))
			b.WriteByte(':')
			k.write(b)
		}
		b.WriteByte('}')
	}
}

// child returns the child called key (an index for an array), or nil.
func (v *rval) child(key string) *rval {
	if v.array {
		i, err := strconv.Atoi(key)
		if err != nil || i < 0 || i >= len(v.kids) || strconv.Itoa(i) != key {
			return nil
		}
		return v.kids[i]
	}
	for i, k := range v.keys {
		if k == key {
			return v.kids[i]
		}
	}
	return nil
}

// childKeys lists the keys a path can use to reach the children.
func (v *rval) childKeys() []string {
	if !v.isContainer() {
		return nil
	}
	if v.array {
		ks := make([]string, len(v.kids))
		for i := range ks {
			ks[i] = strconv.Itoa(i)
		}
		return ks
	}
	return v.keys
}

// toObject turns an array into the object the server stores it as.
func (v *rval) toObject() {
	if v.array {
		v.keys = v.childKeys()
		v.array = false
	}
}

// set applies one PATCH field to the model (nil deletes), so the next
// PATCH of the round addresses the structure the server has.
func (v *rval) set(path []string, val *rval) {
	for _, seg := range path[:len(path)-1] {
		v.toObject()
		c := v.child(seg)
		if c == nil || !c.isContainer() {
			c = &rval{}
			v.put(seg, c)
		}
		v = c
	}
	v.toObject()
	v.put(path[len(path)-1], val)
}

func (v *rval) put(key string, val *rval) {
	for i, k := range v.keys {
		if k == key {
			if val == nil {
				v.keys = slices.Delete(v.keys, i, i+1)
				v.kids = slices.Delete(v.kids, i, i+1)
			} else {
				v.kids[i] = val
			}
			return
		}
	}
	if val != nil {
		v.keys = append(v.keys, key)
		v.kids = append(v.kids, val)
	}
}

// patchField is one field of a random PATCH: a path and a value (nil
// deletes).
type patchField struct {
	path []string
	val  *rval
}

func (f patchField) pathString() string { return strings.Join(f.path, "/") }

func patchBody(fields []patchField) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(jsonString(f.pathString()))
		b.WriteByte(':')
		if f.val == nil {
			b.WriteString("null")
		} else {
			f.val.write(&b)
		}
	}
	b.WriteByte('}')
	return b.String()
}

func escapeSegments(path []string) string {
	esc := make([]string, len(path))
	for i, s := range path {
		esc[i] = url.PathEscape(s)
	}
	return strings.Join(esc, "/")
}

// jsonString encodes s as a JSON string without HTML escaping.
func jsonString(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		panic(err) // a string always encodes
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// valueGen generates random valid values, keys and PATCHes.
type valueGen struct{ r *rand.Rand }

func (g *valueGen) pick(xs []string) string { return xs[g.r.Intn(len(xs))] }

// key returns a random valid key: words, integer-like keys (which make
// arrays and change the order), unicode and punctuation.
func (g *valueGen) key() string {
	switch g.r.Intn(10) {
	case 0, 1:
		return strconv.Itoa(g.r.Intn(6))
	case 2:
		return g.pick([]string{"007", "-3", "10", "2147483647", "2147483648", "-2147483649", "1e3"})
	case 3:
		return g.pick([]string{"é", "日本", "😀x", "a b", "a+b", `q"k`, `b\k`, "<&>", "x%41", "ñandú", "Z", "_", "-", "~", "-Mpush"})
	default:
		n := 1 + g.r.Intn(6)
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('a' + g.r.Intn(26))
		}
		return string(b)
	}
}

// leaf returns a random primitive's JSON text, in a few spellings.
func (g *valueGen) leaf() string {
	switch g.r.Intn(10) {
	case 0, 1, 2:
		parts := []string{"plain", `"`, `\`, "\n", "\t", "\u0001", "\u007f", "\u2028", "<", ">", "&", "é", "日本", "😀", "", " ", "/"}
		var s strings.Builder
		for range 1 + g.r.Intn(4) {
			s.WriteString(g.pick(parts))
		}
		enc := jsonString(s.String())
		if g.r.Intn(3) == 0 { // other spellings the server must read alike
			enc = strings.NewReplacer("é", `\u00e9`, "/", `\/`, "😀", `\ud83d\ude00`).Replace(enc)
		}
		return enc
	case 3, 4:
		return strconv.Itoa(g.r.Intn(2001) - 1000)
	case 5:
		return g.pick([]string{"9223372036854775807", "-9223372036854775808", "9007199254740993", "0", "-0", "4294967296"})
	case 6, 7:
		return g.pick([]string{"5.0", "1e3", "-0.5", "1.5e-7", "1e300", "0.1", "123456789.125", "-0.0", "2.5", "1E2", "3.14159265358979"})
	case 8:
		return strconv.FormatFloat(g.r.NormFloat64()*1000, 'g', -1, 64)
	default:
		return g.pick([]string{"true", "false"})
	}
}

// value returns a random non-null value at most depth levels deep, with no
// null inside (a null member's echo is implementation-defined) and no
// empty container.
func (g *valueGen) value(depth int) *rval {
	if depth <= 0 || g.r.Intn(3) > 0 {
		return &rval{leaf: g.leaf()}
	}
	if g.r.Intn(4) == 0 {
		v := &rval{array: true}
		for range 1 + g.r.Intn(4) {
			v.kids = append(v.kids, g.value(depth-1))
		}
		return v
	}
	return g.object(depth - 1)
}

// object returns a random object of 1–4 children.
func (g *valueGen) object(depth int) *rval {
	v := &rval{}
	for range 1 + g.r.Intn(4) {
		k := g.key()
		if v.child(k) == nil {
			v.put(k, g.value(depth))
		}
	}
	return v
}

// patch returns 1–4 non-overlapping fields: paths into the existing
// structure or new ones, with random values or null. It applies them to
// root.
func (g *valueGen) patch(root *rval) []patchField {
	var fields []patchField
	overlaps := func(p []string) bool {
		for _, f := range fields {
			n := min(len(p), len(f.path))
			if slices.Equal(p[:n], f.path[:n]) {
				return true
			}
		}
		return false
	}
	want := 1 + g.r.Intn(4)
	for try := 0; len(fields) < want && try < 20; try++ {
		var p []string
		v := root
		for {
			ks := v.childKeys()
			if len(ks) > 0 && g.r.Intn(5) < 3 {
				k := g.pick(ks)
				p = append(p, k)
				v = v.child(k)
				if g.r.Intn(3) == 0 {
					break
				}
				continue
			}
			for range 1 + g.r.Intn(2) {
				p = append(p, g.key())
			}
			break
		}
		if len(p) < 2 && g.r.Intn(2) == 0 { // mostly multi-segment paths: the point of the round
			p = append(p, g.key())
		}
		if overlaps(p) {
			continue
		}
		f := patchField{path: p}
		if g.r.Intn(6) > 0 {
			f.val = g.value(2)
		}
		fields = append(fields, f)
	}
	for _, f := range fields {
		root.set(f.path, f.val)
	}
	return fields
}

// testAdminSDKThroughEveryNode points an unmodified firebase-admin-go
// client at each node in turn — followers included, as a Kubernetes
// Service would — and runs the calls whose answers cross from the leader:
// Set, a multi-path Update with nested paths, Push, Delete and a
// Transaction (ETag and if-match, with a conflict through another node).
func testAdminSDKThroughEveryNode(t *testing.T, c *Cluster) {
	ctx := context.Background()
	for _, n := range c.Nodes {
		sdk := firebaseClient(t, n, AdminSecret)
		base := sdk.NewRef("sdkdiff/" + n.Name)
		if err := base.Set(ctx, map[string]any{"u": map[string]any{"name": "A", "n": 1}}); err != nil {
			t.Fatalf("Set via %s: %v", n.Name, err)
		}
		if err := base.Update(ctx, map[string]any{"u/n": 2, "shared/" + n.Name: true, "deep/a/b/c": "x", "u/name": nil}); err != nil {
			t.Fatalf("multi-path Update via %s: %v", n.Name, err)
		}
		ref, err := base.Child("list").Push(ctx, map[string]any{"by": n.Name})
		if err != nil || !validPushKey(ref.Key) {
			t.Fatalf("Push via %s: %v (key %q)", n.Name, err, ref.Key)
		}
		if err := base.Child("deep").Delete(ctx); err != nil {
			t.Fatalf("Delete via %s: %v", n.Name, err)
		}
		counter := base.Child("counter")
		tries := 0
		err = counter.Transaction(ctx, func(tn db.TransactionNode) (any, error) {
			tries++
			var v int
			if err := tn.Unmarshal(&v); err != nil {
				return nil, err
			}
			if tries == 1 { // a concurrent writer through another node
				other := c.Others(n)[0]
				wantResponse(t, "concurrent PUT via "+other.Name, other.Do(t, "PUT", "/sdkdiff/"+n.Name+"/counter.json", "10"), 200, "10")
			}
			return v + 1, nil
		})
		if err != nil || tries != 2 {
			t.Fatalf("Transaction via %s: %v after %d tries (want a retry after the conflict)", n.Name, err, tries)
		}
		want := `{"counter":11,"list":{"` + ref.Key + `":{"by":"` + n.Name + `"}},"shared":{"` + n.Name + `":true},"u":{"n":2}}`
		for _, m := range c.Nodes {
			wantResponse(t, "GET via "+m.Name+" after the SDK calls via "+n.Name, m.Do(t, "GET", "/sdkdiff/"+n.Name+".json", ""), 200, want)
		}
	}
}
