package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

// testWriter forwards log lines to the test's output until the test ends,
// then drops them (late lines from stopping goroutines must not panic).
type testWriter struct {
	mu   sync.Mutex
	w    io.Writer
	done bool
}

func (tw *testWriter) Write(p []byte) (int, error) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.done {
		return len(p), nil
	}
	return tw.w.Write(p)
}

func testLogger(t testing.TB) *slog.Logger {
	tw := &testWriter{w: t.Output()}
	t.Cleanup(func() {
		tw.mu.Lock()
		tw.done = true
		tw.mu.Unlock()
	})
	return slog.New(slog.NewTextHandler(tw, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// testConfig is a fast single-node configuration on a free loopback port.
func testConfig(t *testing.T, dir string) Config {
	return Config{
		NodeID:       "n1",
		DataDir:      dir,
		RaftAddr:     "127.0.0.1:0",
		WriteTimeout: 2 * time.Second,
		Timing:       FastTiming(),
		Logger:       testLogger(t),
	}
}

// startNode starts a node and registers its shutdown.
func startNode(t *testing.T, cfg Config) (*Node, *fsm.FSM) {
	t.Helper()
	f := fsm.New()
	n, err := New(cfg, f)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = n.Shutdown(context.Background()) })
	return n, f
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond) // poll interval, bounded by the deadline
	}
}

// waitReady waits until the node leads and Ready says yes.
func waitReady(t *testing.T, n *Node) {
	t.Helper()
	var last error
	waitFor(t, "node ready", 5*time.Second, func() bool {
		last = n.Ready(context.Background())
		return last == nil && n.raft.State() == raft.Leader
	})
}

// crash stops a node the way a killed process would: no leadership
// transfer and no snapshot, so a restart must replay the log.
func crash(t testing.TB, n *Node) {
	t.Helper()
	n.shutdownOnce.Do(func() {
		n.closing.Store(true)
		if err := n.raft.Shutdown().Error(); err != nil {
			t.Errorf("raft shutdown: %v", err)
		}
		n.raft.DeregisterObserver(n.observer)
		close(n.stop)
		n.wg.Wait()
		if n.disco != nil {
			_ = n.disco.Close() // no Leave: peers see a failure
		}
		_ = n.net.Close()
		if err := n.bolt.Close(); err != nil {
			t.Errorf("close bolt: %v", err)
		}
	})
}

func render(v *tree.Node) string { return string(tree.AppendJSON(nil, v, tree.RenderOptions{})) }

// set is a PUT of body at path as the HTTP layer builds it: parsed once
// (when body is valid JSON; an invalid one goes as text, for the FSM to
// refuse).
func set(path string, body string) fsm.Command {
	p, err := tree.SplitPath(path)
	if err != nil {
		panic(err)
	}
	c := fsm.Command{Kind: fsm.CmdSet, Path: p, Body: []byte(body), Now: time.Now().UnixMilli()}
	if v, err := tree.ParseBody(c.Body, tree.MaxDepth-len(p)); err == nil {
		c.Parsed, c.Value = true, v
	}
	return c
}

// update is a PATCH of body at path, parsed once.
func update(path string, body string) fsm.Command {
	p := mustPath(path)
	fields, err := tree.ParseUpdate([]byte(body), tree.MaxDepth-len(p))
	if err != nil {
		panic(err)
	}
	return fsm.Command{Kind: fsm.CmdUpdate, Path: p, Body: []byte(body), Parsed: true, Fields: fields, Now: time.Now().UnixMilli()}
}

// pushed is a POST of body at path, parsed once.
func pushed(path string, body string) fsm.Command {
	p := mustPath(path)
	v, err := tree.ParseBody([]byte(body), tree.MaxDepth-len(p)-1)
	if err != nil {
		panic(err)
	}
	return fsm.Command{Kind: fsm.CmdPush, Path: p, Body: []byte(body), Parsed: true, Value: v, Now: time.Now().UnixMilli()}
}

// pushName is the key in a POST's answer.
func pushName(t *testing.T, a fsm.Answer) string {
	t.Helper()
	var v struct{ Name string }
	if err := json.Unmarshal(a.Body, &v); err != nil || len(v.Name) != 20 {
		t.Fatalf("push answer %s: %v", a.Body, err)
	}
	return v.Name
}

func mustPath(s string) tree.Path {
	p, err := tree.SplitPath(s)
	if err != nil {
		panic(err)
	}
	return p
}

// readJSON reads path with the given consistency and renders it.
func readJSON(t *testing.T, n *Node, path string, linearizable bool) string {
	t.Helper()
	r, err := n.Read(context.Background(), fsm.Read{Path: mustPath(path), Linearizable: linearizable})
	if err != nil {
		t.Fatalf("Read(%s, linearizable=%v): %v", path, linearizable, err)
	}
	return render(r.Value)
}

func propose(t *testing.T, n *Node, c fsm.Command) fsm.Answer {
	t.Helper()
	return proposeWith(t, n, c, fsm.AnswerOptions{})
}

// proposeWith is propose with answer options o.
func proposeWith(t *testing.T, n *Node, c fsm.Command, o fsm.AnswerOptions) fsm.Answer {
	t.Helper()
	// A plain set is idempotent, so, like a client, retry it when the
	// cluster lost its leader on the way (a busy machine can cost one
	// election even with these timers); any other command fails at once.
	retry := c.Kind == fsm.CmdSet && !c.HasIfMatch && !bytes.Contains(c.Body, []byte(".sv"))
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := n.Propose(context.Background(), c, o)
		if err == nil {
			return res
		}
		if !retry || time.Now().After(deadline) || !(errors.Is(err, fsm.ErrNoLeader) || errors.Is(err, fsm.ErrTimeout) || errors.Is(err, fsm.ErrNotReady)) {
			t.Fatalf("Propose(%v %s %s): %v", c.Kind, c.Path, c.Body, err)
		}
		time.Sleep(20 * time.Millisecond) // a client's back-off, bounded by the deadline
	}
}

// openStoresForTest opens the data directory's stores the way New does,
// without starting Raft.
func openStoresForTest(t *testing.T, n *Node) (*raftboltdb.BoltStore, raft.LogStore, raft.SnapshotStore) {
	t.Helper()
	if err := os.MkdirAll(n.cfg.DataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	bolt, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(n.cfg.DataDir, "raft.db")})
	if err != nil {
		t.Fatal(err)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(n.cfg.DataDir, snapshotsRetained, newHCLogger(n.log, "snapshots"))
	if err != nil {
		t.Fatal(err)
	}
	return bolt, bolt, snaps
}
