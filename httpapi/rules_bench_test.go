package httpapi

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arbordb/arbor/httpapi/idtoken/idtokentest"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/arbordb/arbor/httpapi/idtoken"
)

// benchRulesFile is cmd/arbor/e2e's BenchmarkRules rule set (about twenty
// rules), so that the in-process figures profile the same judgements.
const benchRulesFile = "../docs/examples/chat-rules.json"

// benchUsers is the number of distinct users (and tokens), as many as
// BenchmarkRules has clients.
const benchUsers = 64

// rulesBench is one node's handler over an in-process FSM, with RS256
// ID tokens as Firebase Authentication issues them.
type rulesBench struct {
	s      *Server
	db     *fsmDB
	tokens []string
}

// newRulesBench builds the server, its verifier and one token per user,
// and writes every user's profile so reads find data.
func newRulesBench(b *testing.B) *rulesBench {
	b.Helper()
	key := benchKey()
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		b.Fatal(err)
	}
	keyFile := filepath.Join(b.TempDir(), "jwt.pem")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600); err != nil {
		b.Fatal(err)
	}
	v, err := idtoken.New(idtoken.Config{
		KeyFiles:  []string{keyFile},
		Audiences: []string{"bench"},
		Issuers:   []string{"https://securetoken.google.com/bench"},
	})
	if err != nil {
		b.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	cfg := testConfig(&syncBuffer{}, reg)
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.Now = time.Now
	cfg.Tokens = v
	cfg.DefaultConsistency = ConsistencyLocal
	db := newFSMDB()
	s, err := New(cfg, db)
	if err != nil {
		b.Fatal(err)
	}
	rb := &rulesBench{s: s, db: db}
	for i := range benchUsers {
		rb.tokens = append(rb.tokens, benchToken(b, key, fmt.Sprintf("user%02d", i)))
	}
	return rb
}

// benchKey is the benchmarks' RSA key, made once: key generation would
// otherwise fill the CPU profiles.
var benchKey = sync.OnceValue(func() *rsa.PrivateKey {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return key
})

// benchToken signs a Firebase-like RS256 ID token for uid of the project
// "bench" (idtokentest.FirebaseRS256).
func benchToken(b *testing.B, key *rsa.PrivateKey, uid string) string {
	tok, err := idtokentest.FirebaseRS256(key, "bench", uid, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	return tok
}

// rawRequest is the wire form of a request as BenchmarkRules sends it:
// the admin secret in the Authorization header always, the user's token
// in ?auth= when token is not empty.
func rawRequest(method string, user int, token string) []byte {
	target := fmt.Sprintf("/users/user%02d.json?print=silent", user)
	if token != "" {
		target += "&auth=" + token
	}
	var body string
	if method != http.MethodGet {
		body = fmt.Sprintf(`{"name":"user %d","n":%d}`, user, user)
	}
	return fmt.Appendf(nil, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n%s",
		method, target, adminSecret, len(body), body)
}

// serve parses raw as net/http's server does (request line, URL, headers)
// and runs it through the handler; the URL parsing is part of what a
// token in the query costs.
func (rb *rulesBench) serve(b *testing.B, raw []byte) {
	r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
	if err != nil {
		b.Fatal(err)
	}
	w := httptest.NewRecorder()
	rb.s.Handler().ServeHTTP(w, r)
	if w.Code != http.StatusOK && w.Code != http.StatusNoContent {
		b.Fatalf("%s %s: %d %s", r.Method, r.URL, w.Code, w.Body)
	}
}

// setRules installs src as the admin would.
func (rb *rulesBench) setRules(b *testing.B, src string) {
	raw := fmt.Appendf(nil, "PUT /.settings/rules.json HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n%s",
		adminSecret, len(src), src)
	rb.serve(b, raw)
}

// BenchmarkRulesHandler compares one node's handler cost per request for
// BenchmarkRules' load: open rules with the admin secret against the
// twenty rules with each user's RS256 ID token, for profile writes and
// reads. It isolates the server's CPU (no TLS, no Raft, no client) so a
// CPU profile shows what the token path adds:
//
//	go test -run '^$' -bench RulesHandler -cpuprofile /tmp/cpu.out ./httpapi/
func BenchmarkRulesHandler(b *testing.B) {
	benchRules, err := os.ReadFile(benchRulesFile)
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{"admin", "token"} {
		for _, method := range []string{http.MethodPut, http.MethodGet} {
			b.Run(mode+"-"+method, func(b *testing.B) {
				rb := newRulesBench(b)
				for u := range benchUsers {
					rb.serve(b, rawRequest(http.MethodPut, u, ""))
				}
				reqs := make([][]byte, benchUsers)
				for u := range reqs {
					tok := ""
					if mode == "token" {
						tok = rb.tokens[u]
					}
					reqs[u] = rawRequest(method, u, tok)
				}
				if mode == "token" {
					rb.setRules(b, string(benchRules))
					// Verified once, as a cached token is on a busy node.
					for _, raw := range reqs {
						rb.serve(b, raw)
					}
				} else {
					rb.setRules(b, `{"rules": {".read": true, ".write": true}}`)
				}
				var next atomic.Int64
				b.ReportAllocs()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						rb.serve(b, reqs[int(next.Add(1))%benchUsers])
					}
				})
			})
		}
	}
}
