package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/raft"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

// membershipLoop runs while discovery is on: it keeps this node's gossip
// metadata current, bootstraps a new cluster when BootstrapExpect nodes
// have met, and on the leader reconciles the Raft configuration with what
// gossip sees. It wakes on gossip events, leadership changes and every
// ReconcileInterval.
func (n *Node) membershipLoop() {
	defer n.wg.Done()
	tick := time.NewTicker(n.cfg.Timing.ReconcileInterval)
	defer tick.Stop()
	var b bootstrapState
	for {
		ch := n.memberEvents.wait()
		if !n.closing.Load() {
			n.disco.Advertise(n.localMeta()) // a no-op unless it changed
			switch {
			case !n.hasState():
				n.tryBootstrap(&b)
			case n.raft.State() == raft.Leader:
				n.reconcile()
			}
		}
		select {
		case <-n.stop:
			return
		case <-ch:
		case <-tick.C:
		}
	}
}

// localMeta is what this node advertises through gossip.
func (n *Node) localMeta() nodeMeta {
	return nodeMeta{
		RaftAddr:       n.addr,
		EntryFormat:    n.formats.entry,
		SnapshotFormat: n.formats.snapshot,
		Release:        n.cfg.Release,
		Commit:         n.cfg.Commit,
		Expect:         n.cfg.BootstrapExpect,
		HasState:       n.hasState(),
		Formed:         n.raft.LastIndex() > 1,
		CatchingUp:     n.catchingUp.Load(),
		RunID:          n.runID,
	}
}

// hasState reports whether this node holds Raft state (a log or a
// snapshot), i.e. belongs to a cluster.
func (n *Node) hasState() bool { return n.raft.LastIndex() > 0 }

// bootstrapState remembers the last reason bootstrap waited, so each is
// logged once rather than at every tick.
type bootstrapState struct {
	said string
}

func (b *bootstrapState) note(n *Node, level func(string, ...any), msg string, args ...any) {
	if msg == b.said {
		return
	}
	b.said = msg
	level(msg, args...)
}

// formedMetaFormat is the entry format of the first release that
// advertises Formed: an older node with state is always taken to belong
// to a formed cluster.
const formedMetaFormat = 2

// tryBootstrap forms a new cluster if exactly BootstrapExpect nodes without
// Raft state are alive, all expecting that many, and no live node has
// state. Every one of them then bootstraps the same configuration (all of
// them, sorted by ID), so however many do it, one cluster forms. Seeing a
// node with state means a cluster exists: this node waits for its leader
// to add it instead.
func (n *Node) tryBootstrap(b *bootstrapState) {
	expect := n.cfg.BootstrapExpect
	if len(n.cfg.Join) > 0 && !n.disco.Joined() {
		b.note(n, n.log.Info, "waiting to join the cluster before deciding to bootstrap", "join", n.cfg.Join)
		return
	}
	var fresh []peer
	for _, p := range n.disco.Peers() {
		if p.Status != peerAlive {
			continue
		}
		if p.Meta.HasState && (p.Meta.Formed || p.Meta.CatchingUp || p.Meta.EntryFormat < formedMetaFormat) {
			b.note(n, n.log.Info, "found a member of an existing cluster; waiting to be added", "member", string(p.ID))
			return
		}
		// A peer whose state is only a bootstrap configuration is a
		// founding member that bootstrapped first: it counts as fresh,
		// and bootstrapping the same configuration joins it. (Not doing
		// so would leave this node catching up, refusing the vote the
		// first election needs.)
		if p.Meta.RaftAddr == "" {
			continue // metadata we cannot read
		}
		if p.Meta.Expect != expect {
			b.note(n, n.log.Warn, "a new node expects a different cluster size; not bootstrapping",
				"member", string(p.ID), "its_bootstrap_expect", p.Meta.Expect, "bootstrap_expect", expect)
			return
		}
		fresh = append(fresh, p)
	}
	switch {
	case len(fresh) < expect:
		b.note(n, n.log.Info, "waiting for nodes to bootstrap a new cluster", "seen", len(fresh), "bootstrap_expect", expect)
		return
	case len(fresh) > expect:
		b.note(n, n.log.Warn, "more new nodes than bootstrap-expect; not bootstrapping (start exactly that many, or join the others to a running cluster)",
			"seen", len(fresh), "bootstrap_expect", expect)
		return
	}
	slices.SortFunc(fresh, func(a, b peer) int { return cmp.Compare(a.ID, b.ID) })
	conf := raft.Configuration{}
	ids := make([]string, 0, len(fresh))
	for _, p := range fresh {
		conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: p.ID, Address: p.Meta.RaftAddr})
		ids = append(ids, string(p.ID))
	}
	err := n.raft.BootstrapCluster(conf).Error()
	switch {
	case errors.Is(err, raft.ErrCantBootstrap):
		// State arrived meanwhile (a peer's leader replicated to us).
		// Either way this node is a founding member of a new cluster: it
		// never acknowledged anything before, so it may vote at once.
		n.finishCatchUp("founding member of a new cluster")
	case err != nil:
		n.log.Error("bootstrap failed", "error", err)
		return
	default:
		n.log.Info("bootstrapped a new cluster", "voters", ids)
		n.finishCatchUp("bootstrapped a new cluster")
	}
	n.disco.Advertise(n.localMeta())
}

// reconcile, on the leader, makes the Raft configuration follow gossip:
// every alive node becomes a voter (or gets its new address), and, when
// ReapAfter is set, a voter gone from gossip that long is removed. Nothing
// is ever removed because a node stopped: it is probably restarting.
func (n *Node) reconcile() {
	n.reconciles.Add(1)
	cf := n.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return
	}
	servers := map[raft.ServerID]raft.Server{}
	for _, s := range cf.Configuration().Servers {
		servers[s.ID] = s
	}
	peers := map[raft.ServerID]peer{}
	for _, p := range n.disco.Peers() {
		peers[p.ID] = p
		if p.ID == n.id || p.Status != peerAlive || p.Meta.RaftAddr == "" {
			continue // this node's own address is fixSelfAddress's job
		}
		if !n.reconcileMember(p, servers) {
			return // leadership may be gone; the next round retries
		}
	}
	n.forgetStable(peers)
	n.reap(servers, peers)
}

// reconcileMember brings one live peer's place in the Raft configuration
// in line with what gossip says of it: a newcomer joins as a non-voter; a
// non-voter that has caught up and stayed up for Stabilization is
// promoted; a member on a new address gets it. A voter that restarted
// without its state keeps its seat but neither votes nor campaigns until
// it has caught up (voteguard.go, cluster/DESIGN.md). False means a
// configuration change failed.
func (n *Node) reconcileMember(p peer, servers map[raft.ServerID]raft.Server) bool {
	s, ok := servers[p.ID]
	addr := p.Meta.RaftAddr
	var (
		f    raft.IndexFuture
		what string
	)
	switch {
	case !ok && p.Meta.EntryFormat < n.formats.entry:
		n.log.Warn("not adding a member that cannot apply this cluster's log entries; upgrade it",
			"member", string(p.ID), "its_entry_format", p.Meta.EntryFormat, "entry_format", n.formats.entry)
		return true
	case !ok:
		f, what = n.raft.AddNonvoter(p.ID, addr, 0, n.cfg.WriteTimeout), "non-voter added; a voter once caught up"
	case s.Suffrage == raft.Voter && s.Address != addr:
		f, what = n.raft.AddVoter(p.ID, addr, 0, n.cfg.WriteTimeout), "voter address updated"
	case s.Suffrage == raft.Voter:
		return true
	case s.Address != addr:
		f, what = n.raft.AddNonvoter(p.ID, addr, 0, n.cfg.WriteTimeout), "non-voter address updated"
	case n.stableFor(p) >= n.cfg.Timing.Stabilization:
		f, what = n.raft.AddVoter(p.ID, addr, 0, n.cfg.WriteTimeout), "non-voter caught up and stable: promoted to voter"
	default:
		return true
	}
	if err := f.Error(); err != nil {
		n.log.Warn("membership change failed", "member", string(p.ID), "raft_addr", string(addr), "change", what, "error", err)
		return false
	}
	n.log.Info(what, "member", string(p.ID), "raft_addr", string(addr), "old_addr", string(s.Address))
	return true
}

// stableFor is how long p has been alive, with Raft state and caught up
// without interruption, as this leader has seen it (0 when it is not).
func (n *Node) stableFor(p peer) time.Duration {
	n.memberMu.Lock()
	defer n.memberMu.Unlock()
	if !p.Meta.HasState || p.Meta.CatchingUp {
		delete(n.stableSince, p.ID)
		return 0
	}
	since, ok := n.stableSince[p.ID]
	if !ok {
		n.stableSince[p.ID] = time.Now()
		return 0
	}
	return time.Since(since)
}

// forgetStable drops the stability clocks of peers no longer alive.
func (n *Node) forgetStable(peers map[raft.ServerID]peer) {
	n.memberMu.Lock()
	defer n.memberMu.Unlock()
	for id := range n.stableSince {
		if p, ok := peers[id]; !ok || p.Status != peerAlive {
			delete(n.stableSince, id)
		}
	}
}

// reap removes voters that gossip has not seen alive for ReapAfter: known
// dead or gone since peer.Since, or never seen by this leader since it
// first noticed.
func (n *Node) reap(servers map[raft.ServerID]raft.Server, peers map[raft.ServerID]peer) {
	n.memberMu.Lock()
	defer n.memberMu.Unlock()
	now := time.Now()
	for id := range n.missingSince {
		if _, ok := servers[id]; !ok {
			delete(n.missingSince, id)
		}
	}
	if n.cfg.ReapAfter <= 0 {
		return
	}
	for id := range servers {
		if id == n.id {
			continue
		}
		p, known := peers[id]
		var since time.Time
		switch {
		case known && p.Status == peerAlive:
			delete(n.missingSince, id)
			continue
		case known:
			since = p.Since
		default:
			if _, ok := n.missingSince[id]; !ok {
				n.missingSince[id] = now
			}
			since = n.missingSince[id]
		}
		if now.Sub(since) < n.cfg.ReapAfter {
			continue
		}
		if err := n.raft.RemoveServer(id, 0, n.cfg.WriteTimeout).Error(); err != nil {
			n.log.Warn("cannot reap member", "member", string(id), "error", err)
			return
		}
		delete(n.missingSince, id)
		n.log.Warn("member reaped: gone longer than reap-after", "member", string(id), "gone_since", since, "reap_after", n.cfg.ReapAfter)
	}
}

// RemoveMember removes the server id from the Raft configuration (through
// the leader). Only a member that gossip does not see alive can be
// removed: an alive one would be added back at once; stop it first.
func (n *Node) RemoveMember(ctx context.Context, id string) error {
	const op = "remove member"
	if n.closing.Load() {
		return shuttingDown(op)
	}
	if id == "" {
		return tree.Public(tree.ErrBadRequest, "Member id is empty")
	}
	ctx, cancel := n.bound(ctx)
	defer cancel()
	for {
		ch := n.changes.wait()
		t, err := n.route(ctx, op)
		if err != nil {
			return err
		}
		if t.local {
			err = n.leaderRemove(ctx, raft.ServerID(id))
		} else {
			err = n.forwardRemove(ctx, t, id)
		}
		if !errors.Is(err, errRetry) {
			return err
		}
		if err := awaitChange(ctx, ch); err != nil {
			return deadlineError(op, "leadership changing", fsm.ErrNoLeader, err)
		}
	}
}

// forwardRemove asks the leader to remove id.
func (n *Node) forwardRemove(ctx context.Context, t target, id string) error {
	reply, err := n.net.RoundTrip(ctx, t.addr, opRemoveServer, []byte(id))
	switch {
	case errors.Is(err, errNotSent):
		return errRetry
	case err != nil:
		return fmt.Errorf("remove member: no answer from leader %s, outcome unknown: %w (%w)", t.id, fsm.ErrNoLeader, err)
	}
	r, err := decodeReply(reply)
	if err != nil {
		return err
	}
	return r.done()
}

// leaderRemove is RemoveMember on the leader.
func (n *Node) leaderRemove(ctx context.Context, id raft.ServerID) error {
	const op = "remove member"
	cf := n.raft.GetConfiguration()
	if err := waitFuture(ctx, cf); err != nil {
		return raftError(op, err, true)
	}
	found := false
	for _, s := range cf.Configuration().Servers {
		found = found || s.ID == id
	}
	if !found {
		return tree.Public(tree.ErrBadRequest, fmt.Sprintf("No member %q in the cluster", id))
	}
	if id == n.id || n.peerAlive(id) {
		return tree.Public(tree.ErrBadRequest, fmt.Sprintf("Member %q is alive; stop it before removing it", id))
	}
	if err := waitFuture(ctx, n.raft.RemoveServer(id, 0, n.cfg.WriteTimeout)); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
			return deadlineError(op, "configuration change not committed in time", fsm.ErrTimeout, ctxErr)
		}
		return raftError(op, err, false)
	}
	n.memberMu.Lock()
	delete(n.missingSince, id)
	n.memberMu.Unlock()
	n.log.Warn("member removed by an operator", "member", string(id))
	return nil
}

// peerAlive reports whether gossip sees id alive.
func (n *Node) peerAlive(id raft.ServerID) bool {
	if n.disco == nil {
		return false
	}
	for _, p := range n.disco.Peers() {
		if p.ID == id {
			return p.Status == peerAlive
		}
	}
	return false
}
