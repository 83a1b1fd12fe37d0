package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"github.com/arbordb/arbor/fsm"
)

// The onDisconnect operations of realtime sessions live in the state
// machine, tied to (node, run, session): the node holding the connection,
// the run of its process, the session (fsm/disconnects.go). The node that
// holds a session proposes the run of its operations when the connection
// ends. When that node cannot — it died, was cut off long enough for
// gossip to declare it dead, or restarted — the leader does: orphanLoop
// compares the (node, run) pairs holding operations with what gossip says
// of the nodes, and proposes the run of every orphaned pair
// (httpapi/realtime/DESIGN.md, "Presence that survives a node").

// presenceInterval is how often the leader looks for orphaned operations
// besides gossip events and leadership changes.
const presenceInterval = time.Second

// orphanQuiet is how long the leader must have heard nothing from a node
// gossip declares failed or left (its progress probes, progress.go), and
// have led, before it runs that node's operations. Gossip and Raft can
// disagree: a restarted container's gossip failed over UDP while Raft
// over TCP still reached it, and the leader ran the operations of
// connections the node went on serving. A node fences its connections
// holding operations after 2 s without a leader (httpapi/realtime,
// FenceAfter); twice that keeps the close before the run.
const orphanQuiet = 4 * time.Second

// newRunID draws a process's run id: 8 random bytes in hex.
func newRunID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("cluster: run id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// RunID is this process's run id: fresh at every start, advertised
// through gossip, so that the operations a previous run left are told
// from the live ones.
func (n *Node) RunID() string { return n.runID }

// LeaderContact is when this node was last in touch with a leader: now
// while it leads (Raft steps down a leader out of touch with a quorum for
// LeaderLeaseTimeout), else the later of the time this node was last seen
// leading and the leader's last contact, which is no later than when the
// first request to the leader still unanswered left (contact.go: both
// directions must work). Zero before any.
func (n *Node) LeaderContact() time.Time {
	now := time.Now()
	if n.raft.State() == raft.Leader {
		n.ledAt.Store(now.UnixNano())
		return now
	}
	last := n.raft.LastContact()
	if _, id := n.raft.LeaderWithID(); id != "" {
		if since := n.roundTrips.unansweredSince(id); !since.IsZero() && since.Before(last) {
			last = since
		}
	}
	if led := n.ledAt.Load(); led != 0 && (last.IsZero() || led > last.UnixNano()) {
		return time.Unix(0, led)
	}
	return last
}

// ID is this node's Raft server id.
func (n *Node) ID() string { return string(n.id) }

// orphanLoop runs the orphaned onDisconnect operations while this node
// leads: on every gossip event, leadership change and presenceInterval.
func (n *Node) orphanLoop() {
	defer n.wg.Done()
	tick := time.NewTicker(presenceInterval)
	defer tick.Stop()
	for {
		ch := n.memberEvents.wait()
		if !n.closing.Load() && n.raft.State() == raft.Leader {
			n.runOrphans()
		}
		select {
		case <-n.stop:
			return
		case <-ch:
		case <-tick.C:
		}
	}
}

// runOrphans proposes the run of every orphaned (node, run) pair's
// operations; a pair whose run fails is tried again on the next round.
func (n *Node) runOrphans() {
	held := n.fsm.DisconnectRuns()
	if len(held) == 0 {
		return
	}
	orphans := n.orphans(held)
	for _, h := range orphans {
		var rnd [12]byte
		_, _ = rand.Read(rnd[:])
		for i := range rnd {
			rnd[i] &= 63
		}
		c := fsm.Command{Kind: fsm.CmdDisconnectRun, Holder: h, Now: time.Now().UnixMilli(), Rand: rnd}
		ctx, cancel := context.WithTimeout(context.Background(), n.cfg.WriteTimeout)
		_, err := n.Propose(ctx, c, fsm.AnswerOptions{Silent: true})
		cancel()
		if err != nil {
			if !errors.Is(err, fsm.ErrShuttingDown) {
				n.log.Warn("could not run the onDisconnect operations of a gone node; retrying", "node", h.Node, "run", h.Run, "error", err)
			}
			return
		}
		n.log.Info("ran the onDisconnect operations of a gone node", "node", h.Node, "run", h.Run)
	}
}

// orphans returns the pairs of held whose node run is over: this node's
// earlier runs; a node gossip declares failed or left and this leader has
// not heard from for orphanQuiet, or that advertises
// another run (it restarted); a node gossip does not know that is no
// longer in the Raft configuration (removed). A node gossip does not know
// but the configuration has is left alone: this leader may simply not
// have heard of it yet. Doubt never runs a pair: running a live session's
// operations is the one thing that must not happen.
func (n *Node) orphans(held []fsm.Holder) []fsm.Holder {
	peers := map[raft.ServerID]peer{}
	if n.disco != nil {
		for _, p := range n.disco.Peers() {
			peers[p.ID] = p
		}
	}
	var members map[raft.ServerID]bool
	var out []fsm.Holder
	for _, h := range held {
		id := raft.ServerID(h.Node)
		p, known := peers[id]
		switch {
		case id == n.id:
			if h.Run != n.runID {
				out = append(out, h)
			}
		case known && p.Status == peerAlive:
			if p.Meta.RunID != "" && p.Meta.RunID != h.Run {
				out = append(out, h)
			}
		case known: // failed or left
			if at, ok := n.progress.lastHeard(n.raft.CurrentTerm(), id); ok && time.Since(at) >= orphanQuiet {
				out = append(out, h)
			}
		default:
			if members == nil {
				if members = n.configured(); members == nil {
					return out
				}
			}
			if !members[id] {
				out = append(out, h)
			}
		}
	}
	return out
}

// configured returns the servers of the Raft configuration (nil if it
// cannot be read).
func (n *Node) configured() map[raft.ServerID]bool {
	cf := n.raft.GetConfiguration()
	if cf.Error() != nil {
		return nil
	}
	out := map[raft.ServerID]bool{}
	for _, s := range cf.Configuration().Servers {
		out[s.ID] = true
	}
	return out
}
