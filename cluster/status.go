package cluster

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/raft"
)

// Status is this node's view of the cluster, as served by /status.
type Status struct {
	NodeID        string    `json:"node_id"`
	Address       string    `json:"address"`
	Role          string    `json:"role"`
	Leader        string    `json:"leader"`
	LeaderAddress string    `json:"leader_address"`
	Term          uint64    `json:"term"`
	CommitIndex   uint64    `json:"commit_index"`
	AppliedIndex  uint64    `json:"applied_index"`
	FSMIndex      uint64    `json:"fsm_index"`
	LastLogIndex  uint64    `json:"last_log_index"`
	Ready         bool      `json:"ready"`
	Health        string    `json:"health"`
	Members       []Member  `json:"members"`
	Versions      Versions  `json:"versions"`
	Snapshot      *Snapshot `json:"last_snapshot,omitempty"`
	// SnapshotsInstalled counts snapshots the leader sent this node since
	// it started (it had fallen too far behind for the log).
	SnapshotsInstalled uint64 `json:"snapshots_installed"`
	// Forwarded counts writes this node forwarded to a leader.
	Forwarded uint64 `json:"forwarded_writes"`
	// Raft holds the essentials of raft.Stats, as Raft spells them.
	Raft map[string]string `json:"raft"`
	// ProgressFrom is the leader whose view the members' Progress is
	// (absent when no leader answered in time).
	ProgressFrom string `json:"progress_from,omitempty"`
}

// Member is one server of the Raft configuration, or a node gossip has
// seen that is not (yet) in it (Suffrage "none").
type Member struct {
	ID       string `json:"id"`
	Address  string `json:"address"`
	Suffrage string `json:"suffrage"`
	Leader   bool   `json:"leader"`
	Self     bool   `json:"self"`
	// Health is what gossip says: "alive", "failed" (stopped answering),
	// "left" (stopped gracefully) or "unknown" (gossip has not seen it,
	// or discovery is off).
	Health string `json:"health"`
	// HealthSince is when Health last changed, as far as this node saw.
	HealthSince   time.Time `json:"health_since,omitzero"`
	GossipAddress string    `json:"gossip_address,omitempty"`
	// Versions are the formats the member's build applies, as it
	// advertises them over gossip (unknown while gossip has not seen it).
	Versions *Versions `json:"versions,omitempty"`
	// CatchingUp: the member started without Raft state (new, or its
	// disk was lost) and has not caught up yet; it does not vote.
	CatchingUp bool `json:"catching_up,omitempty"`
	// Progress is the member's applied index, lag and last contact as the
	// leader sees them (absent when no leader answered in time).
	Progress *Progress `json:"progress,omitempty"`
}

// Versions are the formats a node writes (and the newest it can apply),
// and the release and commit of its build when it advertises them.
type Versions struct {
	EntryFormat    int    `json:"entry_format"`
	SnapshotFormat int    `json:"snapshot_format"`
	Release        string `json:"release,omitempty"`
	Commit         string `json:"commit,omitempty"`
}

// Snapshot describes the last snapshot this node wrote.
type Snapshot struct {
	Index    uint64    `json:"index"`
	Term     uint64    `json:"term"`
	Size     int64     `json:"size_bytes,omitzero"`
	Duration string    `json:"duration,omitzero"`
	At       time.Time `json:"at,omitzero"`
}

// localVersions are the formats and release of this build.
func (n *Node) localVersions() Versions {
	return Versions{EntryFormat: n.formats.entry, SnapshotFormat: n.formats.snapshot,
		Release: n.cfg.Release, Commit: n.cfg.Commit}
}

// statsKeys are the raft.Stats entries worth showing an operator.
var statsKeys = []string{"state", "term", "last_log_index", "last_log_term", "commit_index",
	"applied_index", "fsm_pending", "last_snapshot_index", "last_snapshot_term",
	"last_contact", "num_peers", "protocol_version", "latest_configuration_index"}

// Status returns a *Status (JSON-ready). It fails only when ctx ends before
// Raft reports its configuration.
func (n *Node) Status(ctx context.Context) (any, error) {
	cf := n.raft.GetConfiguration()
	if err := waitFuture(ctx, cf); err != nil {
		return nil, raftError("status", err, true)
	}
	leaderAddr, leaderID := n.raft.LeaderWithID()
	st := &Status{
		NodeID:        string(n.id),
		Address:       string(n.addr),
		Role:          role(n.raft.State()),
		Leader:        string(leaderID),
		LeaderAddress: string(leaderAddr),
		Term:          n.raft.CurrentTerm(),
		CommitIndex:   n.raft.CommitIndex(),
		AppliedIndex:  n.raft.AppliedIndex(),
		FSMIndex:      n.fsm.AppliedIndex(),
		LastLogIndex:  n.raft.LastIndex(),
		Versions:      n.localVersions(),
		Raft:          map[string]string{},

		SnapshotsInstalled: n.rfsm.installs.Load(),
		Forwarded:          n.forwarded.Load(),
		Health:             "ok",
	}
	rctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond) // Status must stay quick
	defer cancel()
	if err := n.Ready(rctx); err != nil {
		st.Health = err.Error()
	} else {
		st.Ready = true
	}
	st.Members = n.members(cf.Configuration(), leaderID)
	st.ProgressFrom = n.memberProgress(ctx, cf.Configuration().Servers, st.Members)
	stats := n.raft.Stats()
	for _, k := range statsKeys {
		if v, ok := stats[k]; ok {
			st.Raft[k] = v
		}
	}
	if last := n.snaps.lastSnapshot(); !last.At.IsZero() {
		st.Snapshot = &Snapshot{Index: last.Index, Term: last.Term, Size: last.Size,
			Duration: last.Duration.String(), At: last.At}
	} else if idx, err := strconv.ParseUint(stats["last_snapshot_index"], 10, 64); err == nil && idx > 0 {
		// Taken before this process started: only the index is known.
		term, _ := strconv.ParseUint(stats["last_snapshot_term"], 10, 64)
		st.Snapshot = &Snapshot{Index: idx, Term: term}
	}
	return st, nil
}

// members merges the Raft configuration with what gossip knows.
func (n *Node) members(conf raft.Configuration, leaderID raft.ServerID) []Member {
	peers := map[raft.ServerID]peer{}
	if n.disco != nil {
		for _, p := range n.disco.Peers() {
			peers[p.ID] = p
		}
	}
	describe := func(m *Member, p peer, ok bool) {
		switch {
		case m.Self:
			m.Health = peerAlive.String()
			v := n.localVersions()
			m.Versions = &v
			m.CatchingUp = n.catchingUp.Load()
		case ok:
			m.Health, m.HealthSince, m.GossipAddress = p.Status.String(), p.Since, p.GossipAddr
			m.CatchingUp = p.Meta.CatchingUp
			if p.Meta.EntryFormat != 0 {
				m.Versions = &Versions{EntryFormat: p.Meta.EntryFormat, SnapshotFormat: p.Meta.SnapshotFormat,
					Release: p.Meta.Release, Commit: p.Meta.Commit}
			}
		default:
			m.Health = "unknown"
		}
		if m.Self && ok {
			m.GossipAddress = p.GossipAddr
		}
	}
	var out []Member
	for _, s := range conf.Servers {
		m := Member{ID: string(s.ID), Address: string(s.Address), Suffrage: s.Suffrage.String(),
			Leader: s.ID == leaderID, Self: s.ID == n.id}
		p, ok := peers[s.ID]
		describe(&m, p, ok)
		delete(peers, s.ID)
		out = append(out, m)
	}
	for _, p := range peers {
		m := Member{ID: string(p.ID), Address: string(p.Meta.RaftAddr), Suffrage: "none", Self: p.ID == n.id}
		describe(&m, p, true)
		out = append(out, m)
	}
	slices.SortFunc(out[len(conf.Servers):], func(a, b Member) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Members returns the cluster's members as /status lists them (JSON-ready).
func (n *Node) Members(ctx context.Context) (any, error) {
	cf := n.raft.GetConfiguration()
	if err := waitFuture(ctx, cf); err != nil {
		return nil, raftError("members", err, true)
	}
	_, leaderID := n.raft.LeaderWithID()
	ms := n.members(cf.Configuration(), leaderID)
	n.memberProgress(ctx, cf.Configuration().Servers, ms)
	return ms, nil
}

// role names a Raft state for humans ("leader", "follower", ...).
func role(s raft.RaftState) string {
	switch s {
	case raft.Leader:
		return "leader"
	case raft.Follower:
		return "follower"
	case raft.Candidate:
		return "candidate"
	default:
		return "shutdown"
	}
}
