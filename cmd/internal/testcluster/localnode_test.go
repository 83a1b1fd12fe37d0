package testcluster

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperNode is a LocalNode whose log is in a temporary directory, and
// the helper binary with its environment set for the node's processes.
func helperNode(t *testing.T, mode string) (*LocalNode, string) {
	t.Helper()
	c := helper(t, mode)
	// LocalNode passes Environ() on: the mode goes through the runner's
	// environment.
	t.Setenv(helperEnv, mode)
	n := &LocalNode{Name: "n1", LogFile: filepath.Join(t.TempDir(), "n1.log"), Tool: "testcluster-test"}
	t.Cleanup(func() { n.Kill(30 * time.Second) })
	return n, c.Binary
}

func readLog(t *testing.T, n *LocalNode) string {
	t.Helper()
	b, err := os.ReadFile(n.LogFile)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestLocalNodeLifecycle: start, refuse a second start, pause and
// resume, stop gracefully, start again on the same log, kill.
func TestLocalNodeLifecycle(t *testing.T) {
	n, bin := helperNode(t, "serve")
	ctx := context.Background()
	if _, err := n.Running(); err == nil || n.Last() != nil {
		t.Fatal("a node never started is running")
	}
	if err := n.Start(bin); err != nil {
		t.Fatal(err)
	}
	if err := n.Start(bin); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Fatalf("second start: %v", err)
	}
	waitFor(t, "the helper to start", func() bool { return strings.Contains(readLog(t, n), "up") })
	for _, sig := range []syscall.Signal{syscall.SIGSTOP, syscall.SIGCONT} {
		if err := n.Signal(ctx, sig); err != nil {
			t.Fatal(err)
		}
	}
	took, graceful, err := StopWithDump(ctx, n, 30*time.Second, time.Second, time.Second)
	if err != nil || !graceful || took <= 0 {
		t.Fatalf("StopWithDump: %s %v %v", took, graceful, err)
	}
	if code := n.Last().ExitCode(); code != 0 {
		t.Errorf("exit code %d after SIGTERM", code)
	}
	if err := n.Signal(ctx, syscall.SIGTERM); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Errorf("signal to a stopped node: %v", err)
	}
	if err := n.Start(bin); err != nil {
		t.Fatal(err)
	}
	if n.Binary() != bin {
		t.Errorf("Binary() = %q", n.Binary())
	}
	if err := n.Kill(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if !n.WaitExit(ctx, time.Second) {
		t.Error("killed node still running")
	}
	log := readLog(t, n)
	if strings.Count(log, "=== testcluster-test: starting n1 from "+bin+" at ") != 2 || !strings.Contains(log, "terminating") {
		t.Errorf("log:\n%s", log)
	}
}

// TestStopWithDumpDumpsAHungNode: a node that ignores SIGTERM gets
// SIGQUIT after the grace period and writes its goroutines to its log.
func TestStopWithDumpDumpsAHungNode(t *testing.T) {
	n, bin := helperNode(t, "hang")
	if err := n.Start(bin); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the helper to start", func() bool { return strings.Contains(readLog(t, n), "up") })
	ctx, cancel := context.WithCancel(context.Background())
	// A ctx that ends during the grace period does not stop the dump.
	time.AfterFunc(100*time.Millisecond, cancel)
	took, graceful, err := StopWithDump(ctx, n, 500*time.Millisecond, 30*time.Second, 30*time.Second)
	if err != nil || graceful {
		t.Fatalf("StopWithDump: %s %v %v", took, graceful, err)
	}
	if !n.WaitExit(context.Background(), time.Second) {
		t.Fatal("the hung node is still running")
	}
	if log := readLog(t, n); !strings.Contains(log, "goroutine ") || !strings.Contains(log, "SIGQUIT") {
		t.Errorf("no goroutine dump in the log:\n%s", log)
	}
}
