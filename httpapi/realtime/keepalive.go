package realtime

import (
	"context"
	"time"
)

// A client that only listens may never send anything: the SDKs send their
// keep-alive frame ("0") only after 45 s in which nothing went either way,
// so pushes arriving more often than that keep the client silent for good.
// It still answers WebSocket pings (every client library does), so a
// silent client is pinged, and only one that neither sends a message nor
// answers a ping within the idle timeout is taken for gone.

// heard records that the client sent something (a message or a pong).
func (s *session) heard() { s.lastHeard.Store(int64(time.Since(s.started))) }

// quietFor is how long the client has sent nothing.
func (s *session) quietFor() time.Duration {
	return time.Since(s.started) - time.Duration(s.lastHeard.Load())
}

// watchIdle starts the idle watch: a timer, not a goroutine, so an idle
// connection costs no stack for it.
func (s *session) watchIdle() {
	t := time.AfterFunc(time.Hour, s.checkIdle)
	s.idleTimer.Store(t)
	t.Reset(s.srv.cfg.IdleTimeout / 2)
}

// checkIdle runs when the client may have been silent for half the idle
// timeout: it pings a silent client and ends the session if the pong does
// not come within the other half.
func (s *session) checkIdle() {
	half := s.srv.cfg.IdleTimeout / 2
	t := s.idleTimer.Load()
	if s.ctx.Err() != nil {
		return
	}
	if quiet := s.quietFor(); quiet < half {
		t.Reset(half - quiet)
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, half)
	err := s.conn.Ping(ctx)
	cancel()
	switch {
	case s.ctx.Err() != nil:
		return
	case err == nil:
		s.heard()
	case s.quietFor() >= s.srv.cfg.IdleTimeout:
		s.end(errIdle)
		return
	}
	t.Reset(half)
}
