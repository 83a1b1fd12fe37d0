package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// noAuth, given as the credential of DoAs, sends no Authorization header.
const noAuth = ""

// DoAs sends a request with the credential auth ("Authorization: Bearer
// auth", or none for noAuth) instead of the admin secret Do sends, and
// fails the test if no response arrives. headers are name, value pairs.
func (n *Node) DoAs(t testing.TB, auth, method, path, body string, headers ...string) Response {
	t.Helper()
	r, err := n.TryDoWith(n.Client(), auth, method, path, body, headers...)
	if err != nil {
		t.Fatalf("%s %s on %s: %v", method, path, n.Name, err)
	}
	return r
}

// TryDoWith sends a request through client c with the credential auth (as
// DoAs) and returns the fully read response or the transport error.
func (n *Node) TryDoWith(c *http.Client, auth, method, path, body string, headers ...string) (Response, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, n.URL(path), rd)
	if err != nil {
		return Response{}, err
	}
	if auth != noAuth {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		return Response{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return Response{}, fmt.Errorf("reading the body: %w", err)
	}
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: string(b)}, nil
}

// PooledClient is an HTTPS client trusting the node's certificate that
// keeps up to conns idle keep-alive connections, for tests and benchmarks
// that send requests from many goroutines at once (the default transport
// keeps only two, so the others would pay a TLS handshake each time).
func (n *Node) PooledClient(t testing.TB, conns int) *http.Client {
	t.Helper()
	c, err := NewClient(n.trustFile)
	if err != nil {
		t.Fatal(err)
	}
	tr := c.Transport.(*http.Transport)
	tr.MaxIdleConns = conns
	tr.MaxIdleConnsPerHost = conns
	return c
}

// errorBody is SPEC §6's error body for msg: {\n  "error" : "<msg>"\n}\n.
func errorBody(msg string) string {
	return "{\n  \"error\" : " + jsonString(msg) + "\n}\n"
}

// wantResponse fails the test unless r has exactly status and body.
func wantResponse(t testing.TB, what string, r Response, status int, body string) {
	t.Helper()
	if r.Status != status || r.Body != body {
		t.Errorf("%s: got %d %q, want %d %q", what, r.Status, r.Body, status, body)
	}
}

// wantError fails the test unless r is the SPEC §6 error response with
// status and message, served as JSON.
func wantError(t testing.TB, what string, r Response, status int, msg string) {
	t.Helper()
	wantResponse(t, what, r, status, errorBody(msg))
	if ct := r.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Errorf("%s: Content-Type %q", what, ct)
	}
}

// errorMessage returns the message of a SPEC §6 error body, failing the
// test if body is not exactly of that shape.
func errorMessage(t testing.TB, what, body string) string {
	t.Helper()
	var e struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error == "" || body != errorBody(e.Error) {
		t.Errorf("%s: body %q is not an error body (%v)", what, body, err)
	}
	return e.Error
}

// mustStatus fails the test now unless r has status; for the setup steps
// a later check depends on.
func mustStatus(t testing.TB, what string, r Response, status int) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("%s: got %d %q, want %d", what, r.Status, r.Body, status)
	}
}

// pushAlphabet is the alphabet of push keys, in its (ASCII) order.
const pushAlphabet = "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz"

// pushName returns the key of a POST's answer {"name":"<key>"}, checking
// its shape: 20 characters from pushAlphabet.
func pushName(r Response) (string, error) {
	if r.Status != http.StatusOK {
		return "", fmt.Errorf("POST: %d %s", r.Status, r.Body)
	}
	var v struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal([]byte(r.Body), &v); err != nil {
		return "", fmt.Errorf("POST answer %q: %w", r.Body, err)
	}
	if want := `{"name":"` + v.Name + `"}`; r.Body != want {
		return "", fmt.Errorf("POST answer %q, want exactly %q", r.Body, want)
	}
	if !validPushKey(v.Name) {
		return "", fmt.Errorf("push key %q: want 20 characters of %s", v.Name, pushAlphabet)
	}
	return v.Name, nil
}

// validPushKey reports whether k has the push-key shape.
func validPushKey(k string) bool {
	if len(k) != 20 {
		return false
	}
	for i := range len(k) {
		if !strings.Contains(pushAlphabet, k[i:i+1]) {
			return false
		}
	}
	return true
}

// pushKeyMillis decodes the 8-character big-endian base-64 timestamp at
// the start of a push key.
func pushKeyMillis(k string) int64 {
	var ms int64
	for i := range 8 {
		ms = ms*64 + int64(strings.IndexByte(pushAlphabet, k[i]))
	}
	return ms
}

// putRetrying is a client's idempotent PUT: a 503 (no leader for a moment,
// outcome unknown) is retried with a short back-off until deadline, as
// SPEC §6 tells clients to; any other answer is returned at once.
func (n *Node) putRetrying(c *http.Client, auth, path, body string, deadline time.Time) (Response, error) {
	backoff := 20 * time.Millisecond
	for {
		r, err := n.TryDoWith(c, auth, "PUT", path, body)
		if err != nil || r.Status != http.StatusServiceUnavailable || time.Now().Add(backoff).After(deadline) {
			return r, err
		}
		time.Sleep(backoff) // a client's back-off before the retry, not a wait for a state
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}
