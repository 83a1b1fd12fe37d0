package cluster

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"
)

func newGossipKey(t *testing.T) []byte {
	t.Helper()
	k := make([]byte, GossipKeyLen)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return k
}

// keyNames names keys A, B, C… in the order given, for readable failures.
func keyNames(all [][]byte, got [][]byte) string {
	var names []string
	for _, k := range got {
		i := slices.IndexFunc(all, func(a []byte) bool { return bytes.Equal(a, k) })
		names = append(names, string(rune('A'+i)))
	}
	return strings.Join(names, "")
}

func TestGossipKeyringSet(t *testing.T) {
	a, b, c, d := newGossipKey(t), newGossipKey(t), newGossipKey(t), newGossipKey(t)
	all := [][]byte{a, b, c, d}
	ring, err := newGossipKeyring([][]byte{a})
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		set  [][]byte
		want string // the ring, primary first; order beyond it is free
	}{
		{[][]byte{a, b}, "AB"},     // a new secondary key
		{[][]byte{b, a}, "BA"},     // promoted
		{[][]byte{b}, "B"},         // the old one dropped
		{[][]byte{b, d, c}, "BDC"}, // two at once
		{[][]byte{b, c}, "BC"},     // a dropped key in the middle of the ring
		{[][]byte{c, a}, "CA"},     // all at once: C promoted, B dropped, A added
	} {
		if err := ring.set(step.set); err != nil {
			t.Fatalf("set %s: %v", keyNames(all, step.set), err)
		}
		got := ring.keys()
		if got := keyNames(all, got); got[:1] != step.want[:1] || len(got) != len(step.want) || !sameLetters(got, step.want) {
			t.Fatalf("set %s: ring %s, want %s", keyNames(all, step.set), got, step.want)
		}
	}
	for name, bad := range map[string][][]byte{
		"no key":        nil,
		"short key":     {a, []byte("short")},
		"empty primary": {{}},
	} {
		if err := ring.set(bad); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if got := keyNames(all, ring.keys()); got != "CA" {
		t.Errorf("a refused set changed the ring to %s", got)
	}
}

func sameLetters(a, b string) bool {
	x, y := []byte(a), []byte(b)
	slices.Sort(x)
	slices.Sort(y)
	return bytes.Equal(x, y)
}

// gossipTiming is FastTiming with a probe timeout that two busy cores and
// the race detector keep within, since pings below wait for it.
func gossipTiming() Timing {
	tm := FastTiming()
	tm.GossipProbeTimeout = time.Second
	return tm
}

// startGossip starts memberlist alone (no Raft) on a loopback port.
func startGossip(t *testing.T, id string, keys [][]byte, join ...string) *gossip {
	t.Helper()
	cfg := Config{NodeID: id, GossipAddr: "127.0.0.1:0", GossipKeys: keys, Join: join, Timing: gossipTiming()}
	d, err := newGossip(cfg, nodeMeta{}, testLogger(t), func() {})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d.(*gossip)
}

// udpAddr is where g's memberlist listens.
func udpAddr(g *gossip) net.Addr {
	n := g.ml.LocalNode()
	return &net.UDPAddr{IP: n.Addr, Port: int(n.Port)}
}

// pingable reports whether from gets an answer from to's memberlist: both
// directions of one UDP exchange, each sealed with its sender's primary
// key and opened with any key of the receiver's ring.
func pingable(from, to *gossip) bool {
	_, err := from.ml.Ping(to.self, udpAddr(to))
	return err == nil
}

// TestGossipKeyRotationKeepsEveryoneTalking rotates the key of a running
// three-node gossip cluster the documented way (add as secondary
// everywhere, promote everywhere, drop the old one everywhere), one node
// at a time, and checks after every single change that every node still
// reaches every other; at the end a node with only the old key is
// shut out and one with only the new key gets in.
func TestGossipKeyRotationKeepsEveryoneTalking(t *testing.T) {
	oldKey, newKey := newGossipKey(t), newGossipKey(t)
	g1 := startGossip(t, "g1", [][]byte{oldKey})
	seed := g1.ml.LocalNode().Address()
	nodes := []*gossip{g1, startGossip(t, "g2", [][]byte{oldKey}, seed), startGossip(t, "g3", [][]byte{oldKey}, seed)}
	waitFor(t, "three gossip members", 10*time.Second, func() bool {
		for _, g := range nodes {
			if g.ml.NumMembers() != 3 {
				return false
			}
		}
		return true
	})
	allTalk := func(step string) {
		t.Helper()
		for _, a := range nodes {
			for _, b := range nodes {
				if a == b {
					continue
				}
				waitFor(t, fmt.Sprintf("%s: %s to reach %s", step, a.self, b.self), 10*time.Second, func() bool { return pingable(a, b) })
			}
		}
	}
	// The check can fail: a node that seals with a key the others do not
	// hold yet reaches no one.
	if err := g1.setKeys([][]byte{newKey, oldKey}); err != nil {
		t.Fatal(err)
	}
	if pingable(g1, nodes[1]) {
		t.Fatal("g1 sealed with a key g2 lacks and still reached it: the check below proves nothing")
	}
	if err := g1.setKeys([][]byte{oldKey}); err != nil {
		t.Fatal(err)
	}

	for _, step := range []struct {
		name string
		keys [][]byte
	}{
		{"add the new key", [][]byte{oldKey, newKey}},
		{"promote it", [][]byte{newKey, oldKey}},
		{"drop the old key", [][]byte{newKey}},
	} {
		for _, g := range nodes {
			if err := g.setKeys(step.keys); err != nil {
				t.Fatalf("%s on %s: %v", step.name, g.self, err)
			}
			allTalk(step.name + " on " + g.self)
		}
	}

	outsider := startGossip(t, "old", [][]byte{oldKey})
	if n, err := outsider.ml.Join([]string{seed}); err == nil || n != 0 {
		t.Errorf("a node with only the old key joined (%d contacted, err %v)", n, err)
	}
	if pingable(g1, outsider) {
		t.Error("a node with only the old key answered a ping")
	}
	newcomer := startGossip(t, "new", [][]byte{newKey}, seed)
	waitFor(t, "the newcomer with the new key to join", 10*time.Second, func() bool { return newcomer.ml.NumMembers() == 4 })
}

// TestSetGossipKeysNeedsEncryptedGossip: keys cannot be added to a node
// that gossips in clear, nor to one without gossip.
func TestSetGossipKeysNeedsEncryptedGossip(t *testing.T) {
	clear := startGossip(t, "clear", nil)
	if err := clear.setKeys([][]byte{newGossipKey(t)}); err == nil {
		t.Error("keys added to gossip started in clear")
	}
	n := &Node{}
	if err := n.SetGossipKeys([][]byte{newGossipKey(t)}); err == nil {
		t.Error("keys set on a node without gossip")
	}
}
