package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// secondSecret is a second --admin-secret of the node TestErrors starts.
const secondSecret = "another-s3cret"

// TestErrors checks SPEC §6's error bodies byte for byte, and the
// credential rules of §8 on a node started without --dev.
func TestErrors(t *testing.T) {
	n := StartReadyNode(t, Options{Args: []string{"--admin-secret", secondSecret}})
	t.Run("BodyErrors", func(t *testing.T) { testBodyErrors(t, n) })
	t.Run("PathErrors", func(t *testing.T) { testPathErrors(t, n) })
	t.Run("QueryErrors", func(t *testing.T) { testQueryErrors(t, n) })
	t.Run("Credentials", func(t *testing.T) { testCredentials(t, n) })
	t.Run("Status", func(t *testing.T) { testStatusEndpoint(t, n) })
	t.Run("PlainHTTP", func(t *testing.T) { testPlainHTTP(t, n) })
}

// testBodyErrors: unparsable bodies, bad keys with their line:col, missing
// bodies.
func testBodyErrors(t *testing.T, n *Node) {
	const notJSON = "Invalid data; couldn't parse JSON object, array, or value."
	for _, body := range []string{`dddd`, `{"a":`, `{'a':1}`, `[1,]`, `{"a":1}x`, `{"a":1,}`, `"unterminated`, `01`, `NaN`, `{"a" 1}`} {
		for _, method := range []string{"PUT", "POST", "PATCH"} {
			wantError(t, method+" "+body, n.Do(t, method, "/errors/body.json", body), 400, notJSON)
		}
	}

	badKey := func(pos string) string {
		return "Invalid data; couldn't parse key beginning at " + pos + ". Key value can't be empty or contain $ # [ ] / or ."
	}
	for _, c := range []struct{ method, body, pos string }{
		{"PUT", `{"a.b":1}`, "1:2"},
		{"PUT", `{"":1}`, "1:2"},
		{"PUT", `{"ok":{"b$":1}}`, "1:8"},
		{"PUT", `{"x":1, "[y]":2}`, "1:9"},
		{"PUT", `{"a#":1}`, "1:2"},
		{"PUT", `{"a]":1}`, "1:2"},
		{"PUT", `{"a/b":1}`, "1:2"},
		{"PUT", "{\n  \"ok\": 1,\n  \"a.b\": 2\n}", "3:3"},
		{"PUT", "[\n  {\"fine\": true},\n\n      {\"bad$\": 1}\n]", "4:8"},
		{"POST", `{"a.b":1}`, "1:2"},
		{"POST", "{\"a\":\n{\"b\":\n{\"c#\":1}}}", "3:2"},
		{"PATCH", `{"a/b":{"c.d":1}}`, "1:9"},
		{"PATCH", "{\"ok\":1,\n \"x\":{\"$y\":2}}", "2:7"},
	} {
		wantError(t, c.method+" "+c.body, n.Do(t, c.method, "/errors/body.json", c.body), 400, badKey(c.pos))
	}

	// A missing body on PUT, POST or PATCH (whitespace is no body either).
	for _, method := range []string{"PUT", "POST", "PATCH"} {
		wantError(t, method+" without body", n.Do(t, method, "/errors/body.json", ""), 400, "Missing PUT or POST data")
		wantError(t, method+" with blank body", n.Do(t, method, "/errors/body.json", " \n\t"), 400, "Missing PUT or POST data")
	}
	wantError(t, "override PUT without body", n.Do(t, "POST", "/errors/body.json?x-http-method-override=PUT", ""), 400, "Missing PUT or POST data")

	wantResponse(t, "nothing written", n.Do(t, "GET", "/errors.json", ""), 200, "null")
}

// testPathErrors: bad path tokens, paths too deep, keys too long.
func testPathErrors(t *testing.T, n *Node) {
	const badToken = "Invalid path: Invalid token in path"
	const tooLong = "Invalid path: Path too long or too deep"
	for _, p := range []string{"/a$b.json", "/a[b.json", "/a]b.json", "/a.b.json", "/servers/server1.json.json",
		"/a%23b.json", "/a%24b.json", "/a%01b.json", "/a%7Fb.json", "/a%2Eb.json", "/ok/a%5Bb%5D.json"} {
		for _, method := range []string{"GET", "PUT", "DELETE"} {
			body := ""
			if method == "PUT" {
				body = "1"
			}
			wantError(t, method+" "+p, n.Do(t, method, p, body), 400, badToken)
		}
	}

	segs := func(k int) string { return strings.Repeat("/s", k) + ".json" }
	wantResponse(t, "32 segments", n.Do(t, "GET", segs(32), ""), 200, "null")
	wantResponse(t, "PUT at 32 segments", n.Do(t, "PUT", segs(32), "1"), 200, "1")
	wantError(t, "33 segments", n.Do(t, "GET", segs(33), ""), 400, tooLong)
	wantError(t, "PUT at 33 segments", n.Do(t, "PUT", segs(33), "1"), 400, tooLong)
	// A body that would nest deeper than 32 levels below the root.
	wantError(t, "PUT too deep a body", n.Do(t, "PUT", segs(31), `{"a":{"b":1}}`), 400, tooLong)
	wantError(t, "POST below 32 segments", n.Do(t, "POST", segs(32), `1`), 400, tooLong)
	wantResponse(t, "PUT deep enough a body", n.Do(t, "PUT", segs(31), `{"a":1}`), 200, `{"a":1}`)
	wantResponse(t, "clean up", n.Do(t, "DELETE", "/s.json", ""), 200, "null")

	k768, k769 := strings.Repeat("k", 768), strings.Repeat("k", 769)
	wantResponse(t, "768-byte key", n.Do(t, "GET", "/errors/"+k768+".json", ""), 200, "null")
	wantError(t, "769-byte key", n.Do(t, "GET", "/errors/"+k769+".json", ""), 400, tooLong)
	wantError(t, "PUT 769-byte key", n.Do(t, "PUT", "/errors/"+k769+".json", "1"), 400, tooLong)
	// 256 two-byte characters are 512 bytes; 385 are 770.
	wantResponse(t, "512-byte UTF-8 key", n.Do(t, "GET", "/errors/"+strings.Repeat("%C3%A9", 256)+".json", ""), 200, "null")
	wantError(t, "770-byte UTF-8 key", n.Do(t, "GET", "/errors/"+strings.Repeat("%C3%A9", 385)+".json", ""), 400, tooLong)
	wantError(t, "769-byte key in a body", n.Do(t, "PUT", "/errors/x.json", `{"`+k769+`":1}`), 400, tooLong)
	wantError(t, "769-byte key in a PATCH path", n.Do(t, "PATCH", "/errors/x.json", `{"a/`+k769+`":1}`), 400, tooLong)

	wantResponse(t, "nothing written", n.Do(t, "GET", "/errors.json", ""), 200, "null")
}

// testQueryErrors: SPEC §3's exact texts for query parameters.
func testQueryErrors(t *testing.T, n *Node) {
	for _, c := range []struct{ query, msg string }{
		{"foo=1", "Invalid query parameter: foo"},
		{"print=pretty&Shallow=true", "Invalid query parameter: Shallow"},
		{"limitToFirst=1", "orderBy must be defined when other query parameters are defined"},
		{"equalTo=1", "orderBy must be defined when other query parameters are defined"},
		{"orderBy=name", "orderBy must be a valid JSON encoded path"},
		{`orderBy="$key"&startAt=0`, "Provided key index type is invalid, must be string"},
		{`orderBy="$key"&shallow=true&equalTo="a"`, "Mixing 'shallow' and querying parameters is not supported"},
		{`orderBy="$key"&shallow=true`, "Mixing 'shallow' and querying parameters is not supported"},
	} {
		path := "/errors/q.json?" + strings.NewReplacer(`"`, "%22", "$", "%24").Replace(c.query)
		wantError(t, "GET ?"+c.query, n.Do(t, "GET", path, ""), 400, c.msg)
	}
	for _, q := range []string{`orderBy="$key"&limitToFirst=-1`, `orderBy="$key"&limitToFirst=x`,
		`orderBy="$key"&limitToFirst=1&limitToLast=1`, `orderBy="a"&equalTo=1&startAt=0`} {
		path := "/errors/q.json?" + strings.NewReplacer(`"`, "%22", "$", "%24").Replace(q)
		r := n.Do(t, "GET", path, "")
		if r.Status != 400 {
			t.Errorf("GET ?%s: %d %q, want 400", q, r.Status, r.Body)
		}
		errorMessage(t, "GET ?"+q, r.Body)
	}
}

// testCredentials: non-admins get 401 Permission denied (default rules
// deny everything); every credential form of an admin secret works; a
// malformed Authorization header is 401.
func testCredentials(t *testing.T, n *Node) {
	const denied = "Permission denied"
	const unparsable = "Could not parse auth token."
	mustStatus(t, "setup", n.Do(t, "PUT", "/cred.json", `{"v":1}`), 200)

	for _, c := range []struct{ method, path, body string }{
		{"GET", "/cred.json", ""},
		{"GET", "/.json", ""},
		{"PUT", "/cred.json", `2`},
		{"POST", "/cred.json", `2`},
		{"PATCH", "/cred.json", `{"v":2}`},
		{"DELETE", "/cred.json", ""},
		{"GET", "/.settings/rules.json", ""},
	} {
		wantError(t, "no credential: "+c.method+" "+c.path, n.DoAs(t, noAuth, c.method, c.path, c.body), 401, denied)
	}

	// Every credential form of either admin secret is admin.
	for _, secret := range []string{AdminSecret, secondSecret} {
		wantResponse(t, "?auth=", n.DoAs(t, noAuth, "GET", "/cred/v.json?auth="+secret, ""), 200, `1`)
		wantResponse(t, "?access_token=", n.DoAs(t, noAuth, "GET", "/cred/v.json?access_token="+secret, ""), 200, `1`)
		wantResponse(t, "Bearer", n.DoAs(t, secret, "GET", "/cred/v.json", ""), 200, `1`)
		wantResponse(t, "bearer", n.DoAs(t, noAuth, "GET", "/cred/v.json", "", "Authorization", "bearer "+secret), 200, `1`)
		wantResponse(t, "PATCH ?auth=", n.DoAs(t, noAuth, "PATCH", "/cred.json?auth="+secret, `{"w":1}`), 200, `{"w":1}`)
	}

	// A token that is no admin secret (and no JWT) is refused.
	for _, c := range []struct {
		what string
		auth string
		path string
	}{
		{"wrong Bearer", "wrong", "/cred.json"},
		{"wrong ?auth=", noAuth, "/cred.json?auth=wrong"},
		{"wrong ?access_token=", noAuth, "/cred.json?access_token=wrong"},
		{"secret prefix", AdminSecret[:3], "/cred.json"},
		{"secret with suffix", AdminSecret + "x", "/cred.json"},
	} {
		r := n.DoAs(t, c.auth, "GET", c.path, "")
		if msg := errorMessage(t, c.what, r.Body); r.Status != 401 || msg != unparsable {
			t.Errorf("%s: %d %q, want 401 %q", c.what, r.Status, r.Body, unparsable)
		}
	}

	// A malformed Authorization header is 401, even next to a good ?auth=.
	for _, h := range []string{"Basic czNjcmV0", "Bearer", "Bearer ", "Bearer a b", AdminSecret, "Token " + AdminSecret} {
		wantError(t, "Authorization: "+h, n.DoAs(t, noAuth, "GET", "/cred.json", "", "Authorization", h), 401, unparsable)
		wantError(t, "Authorization: "+h+" with ?auth=", n.DoAs(t, noAuth, "GET", "/cred.json?auth="+AdminSecret, "", "Authorization", h), 401, unparsable)
	}
	wantResponse(t, "nothing written", n.Do(t, "GET", "/cred.json", ""), 200, `{"v":1,"w":1}`)

	// Health endpoints need no credential.
	for _, p := range []string{"/livez", "/readyz"} {
		if r := n.DoAs(t, noAuth, "GET", p, ""); r.Status != 200 {
			t.Errorf("%s without credentials: %d %q", p, r.Status, r.Body)
		}
	}
}

// testStatusEndpoint: /status is 401 for non-admins and JSON for admins.
func testStatusEndpoint(t *testing.T, n *Node) {
	wantError(t, "/status without credential", n.DoAs(t, noAuth, "GET", "/status", ""), 401, "Permission denied")
	r := n.DoAs(t, "wrong", "GET", "/status", "")
	if r.Status != 401 {
		t.Errorf("/status with a wrong token: %d %q", r.Status, r.Body)
	}
	errorMessage(t, "/status with a wrong token", r.Body)

	for _, r := range []Response{n.Do(t, "GET", "/status", ""), n.DoAs(t, noAuth, "GET", "/status?auth="+secondSecret, "")} {
		if r.Status != 200 || r.Header.Get("Content-Type") != "application/json; charset=utf-8" {
			t.Fatalf("/status as admin: %d %s %q", r.Status, r.Header.Get("Content-Type"), r.Body)
		}
		var st struct {
			NodeID  string           `json:"node_id"`
			Role    string           `json:"role"`
			Leader  string           `json:"leader"`
			Term    uint64           `json:"term"`
			Commit  uint64           `json:"commit_index"`
			Applied uint64           `json:"applied_index"`
			Members []map[string]any `json:"members"`
			From    string           `json:"progress_from"`
		}
		if err := json.Unmarshal([]byte(r.Body), &st); err != nil {
			t.Fatalf("/status body %q: %v", r.Body, err)
		}
		if st.NodeID != n.Name || st.Role != "leader" || st.Leader != n.Name || st.Term == 0 || st.Commit == 0 || st.Applied == 0 {
			t.Errorf("/status: %+v", st)
		}
		if len(st.Members) != 1 || st.Members[0]["id"] != n.Name || st.Members[0]["address"] == "" || st.Members[0]["versions"] == nil {
			t.Fatalf("/status members: %v", st.Members)
		}
		// A lone leader's progress is its own: applied, no lag to speak
		// of, no contact with itself.
		p, _ := st.Members[0]["progress"].(map[string]any)
		if st.From != n.Name || p == nil || p["applied_index"] == nil || p["lag"] == nil || p["last_contact_ms"] != nil || p["stale"] != false {
			t.Errorf("/status progress from %q: %v", st.From, st.Members[0]["progress"])
		}
	}
}

// testPlainHTTP: HTTPS only; plain HTTP to the port gets Go's 400.
func testPlainHTTP(t *testing.T, n *Node) {
	resp, err := (&http.Client{Timeout: requestTimeout}).Get("http://" + n.Addr() + "/cred.json?auth=" + AdminSecret)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("plain HTTP got %d, want 400", resp.StatusCode)
	}
}
