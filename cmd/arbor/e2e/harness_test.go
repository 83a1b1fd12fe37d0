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
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/arbordb/arbor/cmd/internal/checks"
	"github.com/arbordb/arbor/cmd/internal/client"
	"github.com/arbordb/arbor/cmd/internal/testcluster"
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
	*testcluster.Proc
	cmd  *exec.Cmd // Proc.Cmd(): cmd.Process.Pid is the process's pid
	logs lockedBuffer
}

// lockedBuffer collects a process's output; the process writes while the
// test reads.
type lockedBuffer = testcluster.Buffer

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
	n.env = testcluster.Environ(opts.Env...)
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
	p := &process{}
	proc, err := testcluster.Start(testcluster.Command{Binary: arborBin, Args: n.args, Env: n.env, Output: &p.logs})
	if err != nil {
		t.Fatalf("start %s: %v", n.Name, err)
	}
	p.Proc, p.cmd = proc, proc.Cmd()
	n.mu.Lock()
	n.proc, n.addr, n.client = p, "", nil
	n.procs = append(n.procs, p)
	n.mu.Unlock()

	var addr string
	poll(t, addrTimeout, fmt.Sprintf("%s to write %s", n.Name, addrFile), func() bool {
		if p.exited() {
			t.Fatalf("%s exited during start-up (%v)", n.Name, p.Err())
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
	return n.TryDoWith(n.Client(), AdminSecret, method, path, body, headers...)
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
	if !p.WaitExit(context.Background(), timeout) {
		return 0, false
	}
	return p.ExitCode(), true
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

// cleanup fails the test if the node recovered from a panic, kills a
// process the test left running and, if the test failed, logs the output
// of every process the node ran.
func (n *Node) cleanup(t testing.TB) {
	n.mu.Lock()
	procs := n.procs
	n.mu.Unlock()
	n.checkNoPanics(t, procs)
	for _, p := range procs {
		if err := p.Kill(stopTimeout); err != nil {
			t.Errorf("%s: %v", n.Name, err)
		}
	}
	if t.Failed() {
		for i, p := range procs {
			t.Logf("--- %s, process %d of %d (%s), output:\n%s", n.Name, i+1, len(procs), p.State(), p.logs.String())
		}
	}
}

// panicsTimeout bounds the read of a live node's panic count at cleanup
// (a node the test paused does not answer).
const panicsTimeout = 5 * time.Second

// checkNoPanics fails the test if the node's current process counts a
// recovered panic (arbor_panics_recovered_total, read while it still
// runs) or any of its processes logged one ("panic serving"): each is a
// bug the node survived, whatever the test checked. A process that
// exited or does not answer lost its count; its log still tells.
func (n *Node) checkNoPanics(t testing.TB, procs []*process) {
	if p := n.current(); p != nil && !p.exited() && n.Client() != nil {
		client := *n.Client()
		client.Timeout = panicsTimeout
		r, err := n.TryDoWith(&client, AdminSecret, "GET", "/metrics", "")
		if err == nil && r.Status == http.StatusOK {
			if v, ok := checks.MetricValue(r.Body, checks.PanicMetric); ok && v > 0 {
				t.Errorf("%s recovered from %v panic(s) (%s); its log says where", n.Name, v, checks.PanicMetric)
			}
		}
	}
	for i, p := range procs {
		if logs := p.logs.String(); strings.Contains(logs, "panic serving") {
			t.Errorf("%s, process %d: it logged a panic it recovered from:\n%s", n.Name, i+1, linesWith(logs, "panic serving"))
		}
	}
}

// linesWith returns the lines of s that contain substr.
func linesWith(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// exited reports whether the process has exited.
func (p *process) exited() bool { return p.Exited() }

// procAttr makes the kernel kill a process the test starts if the test
// binary dies first (on Linux), so an interrupted test run leaves no
// arbor processes behind.
func procAttr() *syscall.SysProcAttr { return testcluster.SysProcAttr(false) }

// Run runs the binary once with args (a CLI command, or a serve expected
// to fail) and returns its exit code and combined output, failing the test
// if it runs longer than stopTimeout.
func Run(t testing.TB, args ...string) (code int, output string) {
	t.Helper()
	var out lockedBuffer
	p, err := testcluster.Start(testcluster.Command{Binary: arborBin, Args: args, Output: &out})
	if err != nil {
		t.Fatal(err)
	}
	if !p.WaitExit(context.Background(), stopTimeout) {
		p.Kill(stopTimeout)
		t.Fatalf("arbor %q still running after %s; output:\n%s", args, stopTimeout, out.String())
	}
	return p.ExitCode(), out.String()
}

// NewClient returns an HTTPS client that trusts only the certificates in
// the PEM file trustFile.
func NewClient(trustFile string) (*http.Client, error) {
	roots, err := client.LoadCA(trustFile)
	if err != nil {
		return nil, err
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
	err := testcluster.Poll(context.Background(), timeout, pollInterval, func(context.Context) error {
		if cond() {
			return nil
		}
		return errNotYet
	})
	if err != nil {
		msg := fmt.Sprintf("timed out after %s waiting for %s", timeout, what)
		for _, d := range detail {
			msg += "; " + d()
		}
		t.Fatal(msg)
	}
}

// errNotYet is the complaint of a poll condition that does not hold yet.
var errNotYet = errors.New("not yet")
