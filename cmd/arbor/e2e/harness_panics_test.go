package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/arbordb/arbor/cmd/internal/testcluster"
)

// errorsTB records what a check reports instead of failing the test.
type errorsTB struct {
	testing.TB
	errs []string
}

func (r *errorsTB) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *errorsTB) Helper() {}

// TestCleanupFailsOnRecoveredPanics: a node whose /metrics counts a
// recovered panic, or whose log (of any of its processes) shows one,
// fails the test at cleanup; a clean node does not. The node is a
// stand-in: a live process (sleep) and a TLS server answering /metrics.
func TestCleanupFailsOnRecoveredPanics(t *testing.T) {
	panics := "0"
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" || r.Header.Get("Authorization") != "Bearer "+AdminSecret {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, "# TYPE arbor_panics_recovered_total counter\narbor_panics_recovered_total %s\narbor_stream_open 0\n", panics)
	}))
	defer srv.Close()
	node := func(logs ...string) *Node {
		n := &Node{Name: "stand-in", addr: strings.TrimPrefix(srv.URL, "https://"), client: srv.Client()}
		for i, l := range logs {
			p := &process{}
			p.logs.Write([]byte(l))
			if i == len(logs)-1 { // the current process runs
				proc, err := testcluster.Start(testcluster.Command{Binary: "sleep", Args: []string{"60"}, Output: &p.logs})
				if err != nil {
					t.Skipf("no sleep to stand in for a node: %v", err)
				}
				t.Cleanup(func() { _ = proc.Kill(stopTimeout) })
				p.Proc, p.cmd = proc, proc.Cmd()
			}
			n.procs = append(n.procs, p)
			n.proc = p
		}
		return n
	}
	check := func(n *Node) []string {
		rec := &errorsTB{TB: t}
		n.checkNoPanics(rec, n.procs)
		return rec.errs
	}

	if errs := check(node("level=INFO msg=ready\n")); len(errs) > 0 {
		t.Errorf("a clean node failed the test: %q", errs)
	}
	panics = "1"
	if errs := check(node("level=INFO msg=ready\n")); len(errs) != 1 || !strings.Contains(errs[0], "recovered from 1 panic(s)") {
		t.Errorf("a node counting a recovered panic: %q", errs)
	}
	panics = "0"
	// The count went with a process that was restarted; its log stays.
	errs := check(node(`level=ERROR msg="panic serving request" method=GET path=/a.json panic=boom`+"\n", "level=INFO msg=ready\n"))
	if len(errs) != 1 || !strings.Contains(errs[0], "process 1") || !strings.Contains(errs[0], `msg="panic serving request"`) {
		t.Errorf("a process that logged a recovered panic: %q", errs)
	}
}
