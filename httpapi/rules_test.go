package httpapi

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/arbordb/arbor/fsm/rules"
	"github.com/arbordb/arbor/httpapi/idtoken"
)

// jwtSecret signs the test servers' HS256 ID tokens.
const jwtSecret = "a-test-hs256-secret-of-some-length"

// hs256Token mints an ID token for claims.
func hs256Token(t *testing.T, claims map[string]any) string {
	t.Helper()
	enc := base64.RawURLEncoding
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	signed := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." + enc.EncodeToString(payload)
	mac := hmac.New(sha256.New, []byte(jwtSecret))
	mac.Write([]byte(signed))
	return signed + "." + enc.EncodeToString(mac.Sum(nil))
}

// userToken is a token for uid valid until exp, issued an hour before
// (a Firebase ID token's lifetime): its verifier's clock must be in that
// hour, or past exp for an expired token.
func userToken(t *testing.T, uid string, exp time.Time) string {
	return hs256Token(t, map[string]any{"sub": uid, "iat": exp.Add(-time.Hour).Unix(), "exp": exp.Unix(), "email": uid + "@example.com"})
}

// newRulesHarness is a harness whose server verifies HS256 ID tokens on
// the test clock.
func newRulesHarness(t *testing.T, now func() time.Time) *harness {
	t.Helper()
	if now == nil {
		now = func() time.Time { return testNow }
	}
	v, err := idtoken.New(idtoken.Config{HS256Secrets: [][]byte{[]byte(jwtSecret)}, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return newHarness(t, nil, func(c *Config) { c.Tokens = v; c.Now = now })
}

// closedRules is the default rules' source.
const closedRules = "{\n  \"rules\": {\n    \".read\": false,\n    \".write\": false\n  }\n}"

const ownDataRules = `{
  /* Each user owns /users/<uid>; names are short strings. */
  "rules": {
    "users": {
      "$uid": {
        ".read": "auth != null && auth.uid == $uid",
        ".write": "auth.uid === $uid", // a null auth fails this rule
        "name": {".validate": "newData.isString() && newData.val().length <= 8"}
      }
    },
    "shared": {".read": "auth.token.email.endsWith('@example.com')", ".write": false}
  }
}`

// TestRulesOverREST checks SPEC §8 end to end on one node: the rules
// endpoint, ID tokens, auth_variable_override, and reads and writes
// judged by the rules.
func TestRulesOverREST(t *testing.T) {
	h := newRulesHarness(t, nil)
	alice := userToken(t, "alice", testNow.Add(time.Hour))
	expired := userToken(t, "alice", testNow.Add(-time.Hour))
	denied := errBody("Permission denied")
	asAlice := url.QueryEscape(`{"uid":"alice","token":{"email":"alice@example.com"}}`)
	h.run([]step{
		{name: "default rules", req: req{method: "GET", path: "/.settings/rules.json"}, status: 200,
			body: closedRules},
		{name: "default denies users", req: req{method: "PUT", path: "/users/alice/name.json?auth=" + alice, body: str(`"Al"`), anon: true},
			status: 401, body: denied},
		{name: "syntax error", req: req{method: "PUT", path: "/.settings/rules.json", body: str(`{"rules": {".read": "auht != null"}}`)},
			status: 400, body: errBody(`Line 1, column 22: Unknown variable 'auht'.`)},
		{name: "rules need an admin", req: req{method: "PUT", path: "/.settings/rules.json?auth=" + alice, body: str(ownDataRules), anon: true},
			status: 401, body: denied},
		{name: "dry run", req: req{method: "PUT", path: "/.settings/rules.json?dryRun=true", body: str(ownDataRules)}, status: 200,
			body: `{"status":"ok"}`},
		{name: "still the default", req: req{method: "GET", path: "/.settings/rules.json"}, status: 200,
			body: closedRules},
		{name: "set", req: req{method: "PUT", path: "/.settings/rules.json", body: str(ownDataRules)}, status: 200, body: `{"status":"ok"}`},
		{name: "source kept", req: req{method: "GET", path: "/.settings/rules.json"}, status: 200, body: ownDataRules},
		{name: "own write", req: req{method: "PUT", path: "/users/alice/name.json?auth=" + alice, body: str(`"Al"`), anon: true},
			status: 200, body: `"Al"`, tree: `{"users":{"alice":{"name":"Al"}}}`},
		{name: "bearer token", req: req{method: "PATCH", path: "/users/alice.json", body: str(`{"age": 7}`), anon: true,
			headers: map[string]string{"Authorization": "Bearer " + alice}}, status: 200, body: `{"age":7}`},
		{name: "validate", req: req{method: "PUT", path: "/users/alice/name.json?auth=" + alice, body: str(`"Alexandria"`), anon: true},
			status: 401, body: denied},
		{name: "other's data", req: req{method: "PUT", path: "/users/bob/name.json?auth=" + alice, body: str(`"B"`), anon: true},
			status: 401, body: denied},
		{name: "multi-path with a denied part", req: req{method: "PATCH", path: "/users.json?auth=" + alice,
			body: str(`{"alice/age": 8, "bob/age": 1}`), anon: true}, status: 401, body: denied},
		{name: "own read", req: req{method: "GET", path: "/users/alice.json?auth=" + alice, anon: true}, status: 200,
			body: `{"age":7,"name":"Al"}`},
		{name: "no filter above", req: req{method: "GET", path: "/users.json?auth=" + alice, anon: true}, status: 401, body: denied},
		{name: "anonymous", req: req{method: "GET", path: "/users/alice.json", anon: true}, status: 401, body: denied},
		{name: "expired token", req: req{method: "GET", path: "/users/alice.json?auth=" + expired, anon: true}, status: 401,
			body: errBody("Auth token is expired.")},
		{name: "forged token", req: req{method: "GET", path: "/users/alice.json?auth=" + alice[:len(alice)-4] + "AAAA", anon: true},
			status: 401, body: errBody("Could not parse auth token.")},
		{name: "token claims", req: req{method: "GET", path: "/shared.json?auth=" + alice, anon: true}, status: 200, body: "null"},
		{name: "override acts as alice", req: req{method: "PUT", path: "/users/alice/age.json?auth_variable_override=" + asAlice,
			body: str(`9`)}, status: 200, body: "9"},
		{name: "override null is nobody", req: req{method: "GET", path: "/users/alice.json?auth_variable_override=null"},
			status: 401, body: denied},
		{name: "override needs an admin", req: req{method: "GET", path: "/users/alice.json?auth_variable_override=" + asAlice +
			"&auth=" + alice, anon: true}, status: 401, body: denied},
		{name: "override must be an object", req: req{method: "GET", path: "/users/alice.json?auth_variable_override=3"},
			status: 400, body: errBody("auth_variable_override must be a JSON object or null")},
		{name: "query over a readable location", req: req{method: "GET",
			path: `/users/alice.json?orderBy="$key"&limitToFirst=1&auth=` + alice, anon: true}, status: 200, body: `{"age":9}`},
		{name: "query over an unreadable one", req: req{method: "GET", path: `/users.json?orderBy="$key"&auth=` + alice, anon: true},
			status: 401, body: denied},
	})
	// A denied write never reached the log.
	before := h.fsm.proposed()
	for range 20 {
		h.do(req{method: "PUT", path: "/users/bob.json?auth=" + alice, body: str(`1`), anon: true})
	}
	if n := h.fsm.proposed(); n != before {
		t.Fatalf("%d denied writes were proposed", n-before)
	}
}

// TestStreamsFollowRules checks that a stream ends with cancel when the
// rules stop allowing its read, and with auth_revoked when its token
// expires (SPEC §5).
func TestStreamsFollowRules(t *testing.T) {
	// On the real clock, which the stream's auth_revoked timer runs on.
	h := newRulesHarness(t, time.Now)
	h.run([]step{{name: "rules", req: req{method: "PUT", path: "/.settings/rules.json", body: str(ownDataRules)}, status: 200, body: `{"status":"ok"}`}})
	tok := userToken(t, "alice", time.Now().Add(time.Hour))
	s := openStream(t, h, "/users/alice.json?auth="+tok)
	s.want(`put {"path":"/","data":null}`)
	h.do(req{method: "PUT", path: "/users/alice/name.json?auth=" + tok, body: str(`"Al"`), anon: true})
	s.want(`put {"path":"/name","data":"Al"}`)
	h.run([]step{{name: "closed", req: req{method: "PUT", path: "/.settings/rules.json", body: str(`{"rules": {}}`)}, status: 200, body: `{"status":"ok"}`}})
	s.want(`cancel "Permission denied"`, "closed")

	h.run([]step{{name: "open again", req: req{method: "PUT", path: "/.settings/rules.json", body: str(ownDataRules)}, status: 200, body: `{"status":"ok"}`}})
	short := userToken(t, "alice", time.Now().Add(1500*time.Millisecond))
	s = openStream(t, h, "/users/alice.json?auth="+short)
	s.want(`put {"path":"/","data":{"name":"Al"}}`)
	s.want(`auth_revoked "credential is no longer valid"`, "closed")
	if strings.Contains(h.logs.String(), "panic") {
		t.Fatal(h.logs.String())
	}
}

// TestStreamCancelledWhenDataStopsTheRead: a read rule that depends on
// data cancels a stream once a write makes it false.
func TestStreamCancelledWhenDataStopsTheRead(t *testing.T) {
	h := newRulesHarness(t, time.Now) // the stream's expiry timer runs on the real clock
	rules := `{"rules": {"room": {".read": "data.child('open').val() == true"}}}`
	h.run([]step{
		{name: "rules", req: req{method: "PUT", path: "/.settings/rules.json", body: str(rules)}, status: 200, body: `{"status":"ok"}`},
		{name: "open", req: req{method: "PUT", path: "/room.json", body: str(`{"open": true, "n": 1}`)}, status: 200,
			body: `{"n":1,"open":true}`},
	})
	tok := userToken(t, "alice", time.Now().Add(time.Hour))
	s := openStream(t, h, "/room.json?auth="+tok)
	s.want(`put {"path":"/","data":{"n":1,"open":true}}`)
	h.do(req{method: "PUT", path: "/room/n.json", body: str(`2`)})
	s.want(`put {"path":"/n","data":2}`)
	h.do(req{method: "PUT", path: "/room/open.json", body: str(`false`)})
	s.want(`cancel "Permission denied"`, "closed")
}

// TestRulesTooLarge: a rules upload over the rules' limit is a 413 that
// names that limit, not the data writes' WRITE_TOO_BIG, whether its
// length is announced or only found out while reading it.
func TestRulesTooLarge(t *testing.T) {
	h := newRulesHarness(t, nil)
	want := errBody(fmt.Sprintf("Rules are too large (limit %d bytes).", rules.MaxSourceBytes))
	big := `{"rules": {}}` + strings.Repeat(" ", 10<<20)
	h.run([]step{
		{name: "10 MB", req: req{method: "PUT", path: "/.settings/rules.json", body: str(big)}, status: 413, body: want},
		{name: "one byte over", req: req{method: "PUT", path: "/.settings/rules.json", body: str(big[:rules.MaxSourceBytes+1])},
			status: 413, body: want},
		{name: "at the limit", req: req{method: "PUT", path: "/.settings/rules.json", body: str(big[:rules.MaxSourceBytes])},
			status: 200, body: `{"status":"ok"}`},
	})
	// Without a Content-Length the limit is found while reading.
	hr, err := http.NewRequest(http.MethodPut, h.ts.URL+"/.settings/rules.json", io.MultiReader(strings.NewReader(big)))
	if err != nil {
		t.Fatal(err)
	}
	hr.Header.Set("Authorization", "Bearer "+adminSecret)
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if hr.ContentLength != 0 || resp.StatusCode != http.StatusRequestEntityTooLarge || string(body) != want {
		t.Fatalf("chunked upload (length %d): %d %q, want 413 %q", hr.ContentLength, resp.StatusCode, body, want)
	}
}
