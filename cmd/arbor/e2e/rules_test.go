package e2e

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"testing"
	"time"
)

// ruleSecret signs the ID tokens of TestRulesThroughEveryNode.
const ruleSecret = "e2e-hs256-secret-for-id-tokens"

// idToken mints an HS256 ID token for uid that expires after ttl.
func idToken(t testing.TB, uid string, ttl time.Duration) string {
	t.Helper()
	enc := base64.RawURLEncoding
	// exp - iat is ttl exactly: the nodes accept at most an hour
	// (--max-token-lifetime).
	now := time.Now()
	claims, err := json.Marshal(map[string]any{"sub": uid, "iat": now.Unix(), "exp": now.Add(ttl).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	signed := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." + enc.EncodeToString(claims)
	mac := hmac.New(sha256.New, []byte(ruleSecret))
	mac.Write([]byte(signed))
	return signed + "." + enc.EncodeToString(mac.Sum(nil))
}

// e2eRules lets each user own /users/<uid> and read /board.
const e2eRules = `{
  // Each user owns their node.
  "rules": {
    "users": {"$uid": {".read": "auth.uid == $uid", ".write": "auth.uid == $uid",
      "n": {".validate": "newData.isNumber() && newData.val() < 100"}}},
    "board": {".read": "auth != null", ".indexOn": ["by"], "$post": {".write": "!data.exists() && newData.child('by').val() == auth.uid"}}
  }
}`

// TestRulesThroughEveryNode checks SPEC §8 on a real three-node cluster:
// rules set through a follower are in force on every node; every request
// a user makes gets the same answer from the leader and the followers;
// denied writes never reach the log; a rules change cancels a follower's
// stream, and an expiring token ends it with auth_revoked.
func TestRulesThroughEveryNode(t *testing.T) {
	c := StartCluster(t, 3, "--jwt-hs256-secret", ruleSecret, "--strict-indexes")
	leader := c.WaitStable(t, c.Nodes...)
	followers := c.Others(leader)

	// The rules go in through a follower and are the same everywhere.
	mustStatus(t, "set rules", followers[0].Do(t, "PUT", "/.settings/rules.json", e2eRules), 200)
	for _, n := range c.Nodes {
		wantResponse(t, "rules on "+n.Name, n.Do(t, "GET", "/.settings/rules.json?consistency=linearizable", ""), 200, e2eRules)
	}
	alice, bob := idToken(t, "alice", time.Hour), idToken(t, "bob", time.Hour)
	override := "auth_variable_override=" + url.QueryEscape(`{"uid":"bob"}`)
	type step struct {
		auth, method, path, body string
		status                   int
	}
	steps := []step{
		{alice, "PUT", "/users/alice/n.json", "1", 200},
		{alice, "PATCH", "/users/alice.json", `{"n": 2, "m": "x"}`, 200},
		{alice, "PUT", "/users/alice/n.json", "1000", 401},
		{alice, "PUT", "/users/bob/n.json", "1", 401},
		{alice, "GET", "/users/alice.json", "", 200},
		{alice, "GET", "/users.json", "", 401},
		{alice, "GET", `/users/alice.json?orderBy="$key"&limitToFirst=1`, "", 200},
		{alice, "DELETE", "/users/alice/m.json", "", 200},
		{bob, "GET", "/users/alice.json", "", 401},
		{AdminSecret, "PUT", "/users/bob/n.json?" + override, "5", 200},
		{AdminSecret, "GET", "/users/alice.json?" + override, "", 401},
		{noAuth, "GET", "/board.json", "", 401},
		{bob, "GET", `/board.json?orderBy="by"&equalTo="bob"`, "", 200},
		{bob, "GET", `/board.json?orderBy="text"`, "", 400},
		{"not-a-token", "GET", "/board.json", "", 401},
	}
	for i, s := range steps {
		var answers []Response
		for _, n := range append([]*Node{leader}, followers...) {
			r := n.DoAs(t, s.auth, s.method, s.path+sep(s.path)+"consistency=linearizable", s.body)
			answers = append(answers, r)
			if s.method != "GET" && r.Status == 200 {
				break // a write is made once; the reads after it compare
			}
		}
		for j, r := range answers {
			if r.Status != s.status || r.Body != answers[0].Body {
				t.Errorf("step %d %s %s via node %d: %d %q; want %d and the leader's %q", i, s.method, s.path, j, r.Status, r.Body, s.status, answers[0].Body)
			}
		}
	}
	// A POST through a follower is judged on the key it gets at apply.
	r := followers[1].DoAs(t, bob, "POST", "/board.json", `{"by": "bob", "text": "hi"}`)
	mustStatus(t, "post on the board", r, 200)
	wantError(t, "forged author", followers[1].DoAs(t, bob, "POST", "/board.json", `{"by": "alice"}`), 401, "Permission denied")

	// A flood of denied writes leaves the log as it was.
	before, _ := leader.Status()
	for i := range 50 {
		n := c.Nodes[i%3]
		if r := n.DoAs(t, bob, "PUT", "/users/alice/n.json", "1"); r.Status != 401 {
			t.Fatalf("denied write %d via %s: %d %q", i, n.Name, r.Status, r.Body)
		}
	}
	after, _ := leader.Status()
	if after.CommitIndex > before.CommitIndex+2 { // leeway for a no-op of a leadership change
		t.Errorf("50 denied writes moved the commit index from %d to %d", before.CommitIndex, after.CommitIndex)
	}

	// A follower's stream: cancelled when new rules stop the read.
	frames := openEventStream(t, followers[0], "/users/alice.json?auth="+alice)
	if f := <-frames; f.Event != "put" {
		t.Fatalf("first frame %+v", f)
	}
	mustStatus(t, "close the rules", leader.Do(t, "PUT", "/.settings/rules.json", `{"rules": {}}`), 200)
	waitFrame(t, frames, "cancel", `"Permission denied"`)

	// auth_revoked when the token expires.
	mustStatus(t, "reopen", leader.Do(t, "PUT", "/.settings/rules.json", e2eRules), 200)
	short := idToken(t, "alice", 2*time.Second)
	poll(t, 10*time.Second, "the rules reach "+followers[1].Name, func() bool {
		return followers[1].DoAs(t, short, "GET", "/users/alice.json", "").Status == 200
	})
	frames = openEventStream(t, followers[1], "/users/alice.json?auth="+short)
	if f := <-frames; f.Event != "put" {
		t.Fatalf("first frame %+v", f)
	}
	waitFrame(t, frames, "auth_revoked", `"credential is no longer valid"`)
}

// sep is the separator before another query parameter of path.
func sep(path string) string {
	for _, ch := range path {
		if ch == '?' {
			return "&"
		}
	}
	return "?"
}

// waitFrame reads frames until one named event arrives (keep-alives are
// skipped) and checks its data and that the stream then ends.
func waitFrame(t testing.TB, frames <-chan streamFrame, event, data string) {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		select {
		case f, ok := <-frames:
			if !ok {
				t.Fatalf("stream ended without %s", event)
			}
			if f.Event == "keep-alive" {
				continue
			}
			if f.Event != event || f.Data != data {
				t.Fatalf("frame %+v, want %s %s", f, event, data)
			}
			select {
			case f, ok := <-frames:
				if ok {
					t.Fatalf("frame after %s: %+v", event, f)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("stream still open after %s", event)
			}
			return
		case <-deadline:
			t.Fatalf("no %s frame within 15 s", event)
		}
	}
}
