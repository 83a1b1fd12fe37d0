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
		if time.Since(s.cfg.LeaderContact()) > s.cfg.FenceAfter {
			s.closeRegistered()
		}
	}
}

// closeRegistered closes every session that registered onDisconnect
// operations, once each, off the caller's goroutine.
func (s *Server) closeRegistered() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for sess := range s.sessions {
		if sess.registered.Load() && sess.cutOff.CompareAndSwap(false, true) {
			s.cfg.Logger.Info("realtime: out of touch with the cluster's leader: closing a connection holding onDisconnect operations", "session", sess.id)
			go sess.closeWith(websocket.StatusGoingAway, errCutOff)
		}
	}
}
