package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

func TestSingleNodeBootstrapsAndLeads(t *testing.T) {
	n, _ := startNode(t, testConfig(t, t.TempDir()))
	waitReady(t, n)
	if got := n.raft.State(); got != raft.Leader {
		t.Fatalf("state = %v, want Leader", got)
	}
	if !strings.HasPrefix(string(n.addr), "127.0.0.1:") || strings.HasSuffix(string(n.addr), ":0") {
		t.Fatalf("advertised address %q is not the bound loopback port", n.addr)
	}
}

func TestProposeAndRead(t *testing.T) {
	n, _ := startNode(t, testConfig(t, t.TempDir()))
	waitReady(t, n)

	res := propose(t, n, set("/x", `{"a":1}`))
	if string(res.Body) != `{"a":1}` || res.Index == 0 || res.ETag == "" {
		t.Fatalf("set result = %s index %d etag %q", res.Body, res.Index, res.ETag)
	}
	res = propose(t, n, update("/x", `{"b":2,"c/d":"e"}`))
	if string(res.Body) != `{"b":2,"c/d":"e"}` {
		t.Fatalf("update echo = %s", res.Body)
	}
	push := pushed("/list", `{"n":1}`)
	copy(push.Rand[:], []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	res = propose(t, n, push)
	name := pushName(t, res)

	for _, lin := range []bool{true, false} {
		if got := readJSON(t, n, "/x", lin); got != `{"a":1,"b":2,"c":{"d":"e"}}` {
			t.Errorf("read /x (linearizable=%v) = %s", lin, got)
		}
		if got := readJSON(t, n, "/list/"+name, lin); got != `{"n":1}` {
			t.Errorf("read pushed child (linearizable=%v) = %s", lin, got)
		}
	}
	r, err := n.Read(context.Background(), fsm.Read{Path: mustPath("/"), Linearizable: true})
	if err != nil || r.Index < res.Index {
		t.Fatalf("linearizable read index %d (err %v), want >= %d", r.Index, err, res.Index)
	}

	// DELETE is a Set with a nil body.
	propose(t, n, fsm.Command{Kind: fsm.CmdSet, Path: mustPath("/x")})
	if got := readJSON(t, n, "/x", true); got != "null" {
		t.Fatalf("after delete /x = %s", got)
	}
}

func TestProposeIfMatch(t *testing.T) {
	n, _ := startNode(t, testConfig(t, t.TempDir()))
	waitReady(t, n)
	first := propose(t, n, set("/c", `5`))

	bad := set("/c", `6`)
	bad.HasIfMatch, bad.IfMatch = true, "not-the-etag"
	_, err := n.Propose(context.Background(), bad, fsm.AnswerOptions{})
	if !errors.Is(err, fsm.ErrPreconditionFailed) {
		t.Fatalf("mismatched if-match: err = %v, want ErrPreconditionFailed", err)
	}
	var pe *fsm.PreconditionError
	if !errors.As(err, &pe) || render(pe.Current) != "5" {
		t.Fatalf("precondition error does not carry the current value: %#v", err)
	}

	good := set("/c", `7`)
	good.HasIfMatch, good.IfMatch = true, first.ETag
	propose(t, n, good)
	if got := readJSON(t, n, "/c", true); got != "7" {
		t.Fatalf("after matching if-match /c = %s", got)
	}
}

func TestFSMErrorsPassThrough(t *testing.T) {
	n, _ := startNode(t, testConfig(t, t.TempDir()))
	waitReady(t, n)
	propose(t, n, set("/p", `"v"`))
	_, err := n.Propose(context.Background(), set("/p/.priority", `true`), fsm.AnswerOptions{})
	if !errors.Is(err, tree.ErrInvalidData) {
		t.Fatalf("invalid priority: err = %v, want ErrInvalidData", err)
	}
	unparsed := fsm.Command{Kind: fsm.CmdSet, Path: mustPath("/p"), Body: []byte(`{"a":`)}
	if _, err := n.Propose(context.Background(), unparsed, fsm.AnswerOptions{}); !errors.Is(err, errUnparsed) {
		t.Fatalf("a write whose body was not parsed: err = %v, want errUnparsed", err)
	}
	big := set("/big", `"`+strings.Repeat("x", 1000)+`"`)
	big.WriteLimit = 10
	if _, err := n.Propose(context.Background(), big, fsm.AnswerOptions{}); !errors.Is(err, tree.ErrTooLarge) {
		t.Fatalf("write over limit: err = %v, want ErrTooLarge", err)
	}
}

func TestConcurrentLinearizableReads(t *testing.T) {
	n, _ := startNode(t, testConfig(t, t.TempDir()))
	waitReady(t, n)
	const workers = 64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for i := range workers {
		wg.Go(func() {
			path := fmt.Sprintf("/k/%d", i)
			for round := range 3 {
				want := fmt.Sprint(i*10 + round)
				if _, err := n.Propose(context.Background(), set(path, want), fsm.AnswerOptions{}); err != nil {
					errs <- fmt.Errorf("worker %d propose: %w", i, err)
					return
				}
				// Acknowledged before the read started, so it must be seen.
				r, err := n.Read(context.Background(), fsm.Read{Path: mustPath(path), Linearizable: true})
				if err != nil {
					errs <- fmt.Errorf("worker %d read: %w", i, err)
					return
				}
				if got := render(r.Value); got != want {
					errs <- fmt.Errorf("worker %d read %s = %s, want %s", i, path, got, want)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	r, err := n.Read(context.Background(), fsm.Read{Path: mustPath("/k"), Linearizable: true})
	if err != nil || r.Value.Len() != workers {
		t.Fatalf("after workers /k has %d children (err %v), want %d", r.Value.Len(), err, workers)
	}
}

func TestRestartFromLog(t *testing.T) {
	dir := t.TempDir()
	n, _ := startNode(t, testConfig(t, dir))
	waitReady(t, n)
	for i := range 20 {
		propose(t, n, set(fmt.Sprintf("/items/%d", i), fmt.Sprint(i)))
	}
	crash(t, n)

	n2, _ := startNode(t, testConfig(t, dir))
	waitReady(t, n2)
	if got := readJSON(t, n2, "/items/19", true); got != "19" {
		t.Fatalf("after crash restart /items/19 = %s", got)
	}
	r, _ := n2.Read(context.Background(), fsm.Read{Path: mustPath("/items")})
	if r.Value.Len() != 20 {
		t.Fatalf("after crash restart /items has %d children, want 20", r.Value.Len())
	}
	if last := n2.snaps.lastSnapshot(); !last.At.IsZero() {
		t.Fatalf("restart replayed from a snapshot (%+v); the log path was not exercised", last)
	}
}

func TestRestartFromShutdownSnapshot(t *testing.T) {
	dir := t.TempDir()
	n, _ := startNode(t, testConfig(t, dir))
	waitReady(t, n)
	propose(t, n, set("/a", `{"b":"c"}`))
	if err := n.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if n.snaps.lastSnapshot().Index == 0 {
		t.Fatal("Shutdown took no snapshot")
	}

	n2, _ := startNode(t, testConfig(t, dir))
	// Restored before Raft starts, so a local read sees it at once.
	if got := readJSON(t, n2, "/a", false); got != `{"b":"c"}` {
		t.Fatalf("restored /a = %s", got)
	}
	waitReady(t, n2)
	if got := readJSON(t, n2, "/a/b", true); got != `"c"` {
		t.Fatalf("linearizable /a/b after restart = %s", got)
	}
	propose(t, n2, set("/a/d", `1`))
	if got := readJSON(t, n2, "/a", true); got != `{"b":"c","d":1}` {
		t.Fatalf("write after restart: /a = %s", got)
	}
}

func TestSnapshotThresholdAndRestore(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	cfg.SnapshotThreshold = 50
	cfg.TrailingLogs = 5 // compact hard so the restart depends on the snapshot
	n, _ := startNode(t, cfg)
	waitReady(t, n)
	const writes = 150
	for i := range writes {
		propose(t, n, set(fmt.Sprintf("/s/%d", i), fmt.Sprint(i)))
	}
	waitFor(t, "an automatic snapshot", 10*time.Second, func() bool { return n.snaps.count.Load() > 0 })
	if n.snaps.lastSnapshot().Size == 0 {
		t.Fatal("snapshot size not measured")
	}
	// More writes after the snapshot: the restart needs snapshot + log.
	propose(t, n, set("/after", `true`))
	waitFor(t, "log compaction", 10*time.Second, func() bool {
		var l raft.Log
		return errors.Is(n.logs.GetLog(1, &l), raft.ErrLogNotFound)
	})
	crash(t, n)

	n2, _ := startNode(t, cfg)
	waitReady(t, n2)
	r, err := n2.Read(context.Background(), fsm.Read{Path: mustPath("/s"), Linearizable: true})
	if err != nil || r.Value.Len() != writes {
		t.Fatalf("after restore /s has %d children (err %v), want %d", r.Value.Len(), err, writes)
	}
	if got := readJSON(t, n2, "/after", true); got != "true" {
		t.Fatalf("entry after the snapshot lost: /after = %s", got)
	}
}

func TestShutdown(t *testing.T) {
	n, _ := startNode(t, testConfig(t, t.TempDir()))
	waitReady(t, n)
	if err := n.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := n.Shutdown(context.Background()); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
	if _, err := n.Propose(context.Background(), set("/x", "1"), fsm.AnswerOptions{}); !errors.Is(err, fsm.ErrShuttingDown) {
		t.Fatalf("Propose after shutdown: %v", err)
	}
	if _, err := n.Read(context.Background(), fsm.Read{Linearizable: true}); !errors.Is(err, fsm.ErrShuttingDown) {
		t.Fatalf("Read after shutdown: %v", err)
	}
	if err := n.Ready(context.Background()); !errors.Is(err, fsm.ErrNotReady) {
		t.Fatalf("Ready after shutdown: %v", err)
	}
}

func TestStatus(t *testing.T) {
	n, _ := startNode(t, testConfig(t, t.TempDir()))
	waitReady(t, n)
	propose(t, n, set("/x", "1"))
	v, err := n.Status(context.Background())
	if err != nil {
		t.Fatalf("Status: %v", err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal status: %v", err)
	}
	var st struct {
		NodeID, Role, Leader string
		Term                 uint64
		CommitIndex          uint64 `json:"commit_index"`
		AppliedIndex         uint64 `json:"applied_index"`
		Ready                bool
		Members              []struct {
			ID, Address, Suffrage string
			Self                  bool
		}
		Versions struct {
			EntryFormat    int `json:"entry_format"`
			SnapshotFormat int `json:"snapshot_format"`
		}
		Raft map[string]string
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("unmarshal status: %v", err)
	}
	if st.Role != "leader" || st.Leader != "n1" || st.Term == 0 || st.CommitIndex == 0 || !st.Ready {
		t.Errorf("status = %s", b)
	}
	if len(st.Members) != 1 || st.Members[0].ID != "n1" || !st.Members[0].Self ||
		st.Members[0].Suffrage != "Voter" || st.Members[0].Address != string(n.addr) {
		t.Errorf("members = %+v", st.Members)
	}
	if st.Versions.EntryFormat != fsm.CommandVersion || st.Versions.SnapshotFormat != fsm.SnapshotVersion {
		t.Errorf("versions = %+v", st.Versions)
	}
	if st.Raft["state"] != "Leader" {
		t.Errorf("raft stats = %v", st.Raft)
	}
}

func TestRegisterMetrics(t *testing.T) {
	n, _ := startNode(t, testConfig(t, t.TempDir()))
	waitReady(t, n)
	reg := prometheus.NewRegistry()
	if err := n.RegisterMetrics(reg); err != nil {
		t.Fatalf("RegisterMetrics: %v", err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		m := mf.GetMetric()[0]
		if g := m.GetGauge(); g != nil {
			got[mf.GetName()] = g.GetValue()
		} else if c := m.GetCounter(); c != nil {
			got[mf.GetName()] = c.GetValue()
		}
	}
	if got["arbor_raft_state"] != 2 || got["arbor_raft_is_leader"] != 1 || got["arbor_raft_term"] < 1 ||
		got["arbor_raft_commit_index"] < 1 || got["arbor_raft_leader_changes_total"] < 1 {
		t.Errorf("metrics = %v", got)
	}
	if err := n.RegisterMetrics(reg); err == nil {
		t.Error("registering twice should fail")
	}
}

// TestNoQuorum starts a node whose configuration names a second voter that
// never answers: it can never win an election, like a node cut off from
// the majority.
func TestNoQuorum(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	cfg.WriteTimeout = 300 * time.Millisecond
	seedTwoVoterState(t, cfg)
	n, _ := startNode(t, cfg)

	start := time.Now()
	_, err := n.Propose(context.Background(), set("/x", "1"), fsm.AnswerOptions{})
	if !errors.Is(err, fsm.ErrNoLeader) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Propose without quorum: err = %v, want ErrNoLeader", err)
	}
	if took := time.Since(start); took < cfg.WriteTimeout || took > cfg.WriteTimeout+3*time.Second {
		t.Errorf("Propose gave up after %s, want about %s", took, cfg.WriteTimeout)
	}
	if _, err := n.Read(context.Background(), fsm.Read{Linearizable: true}); !errors.Is(err, fsm.ErrNoLeader) {
		t.Fatalf("linearizable Read without quorum: err = %v, want ErrNoLeader", err)
	}
	if _, err := n.Read(context.Background(), fsm.Read{}); err != nil {
		t.Fatalf("local Read without quorum: %v", err)
	}
	err = n.Ready(context.Background())
	if !errors.Is(err, fsm.ErrNotReady) || !strings.Contains(err.Error(), "no leader") {
		t.Fatalf("Ready without quorum: %v", err)
	}
	// The caller's own context is honoured too: a cancelled one ends the
	// wait with context.Canceled rather than the write timeout.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := n.Propose(ctx, set("/x", "1"), fsm.AnswerOptions{}); !errors.Is(err, fsm.ErrNoLeader) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Propose with a cancelled context: err = %v", err)
	}
}

// seedTwoVoterState writes Raft state for cfg.NodeID plus an absent peer.
func seedTwoVoterState(t *testing.T, cfg Config) {
	t.Helper()
	cfg = cfg.withDefaults()
	n := &Node{cfg: cfg, log: cfg.Logger, fsm: fsm.New(), id: raft.ServerID(cfg.NodeID)}
	bolt, logs, snaps := openStoresForTest(t, n)
	_, trans := raft.NewInmemTransport("")
	conf := raft.Configuration{Servers: []raft.Server{
		{Suffrage: raft.Voter, ID: raft.ServerID(cfg.NodeID), Address: "127.0.0.1:1"},
		{Suffrage: raft.Voter, ID: "ghost", Address: "127.0.0.1:2"},
	}}
	if err := raft.BootstrapCluster(cfg.raftConfig(nil), logs, bolt, snaps, trans, conf); err != nil {
		t.Fatalf("seed bootstrap: %v", err)
	}
	if err := bolt.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestDataDirInUse(t *testing.T) {
	dir := t.TempDir()
	n, _ := startNode(t, testConfig(t, dir))
	waitReady(t, n)
	start := time.Now()
	if _, err := New(testConfig(t, dir), fsm.New()); err == nil || !strings.Contains(err.Error(), "raft.db") {
		t.Fatalf("second node on the same data dir: err = %v", err)
	}
	if took := time.Since(start); took > boltOpenTimeout+time.Second {
		t.Fatalf("refusal took %s", took)
	}
	// The first node is unaffected.
	propose(t, n, set("/ok", "true"))
}
