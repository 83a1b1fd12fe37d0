package realtime

import (
	"errors"
	"time"
)

// A node cut off from its cluster keeps its clients' connections, but the
// cluster, once it has declared the node gone, runs the onDisconnect
// operations registered on them (cluster/presence.go): the connection
// would outlive its operations. So a node out of touch with a leader for
// Config.FenceAfter, shorter than the cluster takes to declare it gone,
// closes the connections holding operations first. Their SDKs reconnect
// (through another node when the address leads there) and register their
// operations again. The operations themselves stay registered: this node
// runs them once it reaches a leader again (End retries), or the leader
// runs them when it declares this node gone; both after the close.
//
// A node that was stopped (SIGSTOP, a paused container or VM) for that
// long is fenced too: it may hear from the leader again before it has
// applied the run of its operations, and must not serve its clients
// meanwhile. The loop's own ticks tell: a gap of FenceAfter between two
// means the process stood still.

// errCutOff ends a session holding onDisconnect operations on a node out
// of touch with its cluster.
var errCutOff = errors.New("this server lost contact with its cluster, which may run this connection's onDisconnect operations; reconnect")

// fenceLoop checks the node's contact with a leader four times per
// FenceAfter until the server closes.
func (s *Server) fenceLoop() {
	tick := time.NewTicker(s.cfg.FenceAfter / 4)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
		stalled := s.stalled()
		s.ticked.Store(int64(time.Since(s.born)))
		if stalled || s.outOfTouch() {
			s.closeRegistered()
		}
	}
}

// stalled reports whether the fence loop has not run for FenceAfter.
func (s *Server) stalled() bool {
	return time.Since(s.born)-time.Duration(s.ticked.Load()) > s.cfg.FenceAfter
}

// outOfTouch reports whether this node has been out of touch with a
// leader for FenceAfter, or stood still that long.
func (s *Server) outOfTouch() bool {
	return s.cfg.LeaderContact != nil && (s.stalled() || time.Since(s.cfg.LeaderContact()) > s.cfg.FenceAfter)
}

// closeRegistered fences every session that registered onDisconnect
// operations.
func (s *Server) closeRegistered() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for sess := range s.sessions {
		if sess.registered.Load() {
			sess.fence()
		}
	}
}

// fence closes the session for the node's loss of its cluster, once, off
// the caller's goroutine. A session holding operations also checks before
// it answers a request (and answers none once fenced): a node resumed
// after a pause would otherwise answer what its client sent meanwhile
// before the loop's next check, after the cluster may have run the
// operations.
func (s *session) fence() {
	if s.cutOff.CompareAndSwap(false, true) {
		s.srv.cfg.Logger.Info("realtime: out of touch with the cluster's leader: closing a connection holding onDisconnect operations", "session", s.id)
		s.end(errCutOff) // finish closes with going-away
	}
}
