package realtime

import (
	"errors"
	"time"

	"github.com/coder/websocket"
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
		if s.outOfTouch() {
			s.closeRegistered()
		}
	}
}

// outOfTouch reports whether this node has been out of touch with a
// leader for FenceAfter.
func (s *Server) outOfTouch() bool {
	return s.cfg.LeaderContact != nil && time.Since(s.cfg.LeaderContact()) > s.cfg.FenceAfter
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
// it answers a request: a node resumed after a pause (SIGSTOP, a VM
// stopped) would otherwise answer what its client sent meanwhile before
// the loop's next check, after the cluster may have run the operations.
func (s *session) fence() {
	if s.cutOff.CompareAndSwap(false, true) {
		s.srv.cfg.Logger.Info("realtime: out of touch with the cluster's leader: closing a connection holding onDisconnect operations", "session", s.id)
		go s.closeWith(websocket.StatusGoingAway, errCutOff)
	}
}
