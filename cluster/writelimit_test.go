package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

// TestWriteNodes counts what a write creates or changes: the nodes on its
// path and of its value, and for a PATCH each field's value (one for a
// deletion) and the objects its path makes.
func TestWriteNodes(t *testing.T) {
	for _, tc := range []struct {
		c    fsm.Command
		want int
	}{
		{set("/", `1`), 1},
		{set("/a/b", `null`), 2},
		{set("/a", `{"x":1,"y":{"z":"s","w":[1,2]}}`), 1 + 1 + 1 + 1 + 1 + 1 + 2},
		{update("/a", `{"x/y":1,"z":{"k":true},"gone":null}`), 1 + (1 + 1) + 2 + 1},
		{fsm.Command{Kind: fsm.CmdPush, Path: mustPath("/log"), Parsed: true, Value: tree.String("x")}, 2},
		{fsm.Command{Kind: fsm.CmdSetRules, Body: []byte(`{"rules":{}}`)}, 0}, // no path, no value
	} {
		if got := writeNodes(&tc.c); got != tc.want {
			t.Errorf("writeNodes(%v %s) = %d, want %d", tc.c.Kind, tc.c.Path, got, tc.want)
		}
	}
}

// TestWriteOverTheLimitsIsRefused: a write whose entry is over
// maxEntryBytes, or which creates or changes more than MaxWriteNodes
// nodes, is a 413 naming the limit and the way out, and one whose value
// alone is over its write size limit is Firebase's 413, all before
// anything is logged, on the leader and through a follower alike; the
// leader refuses a forwarded entry over the limit too. Writes at the
// limits pass.
func TestWriteOverTheLimitsIsRefused(t *testing.T) {
	c := newTestCluster(t, 3, func(cfg *Config) { cfg.WriteTimeout = 20 * time.Second })
	leader := c.waitLeader()
	f := c.follower(leader)
	// Strings of 8 MiB (a string holds at most 10): four of them and a
	// little more are over the entry limit.
	s := strings.Repeat("x", 8<<20)
	tooBig := set("/big", fmt.Sprintf(`{"a":"%s","b":"%s","c":"%s","d":"%s","e":"%s"}`, s, s, s, s, s[:1<<20]))
	// Fields of two keys and a leaf count two nodes each.
	leaf := tree.Int(1)
	tooMany := fsm.Command{Kind: fsm.CmdUpdate, Path: mustPath("/many"), Parsed: true, Fields: make([]tree.Field, MaxWriteNodes/2)}
	for i := range tooMany.Fields {
		tooMany.Fields[i] = tree.Field{Path: tree.Path{fmt.Sprintf("k%07d", i), "v"}, Value: leaf}
	}
	overLimit := set("/data", `"`+strings.Repeat("d", 2000)+`"`)
	overLimit.WriteLimit = 1000
	before := leader.raft.LastIndex()
	for _, tc := range []struct {
		c    fsm.Command
		want string
	}{
		{tooBig, "this write is 33.0 MiB once encoded, and one write carries at most 32.0 MiB"},
		{tooMany, fmt.Sprintf("this write creates or changes %d nodes (values and the objects that hold them), and one write at most %d", MaxWriteNodes+1, MaxWriteNodes)},
	} {
		for _, n := range []*Node{leader, f} {
			_, err := n.Propose(context.Background(), tc.c, fsm.AnswerOptions{})
			var pub *tree.PublicError
			if !errors.Is(err, tree.ErrTooLarge) || !errors.As(err, &pub) || !strings.Contains(pub.Message, tc.want) ||
				!strings.HasPrefix(pub.Message, "Error: WRITE_TOO_BIG: ") || !strings.Contains(pub.Message, "several PATCHes") || !strings.Contains(pub.Message, "arbor restore") {
				t.Fatalf("via %s: %v, want a 413 saying %q", n.id, err, tc.want)
			}
		}
	}
	for _, n := range []*Node{leader, f} {
		_, err := n.Propose(context.Background(), overLimit, fsm.AnswerOptions{})
		var pub *tree.PublicError
		if !errors.As(err, &pub) || pub.Message != tree.MsgWriteTooBig {
			t.Fatalf("a value over its write size limit via %s: %v", n.id, err)
		}
	}
	payload := append([]byte{encodeAnswerOptions(fsm.AnswerOptions{})}, tooBig.Encode()...)
	waitFor(t, "the leader to refuse a forwarded entry over the limit", 10*time.Second, func() bool {
		_, err := decodeReply(c.waitLeader().handleRPC(context.Background(), opPropose, payload))
		if errors.Is(err, errRetry) {
			return false // leadership moved under the race detector's load: ask the new leader
		}
		if !errors.Is(err, tree.ErrTooLarge) {
			t.Fatalf("forwarded entry over the limit: %v", err)
		}
		return true
	})
	for _, n := range c.live() {
		if idx, err := n.lastCommandAt(n.raft.LastIndex()); err != nil || idx > before {
			t.Fatalf("a refused write reached %s's log (last command at %d, before %d): %v", n.id, idx, before, err)
		}
	}
	if got := f.tooLarge.Load(); got != 3 {
		t.Errorf("the follower counted %d writes too large, want 3", got)
	}
	// One node fewer is within the limit, and so is an entry of
	// exactly MaxWriteBytes.
	tooMany.Fields[len(tooMany.Fields)-1].Path = tree.Path{"last"}
	if err := checkWrite(&tooMany); err != nil {
		t.Fatalf("a PATCH of %d nodes: %v", MaxWriteNodes, err)
	}
	if err := checkWriteBytes(maxEntryBytes); err != nil {
		t.Fatalf("an entry of maxEntryBytes: %v", err)
	}
	overLimit.WriteLimit = overLimit.Value.Size()
	if err := checkWrite(&overLimit); err != nil {
		t.Fatalf("a value of its write size limit: %v", err)
	}
}

// TestLargeWriteIsOneEntry: a write of MiBs through a follower is one
// log entry, applied as one write on every replica.
func TestLargeWriteIsOneEntry(t *testing.T) {
	c := newTestCluster(t, 3, func(cfg *Config) {
		cfg.WriteTimeout = 20 * time.Second
		// The production timeouts: the in-memory transport has no fast
		// path for heartbeats, which wait behind the entry's append
		// under the race detector's load.
		cfg.Timing.HeartbeatTimeout, cfg.Timing.ElectionTimeout, cfg.Timing.LeaderLeaseTimeout = time.Second, time.Second, 500*time.Millisecond
	})
	leader := c.waitLeader()
	f := c.follower(leader)
	value := strings.Repeat("z", 3<<19+123)
	var a fsm.Answer
	var start uint64
	waitFor(t, "the large write to commit", 30*time.Second, func() bool {
		start = c.waitLeader().raft.LastIndex()
		var err error
		a, err = f.Propose(context.Background(), set("/large", `{"v":"`+value+`","n":1}`), fsm.AnswerOptions{})
		if err != nil && !errors.Is(err, fsm.ErrNoLeader) && !errors.Is(err, fsm.ErrTimeout) {
			t.Fatalf("large write: %v", err)
		}
		return err == nil // a 503 is retried, as a client would
	})
	if len(a.Body) != len(value)+len(`{"n":1,"v":""}`) {
		t.Fatalf("echo of %d bytes", len(a.Body))
	}
	leader = c.waitLeader()
	commands := 0
	for i := start + 1; i <= leader.raft.LastIndex(); i++ {
		var l raft.Log
		if err := leader.logs.GetLog(i, &l); err == nil && l.Type == raft.LogCommand {
			commands++
			if len(l.Data) < len(value) {
				t.Errorf("entry %d of %d bytes: a piece of the write?", i, len(l.Data))
			}
		}
	}
	if commands != 1 {
		t.Fatalf("%d command entries for one write", commands)
	}
	for _, n := range c.live() {
		r, err := n.Read(context.Background(), fsm.Read{Path: mustPath("/large/v"), Linearizable: true})
		if err != nil || r.Value.StringValue() != value {
			t.Fatalf("%s reads the large value wrong (%d bytes): %v", n.id, len(r.Value.StringValue()), err)
		}
	}
}
