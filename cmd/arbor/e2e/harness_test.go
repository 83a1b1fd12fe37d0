// Package e2e tests the arbor binary from the outside: each test starts real
// `arbor serve` processes listening on 127.0.0.1 and talks to them over
// HTTPS, as a client or an operator would. TestMain builds the binary once,
// with the race detector.
//
// The helpers here are meant for every e2e test file:
//
//	n := StartReadyNode(t, Options{})          // a lone node, ready to serve
//	r := n.Do(t, "PUT", "/a.json", `{"b":1}`)  // as admin (AdminSecret)
//	n.Kill(t); n.Restart(t); n.WaitReady(t)    // crash and recover
//	code := n.Stop(t)                          // SIGTERM, wait, exit code
//	code, out := Run(t, "version")             // a one-shot command
//
// A failing test gets the stderr of every process it started in its log.
package e2e

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// AdminSecret is the --admin-secret of every harness node; Do sends it.
const AdminSecret = "s3cret"

// Deadlines of the harness. They are generous because the binary runs
// with the race detector, often next to other test packages.
const (
	addrTimeout    = 30 * time.Second // process start → <data-dir>/http.addr written
	readyTimeout   = 30 * time.Second // address known → /readyz answers 200
	stopTimeout    = 15 * time.Second // signal → process exited
	requestTimeout = 30 * time.Second // one HTTP request
	pollInterval   = 20 * time.Millisecond
)

// arborBin is the binary under test, built by TestMain.
var arborBin string

// TestMain builds the binary once for all tests (or uses E2E_ARBOR_BIN, a
// binary built elsewhere, e.g. a release candidate). With -short the e2e
// tests are skipped: they start processes and take seconds each.
func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("e2e: skipped in -short mode")
		os.Exit(0)
	}
	if bin := os.Getenv("E2E_ARBOR_BIN"); bin != "" {
		arborBin = bin
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "arbor-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	arborBin = filepath.Join(dir, "arbor")
	build := exec.Command("go", "build", "-race", "-o", arborBin, "github.com/arbordb/arbor/cmd/arbor")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: building arbor: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Options adjust a node started by StartNode. The zero value is a lone
// node with the harness defaults (see StartNode).
type Options struct {
	// Name names the node in logs and its data directory ("n" when empty).
	Name string
	// DataDir replaces the fresh t.TempDir()/Name data directory, e.g. to
	// start a second process on a directory prepared by the test.
	DataDir string
	// Args are appended to the default flags. A flag given twice takes the
	// later value, so Args can override a default (--admin-secret adds).
	Args []string
	// Env holds extra KEY=value variables. ARBOR_* variables of the test's
	// own environment are never passed on, so they cannot change a test.
	Env []string
	// TrustFile is the PEM certificate the node's client trusts; default
	// <data-dir>/tls/cert.pem, the generated self-signed certificate.
	TrustFile string
}

// Node is one arbor node under test: a process, and the processes that
// replace it when it is restarted on the same data directory.
type Node struct {
	Name    string
	DataDir string

	args, env []string
	trustFile string

	mu     sync.Mutex
	proc   *process // the current (or last) process
	addr   string
	client *http.Client
	procs  []*process // every process started, for the failure log
}

// process is one run of the binary.
type process struct {
	cmd  *exec.Cmd
	logs lockedBuffer
	done chan struct{} // closed when the process has exited
	err  error         // cmd.Wait's result, set before done is closed
}

// StartNode starts `arbor serve` with --http-addr 127.0.0.1:0, --raft-addr
// 127.0.0.1:0, a fresh data directory, the production Raft timing and
// --admin-secret AdminSecret (plus opts), and waits until it has written
// its address. It does not wait for readiness: see WaitReady and
// StartReadyNode. The process is killed when the test ends.
func StartNode(t testing.TB, opts Options) *Node {
	t.Helper()
	n := &Node{Name: opts.Name, DataDir: opts.DataDir, trustFile: opts.TrustFile}
	if n.Name == "" {
		n.Name = "n"
	}
	if n.DataDir == "" {
		n.DataDir = filepath.Join(t.TempDir(), n.Name)
	}
	if n.trustFile == "" {
		n.trustFile = filepath.Join(n.DataDir, "tls", "cert.pem")
	}
	n.args = append([]string{"serve",
		"--node-id", n.Name,
		"--data-dir", n.DataDir,
		"--http-addr", "127.0.0.1:0",
		"--raft-addr", "127.0.0.1:0",
		"--admin-secret", AdminSecret,
	}, opts.Args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ARBOR_") {
			n.env = append(n.env, kv)
		}
	}
	n.env = append(n.env, opts.Env...)
	t.Cleanup(func() { n.cleanup(t) })
	n.start(t)
	return n
}

// StartReadyNode is StartNode followed by WaitReady.
func StartReadyNode(t testing.TB, opts Options) *Node {
	t.Helper()
	n := StartNode(t, opts)
	n.WaitReady(t)
	return n
}

// start runs a new process with the node's arguments and waits for its
// address file.
func (n *Node) start(t testing.TB) {
	t.Helper()
	addrFile := filepath.Join(n.DataDir, "http.addr")
	// The binary removes a stale file too, but only once it runs; removing
	// it here means we can never read the previous process's port.
	if err := os.Remove(addrFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	p := &process{cmd: exec.Command(arborBin, n.args...), done: make(chan struct{})}
	p.cmd.Env = n.env
	p.cmd.Stdout = &p.logs
	p.cmd.Stderr = &p.logs
	p.cmd.SysProcAttr = procAttr()
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", n.Name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	n.mu.Lock()
	n.proc, n.addr, n.client = p, "", nil
	n.procs = append(n.procs, p)
	n.mu.Unlock()

	var addr string
	poll(t, addrTimeout, fmt.Sprintf("%s to write %s", n.Name, addrFile), func() bool {
		if p.exited() {
			t.Fatalf("%s exited during start-up (%v)", n.Name, p.err)
		}
		b, err := os.ReadFile(addrFile)
		addr = strings.TrimSpace(string(b))
		return err == nil && addr != ""
	})
	client, err := NewClient(n.trustFile)
	if err != nil {
		t.Fatalf("%s: %v", n.Name, err)
	}
	n.mu.Lock()
	n.addr, n.client = addr, client
	n.mu.Unlock()
}

// Addr is the host:port the current process serves HTTPS on.
func (n *Node) Addr() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.addr
}

// URL is the https URL of path (which starts with "/") on the node.
func (n *Node) URL(path string) string { return "https://" + n.Addr() + path }

// Client is an HTTPS client that trusts the node's certificate and sends
// no credentials.
func (n *Node) Client() *http.Client {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.client
}

// Response is a fully read HTTP response.
type Response struct {
	Status int
	Header http.Header
	Body   string
}

// Do sends a request as admin (Authorization: Bearer AdminSecret, unless
// headers, given as name, value pairs, set Authorization) and fails the
// test if no response arrives. An empty body sends none.
func (n *Node) Do(t testing.TB, method, path, body string, headers ...string) Response {
	t.Helper()
	r, err := n.TryDo(method, path, body, headers...)
	if err != nil {
		t.Fatalf("%s %s on %s: %v", method, path, n.Name, err)
	}
	return r
}

// TryDo is Do returning the transport error instead of failing, for
// requests that may legitimately get no answer (a node being killed).
func (n *Node) TryDo(method, path, body string, headers ...string) (Response, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, n.URL(path), rd)
	if err != nil {
		return Response{}, err
	}
	req.Header.Set("Authorization", "Bearer "+AdminSecret)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := n.Client().Do(req)
	if err != nil {
		return Response{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return Response{}, err
	}
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: string(b)}, nil
}

// WaitReady polls /readyz until it answers 200.
func (n *Node) WaitReady(t testing.TB) {
	t.Helper()
	var last string
	poll(t, readyTimeout, n.Name+" to be ready", func() bool {
		if n.current().exited() {
			t.Fatalf("%s exited while waiting for readiness", n.Name)
		}
		r, err := n.TryDo("GET", "/readyz", "")
		if err != nil {
			last = err.Error()
			return false
		}
		last = fmt.Sprintf("%d %s", r.Status, r.Body)
		return r.Status == http.StatusOK
	}, func() string { return "last answer: " + last })
}

// Stop sends SIGTERM, waits for the process to exit and returns its exit
// code; it fails the test if the process outlives stopTimeout.
func (n *Node) Stop(t testing.TB) int {
	t.Helper()
	return n.signalAndWait(t, syscall.SIGTERM)
}

// Kill sends SIGKILL (a crash: no drain, no snapshot) and waits for the
// process to be gone.
func (n *Node) Kill(t testing.TB) {
	t.Helper()
	n.signalAndWait(t, syscall.SIGKILL)
}

// Signal sends sig to the current process without waiting.
func (n *Node) Signal(t testing.TB, sig os.Signal) {
	t.Helper()
	if err := n.current().cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %s: %v", n.Name, err)
	}
}

// Wait waits up to timeout for the current process to exit and returns
// its exit code; ok is false if it is still running.
func (n *Node) Wait(timeout time.Duration) (code int, ok bool) {
	p := n.current()
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode(), true
	case <-time.After(timeout):
		return 0, false
	}
}

func (n *Node) signalAndWait(t testing.TB, sig os.Signal) int {
	t.Helper()
	n.Signal(t, sig)
	code, ok := n.Wait(stopTimeout)
	if !ok {
		t.Fatalf("%s still running %s after %s", n.Name, stopTimeout, sig)
	}
	return code
}

// Restart starts a new process with the same flags on the same data
// directory, after the previous one has exited (Stop or Kill), and waits
// for its address. Call WaitReady to wait until it serves.
func (n *Node) Restart(t testing.TB) {
	t.Helper()
	if !n.current().exited() {
		t.Fatalf("restart %s: the previous process is still running", n.Name)
	}
	n.start(t)
}

// Logs is the output of the current process so far.
func (n *Node) Logs() string { return n.current().logs.String() }

func (n *Node) current() *process {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.proc
}

// cleanup kills a process the test left running and, if the test failed,
// logs the output of every process the node ran.
func (n *Node) cleanup(t testing.TB) {
	n.mu.Lock()
	procs := n.procs
	n.mu.Unlock()
	for _, p := range procs {
		if !p.exited() {
			p.cmd.Process.Kill()
			<-p.done
		}
	}
	if t.Failed() {
		for i, p := range procs {
			t.Logf("--- %s, process %d of %d (%s), output:\n%s", n.Name, i+1, len(procs), p.cmd.ProcessState, p.logs.String())
		}
	}
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Run runs the binary once with args (a CLI command, or a serve expected
// to fail) and returns its exit code and combined output, failing the test
// if it runs longer than stopTimeout.
func Run(t testing.TB, args ...string) (code int, output string) {
	t.Helper()
	var out lockedBuffer
	cmd := exec.Command(arborBin, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(stopTimeout):
		cmd.Process.Kill()
		<-done
		t.Fatalf("arbor %q still running after %s; output:\n%s", args, stopTimeout, out.String())
	}
	return cmd.ProcessState.ExitCode(), out.String()
}

// NewClient returns an HTTPS client that trusts only the certificates in
// the PEM file trustFile.
func NewClient(trustFile string) (*http.Client, error) {
	pem, err := os.ReadFile(trustFile)
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("no certificate in %s", trustFile)
	}
	return &http.Client{
		Timeout:   requestTimeout,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}},
	}, nil
}

// poll calls cond every pollInterval until it returns true, failing the
// test after timeout; detail, if given, adds to the failure message.
func poll(t testing.TB, timeout time.Duration, what string, cond func() bool, detail ...func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			msg := fmt.Sprintf("timed out after %s waiting for %s", timeout, what)
			for _, d := range detail {
				msg += "; " + d()
			}
			t.Fatal(msg)
		}
		time.Sleep(pollInterval)
	}
}

// lockedBuffer collects a process's output; the process writes while the
// test reads.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
