package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestBadInput sends hostile and malformed requests: each gets its 4xx
// and SPEC message, never a 5xx, and the data is unchanged afterwards
// (the root's ETag is the same as before).
func TestBadInput(t *testing.T) {
	const (
		notJSON  = "Invalid data; couldn't parse JSON object, array, or value."
		tooLong  = "Invalid path: Path too long or too deep"
		badToken = "Invalid path: Invalid token in path"
		tooBig   = "Error: WRITE_TOO_BIG: Data to write exceeds the maximum size that can be modified with a single request."
		// Over the largest write a node takes (cluster.MaxWriteBytes):
		// the limit and the way out.
		tooBigOne = "Error: WRITE_TOO_BIG: Data to write exceeds the maximum size that can be modified with a single request: " +
			"this write's body is 19.0 MiB of JSON, and one write carries at most 16.0 MiB. " +
			"Send it as several PATCHes of a part each, or load a whole database with `arbor restore`."
		badKey = "Invalid data; couldn't parse key beginning at %s. Key value can't be empty or contain $ # [ ] / or ."
		anyMsg = "" // a 4xx whose text the SPEC leaves open: checked for shape only
	)
	n := StartReadyNode(t, Options{})
	big := strings.Repeat("b", 70<<10) // over writeSizeLimit=tiny (64 KiB)
	want := `{"big":"` + big + `","keep":{"a":1,"b":[true,"x"]},"n":5.5}`
	mustStatus(t, "setup", n.Do(t, "PUT", "/bad.json?print=silent", want), http.StatusNoContent)

	// The limits themselves are allowed: a 10 MiB string, 32 levels.
	const mib = 1 << 20
	maxString := `"` + strings.Repeat("s", 10*mib) + `"`
	if r := n.Do(t, "PUT", "/limits/s.json?print=silent", maxString); r.Status != http.StatusNoContent {
		t.Errorf("PUT a 10 MiB string: %d %.200q", r.Status, r.Body)
	}
	deep := strings.Repeat(`{"a":`, 31) + "1" + strings.Repeat("}", 31) // 32 levels below the root with /limits
	if r := n.Do(t, "PUT", "/limits.json?print=silent", deep); r.Status != http.StatusNoContent {
		t.Errorf("PUT 32 levels: %d %.200q", r.Status, r.Body)
	}
	mustStatus(t, "DELETE /limits", n.Do(t, "DELETE", "/limits.json", ""), 200)

	root := func() string {
		t.Helper()
		r := n.Do(t, "GET", "/.json", "", "X-Firebase-ETag", "true")
		if r.Status != 200 || r.Header.Get("ETag") == "" {
			t.Fatalf("GET /.json: %d %.200q ETag %q", r.Status, r.Body, r.Header.Get("ETag"))
		}
		return r.Header.Get("ETag")
	}
	before := root()

	nest := func(depth int, open, close string) string {
		return strings.Repeat(open, depth) + "1" + strings.Repeat(close, depth)
	}
	cases := []struct {
		what    string
		method  string
		path    string
		body    string
		headers []string
		status  int
		msg     string
	}{
		{"malformed JSON", "PUT", "/bad.json", `{"keep":1`, nil, 400, notJSON},
		{"malformed JSON in PATCH", "PATCH", "/bad.json", `{"keep":}`, nil, 400, notJSON},
		{"malformed JSON in POST", "POST", "/bad.json", `[1 2]`, nil, 400, notJSON},
		{"two values", "PUT", "/bad.json", `{"a":1}{"b":2}`, nil, 400, notJSON},
		{"trailing NUL", "PUT", "/bad.json", "{\"a\":1}\x00", nil, 400, notJSON},
		{"1,000-deep arrays", "PUT", "/bad.json", nest(1000, "[", "]"), nil, 400, tooLong},
		{"1,000-deep objects", "PUT", "/bad.json", nest(1000, `{"a":`, "}"), nil, 400, tooLong},
		{"100,000-deep arrays", "PUT", "/bad.json", nest(100000, "[", "]"), nil, 400, tooLong},
		{"1,000-deep PATCH value", "PATCH", "/bad.json", `{"keep/a":` + nest(1000, "[", "]") + "}", nil, 400, tooLong},
		{"33 levels with the path", "PUT", "/bad/keep.json", nest(31, `{"a":`, "}"), nil, 400, tooLong},
		{"769-byte key", "PUT", "/bad.json", `{"` + strings.Repeat("k", 769) + `":1}`, nil, 400, tooLong},
		{"769-byte key in a path", "PUT", "/bad/" + strings.Repeat("k", 769) + ".json", `1`, nil, 400, tooLong},
		{"10 MiB + 1 string", "PUT", "/bad/keep/a.json", `"` + strings.Repeat("s", 10*mib+1) + `"`, nil, 413, tooBig},
		{"body over writeSizeLimit=tiny", "PUT", "/bad/keep.json?writeSizeLimit=tiny", `"` + strings.Repeat("s", 64<<10) + `"`, nil, 413, tooBig},
		{"body over the default limit (16 MiB)", "PUT", "/bad/keep.json", `[` + strings.Repeat(`"0123456789abcdef",`, mib) + `1]`, nil, 413, tooBigOne},
		{"delete over writeSizeLimit=tiny", "DELETE", "/bad/big.json?writeSizeLimit=tiny", "", nil, 413, tooBig},
		{"overwrite over writeSizeLimit=tiny", "PATCH", "/bad.json?writeSizeLimit=tiny", `{"big":null}`, nil, 413, tooBig},
		{"invalid UTF-8 in a string", "PUT", "/bad.json", "\"\xff\xfe\"", nil, 400, notJSON},
		{"invalid UTF-8 in a key", "PUT", "/bad.json", "{\"\xc3\":1}", nil, 400, notJSON},
		{"lone surrogate escape", "PUT", "/bad.json", `"\ud800"`, nil, 400, notJSON},
		{"raw control character", "PUT", "/bad.json", "\"a\x01b\"", nil, 400, notJSON},
		{"number out of range", "PUT", "/bad.json", `1e400`, nil, 400, notJSON},
		{"invalid UTF-8 in the path", "PUT", "/bad/a%FF.json", `1`, nil, 400, badToken},
		{"unknown query parameter", "GET", "/.json?bogus=1", "", nil, 400, "Invalid query parameter: bogus"},
		{"unknown query parameter on PUT", "PUT", "/bad.json?bogus=1", `1`, nil, 400, "Invalid query parameter: bogus"},
		{"unknown override method", "POST", "/bad.json", `1`, []string{"X-HTTP-Method-Override", "TRACE"}, 400, anyMsg},
		{"unknown override method in the query", "POST", "/bad.json?x-http-method-override=MERGE", `1`, nil, 400, anyMsg},
		{"unknown HTTP method", "FOO", "/bad.json", `1`, nil, 400, anyMsg},
		{"bad path token", "PUT", "/a$b.json", `1`, nil, 400, badToken},
		{"bad path token below", "DELETE", "/bad/k[0].json", "", nil, 400, badToken},
		{"bad key in body", "PUT", "/bad.json", "{\n  \"keep\": {\n    \"a.b\": 1\n  }\n}", nil, 400, fmt.Sprintf(badKey, "3:5")},
		{"bad key in PATCH", "PATCH", "/bad.json", `{"keep/a":{"x":{"#":1}}}`, nil, 400, fmt.Sprintf(badKey, "1:17")},
		{"bad PATCH path", "PATCH", "/bad.json", `{"keep/a$":1}`, nil, 400, fmt.Sprintf(badKey, "1:2")},
		{"overlapping PATCH paths", "PATCH", "/bad.json", `{"keep":1,"keep/a":2}`, nil, 400, anyMsg},
		{"PATCH of an array", "PATCH", "/bad.json", `[1]`, nil, 400, anyMsg},
		{"unknown server value", "PUT", "/bad.json", `{"a":{".sv":"now"}}`, nil, 400, "Invalid data; unrecognized server value"},
		{".value with children", "PUT", "/bad.json", `{".value":1,"a":2}`, nil, 400, anyMsg},
		{"object priority", "PUT", "/bad.json", `{".priority":{"a":1},"b":1}`, nil, 400, anyMsg},
		{"missing body", "PUT", "/bad.json", "", nil, 400, "Missing PUT or POST data"},
		{"repeated parameter", "GET", "/bad.json?print=pretty&print=silent", "", nil, 400, anyMsg},
		{"silent with if-match", "PUT", "/bad.json?print=silent", `1`, []string{"if-match", "null_etag"}, 400, anyMsg},
		{"if-match on PATCH", "PATCH", "/bad.json", `{"n":1}`, []string{"if-match", "null_etag"}, 400, anyMsg},
		{"bad timeout", "GET", "/bad.json?timeout=1year", "", nil, 400, anyMsg},
		{"bad auth_variable_override", "PUT", "/bad.json?auth_variable_override=%7Bx", `1`, nil, 400, anyMsg},
		{"bad shallow", "GET", "/bad.json?shallow=maybe", "", nil, 400, anyMsg},
		{"bad format", "GET", "/bad.json?format=xml", "", nil, 400, anyMsg},
		{"bad consistency", "GET", "/bad.json?consistency=eventual", "", nil, 400, anyMsg},
		{"shallow on PUT", "PUT", "/bad.json?shallow=true", `1`, nil, 400, anyMsg},
		{"malformed Authorization", "PUT", "/bad.json", `1`, []string{"Authorization", "Basic Zm9v"}, 401, "Could not parse auth token."},
	}
	for _, c := range cases {
		r := n.Do(t, c.method, c.path, c.body, c.headers...)
		if r.Status >= 500 {
			t.Errorf("%s: %d %.300q — a client mistake must never be a 5xx", c.what, r.Status, r.Body)
			continue
		}
		if c.msg == anyMsg {
			if r.Status != c.status {
				t.Errorf("%s: got %d %.300q, want %d", c.what, r.Status, r.Body, c.status)
			}
			errorMessage(t, c.what, r.Body)
		} else {
			wantError(t, c.what, r, c.status, c.msg)
		}
		if after := root(); after != before {
			t.Fatalf("%s changed the data: root ETag %s, was %s; /bad is now %.300q", c.what, after, before, n.Do(t, "GET", "/bad.json", "").Body)
		}
	}

	wantResponse(t, "data unchanged", n.Do(t, "GET", "/.json", ""), 200, `{"bad":`+want+`}`)
	if r := n.DoAs(t, noAuth, "GET", "/livez", ""); r.Status != 200 {
		t.Errorf("/livez after the bad input: %d", r.Status)
	}
	if logs := n.Logs(); strings.Contains(logs, "level=ERROR") || strings.Contains(logs, "panic") {
		t.Errorf("the node logged an error or a panic:\n%s", logs)
	}
}
