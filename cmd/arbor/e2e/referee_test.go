package e2e

// Issue 16's referee: firebase-admin-go's own database integration tests
// (firebase.google.com/go/v4, integration/db), unmodified, against one
// real `arbor serve --dev` node.
//
// The SDK's tests normally run against a Firebase project; with
// FIREBASE_DATABASE_EMULATOR_HOST they run against an emulator instead,
// which they reach over plain HTTP and with "Authorization: Bearer owner"
// (the emulator convention --dev accepts as admin). Nothing of the SDK is
// changed:
//
//   - The test files of integration/db are copied byte for byte into a
//     scratch module whose path lies under firebase.google.com/go/v4/integration
//     (so they may import the SDK's integration/internal package). That
//     module requires exactly what Arbor's go.mod requires, so the SDK
//     itself — db, internal, integration/internal — is the released
//     version from the module cache, checked against Arbor's go.sum, and
//     the build works offline (GOPROXY=off). Building the SDK's own module
//     instead would need the go.mod of every version it names, which `go
//     mod download` for Arbor does not fetch.
//   - TestMain reads ../../testdata/integration_cert.json, a service
//     account: a throwaway one is written, with a freshly generated RSA
//     key, a fake project id and a token_uri on a loopback server of this
//     test, which checks the signed assertion and hands out the token
//     "owner". The SDK's TestMain uses it for the one request that does
//     not go through the database client: the PUT of
//     testdata/dinosaurs_index.json to /.settings/rules.json.
//   - A loopback reverse proxy turns the SDK's plain HTTP into HTTPS to
//     the node, trusting only the node's generated certificate, and keeps
//     a log of every exchange for the failure report.
//   - The SDK process's ways out of 127.0.0.1 — its HTTP(S) proxy and the
//     GCE metadata server (HTTP_PROXY, HTTPS_PROXY, GCE_METADATA_HOST) —
//     point at a trap that refuses and records every request: one fails
//     the test. (Run under `unshare -rn` with only loopback up, the
//     referee passes too.)
//
// Every test function of integration/db must pass; TestMain failing (e.g.
// the rules upload refused) fails the referee with the SDK's output.

import (
	"bufio"
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	// refereeSDK is the module whose integration tests referee Arbor; its
	// version is the one Arbor's go.mod requires.
	refereeSDK = "firebase.google.com/go/v4"
	// refereeModule is the scratch module that holds the copied tests. It
	// lies under the SDK's integration/ tree so that Go's internal-package
	// rule lets the tests import firebase.google.com/go/v4/integration/internal.
	refereeModule = refereeSDK + "/integration/arborreferee"
	// refereeProject is the fake project id of the throwaway service
	// account, and the emulator namespace (?ns=) the SDK sends.
	refereeProject = "arbor-referee"
	// refereeToken is what the fake token endpoint hands out: the
	// emulator's admin token, which a --dev node accepts.
	refereeToken = "owner"

	// refereeBuildTimeout bounds `go test -c` of the SDK's tests. The
	// packages usually come from the build cache filled when this package
	// was built; a cold cache on two cores compiles gRPC and Firestore.
	refereeBuildTimeout = 10 * time.Minute
	// refereeRunTimeout bounds the SDK's test binary; it takes seconds.
	refereeRunTimeout = 3 * time.Minute
	// refereeMaxExchanges caps the proxy's log of exchanges.
	refereeMaxExchanges = 4000
	// refereeBodyShown caps each body in that log.
	refereeBodyShown = 300
)

// refereeNamed are the tests issue 16 names: they upload rules and use
// databaseAuthVariableOverride. They must not only pass but run.
var refereeNamed = []string{"TestNoAccess", "TestReadAccess", "TestQueryAccess", "TestGuestAccess"}

// refereeSkip lists integration/db tests that cannot work against any
// emulator, with the reason; they are passed to -test.skip. None: the
// Firebase emulator runs the whole suite, so Arbor must too.
var refereeSkip = map[string]string{}

// TestRefereeFirebaseAdminGo runs firebase-admin-go's integration/db tests,
// unmodified, against one --dev node through a loopback HTTP→HTTPS proxy
// (issue 16). Without a go command it skips, except on CI (CI=true).
func TestRefereeFirebaseAdminGo(t *testing.T) {
	goBin := refereeGoCommand(t)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	trap := startRefereeTrap(t)
	tokens := startRefereeTokenServer(t, &key.PublicKey)

	work := t.TempDir()
	pkgDir, testNames := refereeWorkspace(t, goBin, work, key, tokens.url)
	testBin := refereeBuild(t, goBin, pkgDir, filepath.Join(work, "db.test"))

	n := StartReadyNode(t, Options{Args: []string{"--dev"}})
	proxy := startRefereeProxy(t, n)

	start := time.Now()
	out, runErr := refereeRun(t, testBin, pkgDir, refereeEnv(proxy.addr, trap.url))
	t.Logf("the SDK's integration/db tests ran in %s", time.Since(start).Round(10*time.Millisecond))
	results := parseRefereeOutput(out)

	failed := false
	fail := func(format string, args ...any) {
		t.Helper()
		failed = true
		t.Errorf(format, args...)
	}
	var summary []string
	for _, name := range testNames {
		if why, ok := refereeSkip[name]; ok {
			summary = append(summary, fmt.Sprintf("%-40s skipped: %s", name, why))
			continue
		}
		r, ok := results[name]
		switch {
		case !ok:
			summary = append(summary, fmt.Sprintf("%-40s did not run", name))
		case r.status == "PASS":
			summary = append(summary, fmt.Sprintf("%-40s PASS", name))
		default:
			summary = append(summary, fmt.Sprintf("%-40s %s", name, r.status))
			fail("%s: %s against Arbor:\n%s", name, r.status, strings.Join(r.output, "\n"))
		}
	}
	t.Logf("integration/db against one --dev node:\n%s", strings.Join(summary, "\n"))

	ran := 0
	for _, name := range testNames {
		if _, ok := results[name]; ok {
			ran++
		}
	}
	switch {
	case ran == 0:
		// TestMain died (log.Fatal) before running any test: typically
		// the rules upload or the data Set were refused.
		fail("no test of integration/db ran (%v); the SDK's output:\n%s", runErr, out)
	case ran < len(testNames)-len(refereeSkip):
		fail("only %d of %d tests of integration/db ran (%v); the SDK's output:\n%s", ran, len(testNames)-len(refereeSkip), runErr, out)
	case runErr != nil && !failed:
		fail("the SDK's test binary failed although every test passed (%v):\n%s", runErr, out)
	}
	for _, name := range refereeNamed {
		if !slices.Contains(testNames, name) {
			fail("integration/db has no %s any more: update refereeNamed", name)
		}
	}

	// The referee's own integrity: nothing left loopback, the rules upload
	// authenticated through the token endpoint, and the override clients
	// were really exercised.
	if hits := trap.hits(); len(hits) > 0 {
		fail("the SDK's process tried to reach beyond 127.0.0.1 (blocked):\n%s", strings.Join(hits, "\n"))
	}
	exchanges := proxy.log()
	if len(exchanges) > 0 && tokens.issued() == 0 {
		fail("the fake token endpoint issued no token: the rules upload did not authenticate as the SDK does")
	}
	if len(exchanges) > 0 && !slices.ContainsFunc(exchanges, func(e refereeExchange) bool {
		return e.method == http.MethodPut && strings.HasPrefix(e.target, "/.settings/rules.json")
	}) {
		fail("the proxy saw no PUT /.settings/rules.json")
	}
	if ran > 0 && !slices.ContainsFunc(exchanges, func(e refereeExchange) bool {
		return strings.Contains(e.target, "auth_variable_override=")
	}) {
		fail("the proxy saw no request with auth_variable_override")
	}
	if failed {
		var b strings.Builder
		for _, e := range exchanges {
			b.WriteString(e.String())
			b.WriteByte('\n')
		}
		t.Logf("every exchange through the proxy (%d):\n%s", len(exchanges), b.String())
	}
}

// refereeGoCommand returns the path of the go command, which builds the
// SDK's tests; without one the referee skips, except on CI.
func refereeGoCommand(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err == nil {
		return goBin
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("the go command is not on PATH on CI; the referee needs it to build firebase-admin-go's tests: %v", err)
	}
	t.Skipf("the go command is not on PATH, so firebase-admin-go's tests cannot be built: %v", err)
	return ""
}

// refereeGo runs the go command in dir with env (nil: the test's own) and
// returns its standard output, failing the test on an error.
func refereeGo(t *testing.T, goBin, dir string, env []string, timeout time.Duration, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.SysProcAttr = procAttr()
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("go %s (in %s) did not finish within %s:\n%s", strings.Join(args, " "), dir, timeout, stderr.String())
	}
	if err != nil {
		t.Fatalf("go %s (in %s): %v\n%s%s", strings.Join(args, " "), dir, err, stdout.String(), stderr.String())
	}
	return strings.TrimSpace(stdout.String())
}

// refereeWorkspace lays out the scratch module in work:
//
//	work/testdata/                the SDK's testdata, plus integration_cert.json
//	work/mod/go.mod, go.sum       Arbor's, renamed to refereeModule
//	work/mod/db/                  integration/db, byte for byte
//
// The SDK's tests find their testdata at ../../testdata from their package
// directory, which is the test binary's working directory. It returns that
// directory and the names of the test functions found in it.
func refereeWorkspace(t *testing.T, goBin, work string, key *rsa.PrivateKey, tokenURL string) (pkgDir string, tests []string) {
	t.Helper()
	sdkDir := refereeGo(t, goBin, ".", nil, time.Minute, "list", "-m", "-f", "{{.Dir}}", refereeSDK)
	if sdkDir == "" {
		t.Fatalf("%s is not in the module cache: run go mod download", refereeSDK)
	}
	goMod := refereeGo(t, goBin, ".", nil, time.Minute, "env", "GOMOD")
	if goMod == "" || goMod == os.DevNull {
		t.Fatalf("go env GOMOD = %q: the e2e tests must run inside Arbor's module", goMod)
	}

	testdata := filepath.Join(work, "testdata")
	modDir := filepath.Join(work, "mod")
	pkgDir = filepath.Join(modDir, "db")
	refereeCopyDir(t, filepath.Join(sdkDir, "testdata"), testdata)
	refereeCopyDir(t, filepath.Join(sdkDir, "integration", "db"), pkgDir)
	for _, name := range []string{"go.mod", "go.sum"} {
		refereeCopyFile(t, filepath.Join(filepath.Dir(goMod), name), filepath.Join(modDir, name))
	}
	refereeGo(t, goBin, modDir, refereeGoEnv(), time.Minute, "mod", "edit", "-module", refereeModule)
	if err := os.WriteFile(filepath.Join(testdata, "integration_cert.json"), refereeServiceAccount(t, key, tokenURL), 0o600); err != nil {
		t.Fatal(err)
	}
	return pkgDir, refereeTestNames(t, pkgDir)
}

// refereeCopyDir copies the regular files of src (not its subdirectories)
// into dst, writable, since the module cache is read-only.
func refereeCopyDir(t *testing.T, src, dst string) {
	t.Helper()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Type().IsRegular() {
			refereeCopyFile(t, filepath.Join(src, e.Name()), filepath.Join(dst, e.Name()))
		}
	}
}

// refereeCopyFile copies the file src to dst, writable.
func refereeCopyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// refereeTestNames lists the top-level Test functions of the _test.go
// files in dir (TestMain excluded), sorted.
func refereeTestNames(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files in %s (%v)", dir, err)
	}
	var names []string
	fset := token.NewFileSet()
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") && fn.Name.Name != "TestMain" &&
				fn.Type.Params != nil && len(fn.Type.Params.List) == 1 {
				names = append(names, fn.Name.Name)
			}
		}
	}
	sort.Strings(names)
	return names
}

// refereeServiceAccount is a throwaway service-account key file: the key
// was just generated, the project is fake, and token_uri points at the
// loopback token endpoint, so the SDK's credentials never reach Google.
func refereeServiceAccount(t *testing.T, key *rsa.PrivateKey, tokenURL string) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(map[string]string{
		"type":                        "service_account",
		"project_id":                  refereeProject,
		"private_key_id":              "arbor-referee-key",
		"private_key":                 string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email":                "referee@" + refereeProject + ".iam.gserviceaccount.com",
		"client_id":                   "1",
		"auth_uri":                    tokenURL,
		"token_uri":                   tokenURL,
		"auth_provider_x509_cert_url": tokenURL,
		"client_x509_cert_url":        tokenURL,
		"universe_domain":             "googleapis.com",
	}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// refereeGoEnv is the go command's environment for the scratch module:
// offline (GOPROXY=off: every module comes from the cache Arbor's build
// filled), outside any workspace, and free to complete go.mod (-mod=mod).
func refereeGoEnv() []string {
	env := refereeCleanEnv()
	return append(env, "GOPROXY=off", "GOFLAGS=-mod=mod", "GOWORK=off")
}

// refereeBuild compiles the SDK's tests into out, with the race detector
// when this binary has it (so both share the build cache).
func refereeBuild(t *testing.T, goBin, pkgDir, out string) string {
	t.Helper()
	args := []string{"test", "-c", "-o", out}
	if refereeRace() {
		args = append(args, "-race")
	}
	start := time.Now()
	refereeGo(t, goBin, pkgDir, refereeGoEnv(), refereeBuildTimeout, append(args, ".")...)
	t.Logf("built the SDK's integration/db tests (%s) in %s", strings.Join(args[1:], " "), time.Since(start).Round(10*time.Millisecond))
	return out
}

// refereeRace tells whether this test binary was built with -race.
func refereeRace() bool {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range info.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// refereeCleanEnv is the test's environment without what could send the
// SDK elsewhere or give it other credentials: proxies, Google and Firebase
// variables, gcloud's configuration.
func refereeCleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		upper := strings.ToUpper(name)
		if strings.HasSuffix(upper, "_PROXY") || strings.HasPrefix(upper, "GOOGLE_") || strings.HasPrefix(upper, "GCLOUD_") ||
			strings.HasPrefix(upper, "GCE_") || strings.HasPrefix(upper, "CLOUDSDK_") || strings.HasPrefix(upper, "FIREBASE_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// refereeEnv is the environment of the SDK's test binary: the emulator
// host (the proxy), the namespace, and every way out of 127.0.0.1 pointed
// at the trap. The host must be "localhost:<port>": the SDK parses it with
// url.ParseRequestURI, which refuses "127.0.0.1:<port>". Go never sends
// requests for localhost or loopback addresses through a proxy.
func refereeEnv(proxyAddr, trapURL string) []string {
	_, port, _ := net.SplitHostPort(proxyAddr)
	trapHost := strings.TrimPrefix(trapURL, "http://")
	return append(refereeCleanEnv(),
		"FIREBASE_DATABASE_EMULATOR_HOST=localhost:"+port,
		"FIREBASE_DATABASE_EMULATOR_NAMESPACE="+refereeProject,
		"HTTP_PROXY="+trapURL, "HTTPS_PROXY="+trapURL, "http_proxy="+trapURL, "https_proxy="+trapURL,
		"NO_PROXY=", "no_proxy=",
		"GCE_METADATA_HOST="+trapHost,
		"CLOUDSDK_CONFIG="+os.DevNull,
	)
}

// refereeRun runs the SDK's test binary verbosely in pkgDir and returns
// its combined output and exit error.
func refereeRun(t *testing.T, testBin, pkgDir string, env []string) (string, error) {
	t.Helper()
	args := []string{"-test.v", "-test.count=1", "-test.timeout=" + (refereeRunTimeout - 30*time.Second).String()}
	if len(refereeSkip) > 0 {
		var names []string
		for name := range refereeSkip {
			names = append(names, name)
		}
		sort.Strings(names)
		args = append(args, "-test.skip=^("+strings.Join(names, "|")+")$")
	}
	ctx, cancel := context.WithTimeout(context.Background(), refereeRunTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, testBin, args...)
	cmd.Dir = pkgDir
	cmd.Env = env
	cmd.SysProcAttr = procAttr()
	cmd.WaitDelay = 5 * time.Second
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("the SDK's tests did not finish within %s:\n%s", refereeRunTimeout, out.String())
	}
	return out.String(), err
}

// refereeResult is one test's outcome in the SDK's verbose output.
type refereeResult struct {
	status string   // PASS, FAIL or SKIP
	output []string // its lines, from === RUN to --- PASS/FAIL/SKIP
}

// parseRefereeOutput reads `go test -v` output: each top-level test's
// status and lines. Tests run one after another (the SDK's tests are not
// parallel), so a line belongs to the test last started.
func parseRefereeOutput(out string) map[string]*refereeResult {
	results := map[string]*refereeResult{}
	var cur *refereeResult
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if name, ok := strings.CutPrefix(line, "=== RUN   "); ok && !strings.Contains(name, "/") {
			cur = &refereeResult{}
			results[strings.TrimSpace(name)] = cur
		}
		if cur != nil {
			cur.output = append(cur.output, line)
		}
		for _, status := range []string{"PASS", "FAIL", "SKIP"} {
			if rest, ok := strings.CutPrefix(line, "--- "+status+": "); ok {
				name, _, _ := strings.Cut(rest, " ")
				if r := results[name]; r != nil {
					r.status = status
				}
				cur = nil
			}
		}
	}
	for _, r := range results {
		if r.status == "" {
			r.status = "FAIL (did not finish)"
		}
	}
	return results
}

// refereeExchange is one request through the proxy and its answer.
type refereeExchange struct {
	method, target, auth, reqBody string
	status                        int
	respBody                      string
}

// String is the exchange on one line, its query unescaped.
func (e refereeExchange) String() string {
	target, err := url.QueryUnescape(e.target)
	if err != nil {
		target = e.target
	}
	s := fmt.Sprintf("%s %s", e.method, target)
	if e.auth != "" {
		s += " [" + e.auth + "]"
	}
	if e.reqBody != "" {
		s += " " + e.reqBody
	}
	return s + fmt.Sprintf(" → %d %s", e.status, strings.TrimSpace(e.respBody))
}

// refereeProxy is the loopback HTTP→HTTPS reverse proxy in front of the
// node, with its log.
type refereeProxy struct {
	addr      string
	mu        sync.Mutex
	exchanges []refereeExchange
}

// log returns the exchanges so far, in order.
func (p *refereeProxy) log() []refereeExchange {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.exchanges)
}

// startRefereeProxy serves plain HTTP on 127.0.0.1 and forwards each
// request over HTTPS to n, trusting only n's certificate.
func startRefereeProxy(t *testing.T, n *Node) *refereeProxy {
	t.Helper()
	target := &url.URL{Scheme: "https", Host: n.Addr()}
	tr := n.Client().Transport.(*http.Transport).Clone()
	tr.ResponseHeaderTimeout = requestTimeout
	rp := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport:     tr,
		FlushInterval: -1,
	}
	p := &refereeProxy{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e := refereeExchange{method: r.Method, target: r.URL.RequestURI(), auth: refereeAuth(r.Header.Get("Authorization"))}
		if r.Body != nil {
			b, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			e.reqBody = refereeShorten(string(b))
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		rec := &refereeRecorder{ResponseWriter: w, status: http.StatusOK}
		rp.ServeHTTP(rec, r)
		e.status, e.respBody = rec.status, refereeShorten(rec.body.String())
		p.mu.Lock()
		if len(p.exchanges) < refereeMaxExchanges {
			p.exchanges = append(p.exchanges, e)
		}
		p.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	p.addr = srv.Listener.Addr().String()
	return p
}

// refereeAuth shows an Authorization header in the log: the scheme and the
// emulator token, other tokens elided.
func refereeAuth(h string) string {
	scheme, tok, ok := strings.Cut(h, " ")
	switch {
	case h == "":
		return ""
	case !ok:
		return "malformed"
	case tok == refereeToken:
		return h
	default:
		return scheme + " …"
	}
}

// refereeShorten cuts s to refereeBodyShown bytes for the log.
func refereeShorten(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > refereeBodyShown {
		return s[:refereeBodyShown] + "…"
	}
	return s
}

// refereeRecorder passes a response through, keeping its status and the
// first bytes of its body.
type refereeRecorder struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (r *refereeRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *refereeRecorder) Write(b []byte) (int, error) {
	if room := refereeBodyShown + 1 - r.body.Len(); room > 0 {
		r.body.Write(b[:min(len(b), room)])
	}
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController flush the underlying writer.
func (r *refereeRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// refereeTokenServer is the fake OAuth 2.0 token endpoint of the throwaway
// service account.
type refereeTokenServer struct {
	url string
	mu  sync.Mutex
	n   int
}

// issued counts the tokens handed out.
func (s *refereeTokenServer) issued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// startRefereeTokenServer answers the JWT-bearer grant (RFC 7523) the
// SDK's service-account credentials send: if the assertion is signed by
// pub for this endpoint, it hands out refereeToken.
func startRefereeTokenServer(t *testing.T, pub *rsa.PublicKey) *refereeTokenServer {
	t.Helper()
	s := &refereeTokenServer{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		deny := func(err error) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(w).Encode(map[string]string{"error": "invalid_grant", "error_description": err.Error()})
		}
		if r.Method != http.MethodPost || r.ParseForm() != nil {
			deny(errors.New("want a POSTed form"))
			return
		}
		if g := r.PostForm.Get("grant_type"); g != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
			deny(fmt.Errorf("grant_type %q", g))
			return
		}
		if err := refereeCheckAssertion(r.PostForm.Get("assertion"), pub, s.url); err != nil {
			deny(err)
			return
		}
		s.mu.Lock()
		s.n++
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": refereeToken, "token_type": "Bearer", "expires_in": 3600})
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL + "/token"
	return s
}

// refereeCheckAssertion verifies an RS256 JWT signed by pub whose audience
// is aud.
func refereeCheckAssertion(jwt string, pub *rsa.PublicKey, aud string) error {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return errors.New("the assertion is not a JWT")
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(pub, crypto.SHA256, sum[:], sig); err != nil {
		return fmt.Errorf("signature: %w", err)
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return err
	}
	var claims struct {
		Aud string `json:"aud"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return err
	}
	if claims.Aud != aud {
		return fmt.Errorf("aud %q, want %q", claims.Aud, aud)
	}
	return nil
}

// refereeTrap stands where the SDK's process would go to leave 127.0.0.1
// (its HTTP(S) proxy and metadata server) and refuses every request.
type refereeTrap struct {
	url  string
	mu   sync.Mutex
	seen []string
}

// hits lists the requests the trap refused.
func (tr *refereeTrap) hits() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return slices.Clone(tr.seen)
}

// startRefereeTrap starts the trap on 127.0.0.1 until the test ends.
func startRefereeTrap(t *testing.T) *refereeTrap {
	t.Helper()
	tr := &refereeTrap{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tr.mu.Lock()
		tr.seen = append(tr.seen, fmt.Sprintf("%s %s (Host %s)", r.Method, r.RequestURI, r.Host))
		tr.mu.Unlock()
		http.Error(w, "arbor referee: no traffic beyond 127.0.0.1", http.StatusForbidden)
	}))
	t.Cleanup(srv.Close)
	tr.url = srv.URL
	return tr
}
