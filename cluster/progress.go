package cluster

import (
	"context"
	"encoding/binary"
	"math"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// Progress is a member's replication progress as the leader sees it. The
// leader asks every other member for its applied index once per
// HeartbeatTimeout (opApplied); a member that does not answer for
// staleProbes of those rounds is stale. Followers show the leader's view
// (opProgress), so every node serves the same picture.
type Progress struct {
	// AppliedIndex is the last log index the member reported applied
	// (absent until it has answered this leader).
	AppliedIndex *uint64 `json:"applied_index,omitempty"`
	// Lag is how far AppliedIndex was behind the leader's last log index
	// when the member reported it.
	Lag *uint64 `json:"lag,omitempty"`
	// LastContactMS is how many milliseconds ago the leader last heard
	// from the member (absent for the leader itself, and for a member it
	// has not heard from since it became leader).
	LastContactMS *int64 `json:"last_contact_ms,omitempty"`
	// Stale: the leader has not heard from the member for staleProbes
	// probe rounds (or ever, that long into its leadership).
	Stale bool `json:"stale"`
}

// staleProbes is how many probe rounds without an answer make a member
// stale: one late answer on a busy machine is not a failure.
const staleProbes = 3

// progressProbeBound bounds how long a follower serving /status waits
// for the leader's view: status must stay quick even when the leader is
// unreachable (the members then show no progress).
const progressProbeBound = 300 * time.Millisecond

// heard is what the leader last heard from one member.
type heard struct {
	applied uint64
	lag     uint64
	known   bool // applied and lag were reported (an older member answers without them)
	at      time.Time
}

// progressBook is the leader's record of its members' answers, kept for
// the current leadership term only.
type progressBook struct {
	mu       sync.Mutex
	term     uint64    // the term these records belong to (0: not leading)
	since    time.Time // when this node started leading in term
	heard    map[raft.ServerID]heard
	inflight map[raft.ServerID]bool
}

// lead starts a new record when term is not the one recorded.
func (b *progressBook) lead(term uint64, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.term == term {
		return
	}
	b.term, b.since = term, now
	b.heard = map[raft.ServerID]heard{}
	b.inflight = map[raft.ServerID]bool{}
}

// reset forgets everything: this node no longer leads.
func (b *progressBook) reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.term, b.heard, b.inflight = 0, nil, nil
}

// begin marks a probe of id as running; false if one still is.
func (b *progressBook) begin(id raft.ServerID) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.inflight == nil || b.inflight[id] {
		return false
	}
	b.inflight[id] = true
	return true
}

// end records a probe's result in term (ok: the member answered).
func (b *progressBook) end(term uint64, id raft.ServerID, h heard, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.term != term {
		return // leadership moved on meanwhile
	}
	delete(b.inflight, id)
	if ok {
		b.heard[id] = h
	}
}

// lastHeard is when the leader last heard from id in term, or began
// leading if it has not yet; ok is false when it keeps no record of term.
func (b *progressBook) lastHeard(term uint64, id raft.ServerID) (at time.Time, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.term == 0 || b.term != term {
		return time.Time{}, false
	}
	if h, heard := b.heard[id]; heard && h.at.After(b.since) {
		return h.at, true
	}
	return b.since, true
}

// view is the progress of the members in servers at now, stale past
// staleAfter; the leader's own entry comes from self.
func (b *progressBook) view(servers []raft.Server, leader raft.ServerID, self heard, now time.Time, staleAfter time.Duration) map[raft.ServerID]Progress {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[raft.ServerID]Progress, len(servers))
	for _, s := range servers {
		if s.ID == leader {
			out[s.ID] = Progress{AppliedIndex: &self.applied, Lag: &self.lag}
			continue
		}
		var p Progress
		h, ok := b.heard[s.ID]
		if ok {
			age := now.Sub(h.at)
			ms := age.Milliseconds()
			p.LastContactMS = &ms
			p.Stale = age > staleAfter
			if h.known {
				p.AppliedIndex, p.Lag = &h.applied, &h.lag
			}
		} else {
			p.Stale = now.Sub(b.since) > staleAfter
		}
		out[s.ID] = p
	}
	return out
}

// probeEvery is the pause between the leader's probe rounds.
func (n *Node) probeEvery() time.Duration { return n.cfg.Timing.HeartbeatTimeout }

// progressLoop runs on every node; while it leads, it asks each other
// member of the configuration for its applied index once per probeEvery,
// each member on its own so a dead one delays no other.
func (n *Node) progressLoop() {
	defer n.wg.Done()
	// Probes in flight end with the loop: a probe of a dead member must
	// not hold up Shutdown.
	base, cancelProbes := context.WithCancel(context.Background())
	defer cancelProbes()
	tick := time.NewTicker(n.probeEvery())
	defer tick.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-tick.C:
		}
		if n.closing.Load() || n.raft.State() != raft.Leader {
			n.progress.reset()
			continue
		}
		term := n.raft.CurrentTerm()
		n.progress.lead(term, time.Now())
		ctx, cancel := context.WithTimeout(context.Background(), n.probeEvery())
		cf := n.raft.GetConfiguration()
		err := waitFuture(ctx, cf)
		cancel()
		if err != nil {
			continue
		}
		for _, s := range cf.Configuration().Servers {
			if s.ID == n.id || !n.progress.begin(s.ID) {
				continue
			}
			n.wg.Add(1)
			go n.probe(base, term, s)
		}
	}
}

// probe asks one member for its applied index and records the answer.
func (n *Node) probe(base context.Context, term uint64, s raft.Server) {
	defer n.wg.Done()
	ctx, cancel := context.WithTimeout(base, n.probeEvery())
	defer cancel()
	reply, err := n.net.RoundTrip(ctx, s.Address, opApplied, nil)
	var h heard
	if err == nil {
		h.at = time.Now()
		r, derr := decodeReply(reply)
		if derr == nil {
			h.applied = r.uvarint()
			if r.done() == nil {
				h.known = true
				if last := n.raft.LastIndex(); last > h.applied {
					h.lag = last - h.applied
				}
			}
		}
		// An error reply (an older member without opApplied) still
		// proves contact.
	}
	n.progress.end(term, s.ID, h, err == nil)
}

// selfProgress is this node's own applied index and lag behind its last
// log index (for the leader: the figures its members are measured by).
func (n *Node) selfProgress() heard {
	h := heard{applied: n.raft.AppliedIndex(), known: true}
	if last := n.raft.LastIndex(); last > h.applied {
		h.lag = last - h.applied
	}
	return h
}

// leaderProgress is the leader's view of the members in servers.
func (n *Node) leaderProgress(servers []raft.Server) map[raft.ServerID]Progress {
	return n.progress.view(servers, n.id, n.selfProgress(), time.Now(), staleProbes*n.probeEvery())
}

// memberProgress fills in each member's progress from the leader's view
// (this node's own if it leads, else asked of the leader) and returns the
// leader's id, or "" when no leader answered in time.
func (n *Node) memberProgress(ctx context.Context, servers []raft.Server, members []Member) string {
	addr, leader := n.raft.LeaderWithID()
	var view map[raft.ServerID]Progress
	switch {
	case leader == "":
		return ""
	case leader == n.id && n.raft.State() == raft.Leader:
		view = n.leaderProgress(servers)
	default:
		ctx, cancel := context.WithTimeout(ctx, progressProbeBound)
		defer cancel()
		reply, err := n.net.RoundTrip(ctx, addr, opProgress, nil)
		if err == nil {
			view, err = decodeProgress(reply)
		}
		if err != nil {
			n.log.Debug("members' progress from the leader", "leader", string(leader), "error", err)
			return ""
		}
	}
	for i := range members {
		if p, ok := view[raft.ServerID(members[i].ID)]; ok {
			members[i].Progress = &p
		}
	}
	return string(leader)
}

// handleProgress is the leader's answer to opProgress: its view of every
// member of the configuration.
func (n *Node) handleProgress(ctx context.Context) []byte {
	if err := n.leading(); err != nil {
		return encodeError(err)
	}
	cf := n.raft.GetConfiguration()
	if err := waitFuture(ctx, cf); err != nil {
		return encodeError(raftError("progress", err, true))
	}
	return encodeProgress(n.leaderProgress(cf.Configuration().Servers))
}

// Progress flags on the wire: which of a member's figures are present.
const (
	progressApplied byte = 1 << iota // applied index and lag follow
	progressContact                  // last contact (milliseconds ago) follows
	progressStale
)

// encodeProgress is opProgress's reply: a count, then per member its id,
// flags and the figures the flags announce.
func encodeProgress(view map[raft.ServerID]Progress) []byte {
	b := binary.AppendUvarint([]byte{replyOK}, uint64(len(view)))
	for id, p := range view {
		b = appendString(b, string(id))
		var flags byte
		if p.AppliedIndex != nil && p.Lag != nil {
			flags |= progressApplied
		}
		if p.LastContactMS != nil {
			flags |= progressContact
		}
		if p.Stale {
			flags |= progressStale
		}
		b = append(b, flags)
		if flags&progressApplied != 0 {
			b = binary.AppendUvarint(b, *p.AppliedIndex)
			b = binary.AppendUvarint(b, *p.Lag)
		}
		if flags&progressContact != 0 {
			b = binary.AppendUvarint(b, uint64(max(*p.LastContactMS, 0)))
		}
	}
	return b
}

// decodeProgress reads encodeProgress's reply (or the error it carries).
func decodeProgress(reply []byte) (map[raft.ServerID]Progress, error) {
	r, err := decodeReply(reply)
	if err != nil {
		return nil, err
	}
	count := r.count()
	view := make(map[raft.ServerID]Progress, count)
	for range count {
		id := r.string()
		flags := r.byte()
		p := Progress{Stale: flags&progressStale != 0}
		if flags&progressApplied != 0 {
			applied, lag := r.uvarint(), r.uvarint()
			p.AppliedIndex, p.Lag = &applied, &lag
		}
		if flags&progressContact != 0 {
			ms := r.uvarint()
			if ms > math.MaxInt64 {
				r.fail("last contact out of range")
			}
			contact := int64(ms)
			p.LastContactMS = &contact
		}
		if r.err != nil {
			break
		}
		view[raft.ServerID(id)] = p
	}
	return view, r.done()
}
