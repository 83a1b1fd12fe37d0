package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

// errStreamsClosed refuses a stream on a node that is shutting down.
var errStreamsClosed = fmt.Errorf("streams closed: %w", fsm.ErrShuttingDown)

// keepAliveFrame is sent when a stream has been quiet for StreamKeepAlive.
var keepAliveFrame = []byte("event: keep-alive\ndata: null\n\n")

// authRevokedFrame ends a stream whose ID token expired (SPEC §5).
var authRevokedFrame = []byte("event: auth_revoked\ndata: \"credential is no longer valid\"\n\n")

// stream serves GET with Accept: text/event-stream (SPEC §5) on any node:
// the initial put is the value at the path as a read sees it, then every
// change of the applied log that concerns the path, in commit order, from
// this node's own state machine — so a stream on a follower keeps going
// through leader changes. With query parameters the frames are the
// query's window instead (streamquery.go).
func (s *Server) stream(c *gin.Context, rq *request) {
	l := s.openStream(c, rq)
	switch {
	case l == nil:
	case l.detach(c):
		go l.serveDetached() // HTTP/1.1: the connection is the stream's now (streamconn.go)
	default:
		l.run()
	}
}

// streamLoop is an open stream after its first frames: what its wait for
// events needs, and no more (not the value first read, which a later
// write would otherwise keep alive). An HTTP/1.1 stream runs it on a
// goroutine of its own (streamconn.go); others on the handler's
// goroutine, where run's frame is kept small: a goroutine's stack is
// halved at a GC while it uses under a quarter of it, so the frames below
// the wait cost memory per idle stream (docs/PERFORMANCE.md, "Streams").
type streamLoop struct {
	s    *Server
	ctx  context.Context    // the request's, or a detached stream's own: done when the client goes
	stop context.CancelFunc // a detached stream's: ends ctx
	w    gin.ResponseWriter // nil once detached
	rc   *http.ResponseController
	conn net.Conn // the connection a detached stream took over; nil if none
	rq   *request
	sub  *subscriber
	qs   *queryStream // nil without query parameters
	ids  bool         // frames carry "id: <log index>"
	// base is the log index the first frames reflect: events up to it
	// are in them already.
	base      uint64
	keepAlive *time.Timer
	expiry    *time.Timer // the ID token's expiry; nil if it has none
}

// openStream checks a stream request, subscribes it, and sends its status,
// headers and first frames (the initial put, or the events a resuming
// client missed). It returns nil when it answered otherwise (an error) or
// the client went away; then nothing is left to undo.
func (s *Server) openStream(c *gin.Context, rq *request) (l *streamLoop) {
	qs := newQueryStream(rq)
	resume := c.Query("resume")
	if resume != "" && resume != "true" && resume != "false" {
		s.writeError(c, badRequest("resume must be true or false"))
		return nil
	}
	lastID, ids, err := resumeFrom(c.GetHeader("Last-Event-ID"), resume == "true")
	if err != nil {
		s.writeError(c, err)
		return nil
	}
	if qs != nil {
		lastID = 0 // a query stream resumes with a fresh put
	}
	// Subscribe before reading (or with the history, atomically), then
	// skip the events already sent: nothing is missed, nothing sent twice.
	var (
		sub      *subscriber
		missed   []fsm.Event
		replayed bool
		open     bool
	)
	if lastID > 0 {
		sub, missed, replayed, open = s.hub.subscribeSince(rq.nodePath(), s.cfg.StreamBufferBytes, lastID)
	} else {
		sub, open = s.hub.subscribe(rq.nodePath(), s.cfg.StreamBufferBytes)
	}
	if !open {
		s.writeError(c, errStreamsClosed)
		return nil
	}
	l = &streamLoop{s: s, ctx: c.Request.Context(), w: c.Writer, rq: rq, sub: sub, ids: ids}
	started := false
	defer func() {
		if !started {
			l.close()
			l = nil
		}
	}()
	if qs != nil {
		// Registered before the read: every batch after it is captured.
		qs.sub, qs.budget = sub, int64(s.cfg.StreamBufferBytes)
		s.queries.add(qs)
		l.qs = qs
	}
	s.metrics.streamsOpen.Inc()
	var res fsm.ReadResult
	if replayed && rq.id.access != nil {
		// A resumed stream reads nothing, but its reader must still be
		// allowed to.
		if _, err := s.db.Read(l.ctx, fsm.Read{Path: rq.nodePath(), Access: s.readAccess(rq)}); err != nil {
			s.writeError(c, fmt.Errorf("stream %s: %w", rq.nodePath(), err))
			return nil
		}
	}
	if !replayed {
		if res, err = s.db.Read(l.ctx, fsm.Read{Path: rq.nodePath(), Linearizable: rq.opts.linearizable, Access: s.readAccess(rq)}); err != nil {
			s.writeError(c, fmt.Errorf("stream %s: %w", rq.nodePath(), err))
			return nil
		}
	}
	first := putFrame(nil, res.Value)
	if qs != nil {
		if first, err = qs.start(l.ctx, res, s.cfg.StrictIndexes); err != nil {
			s.writeError(c, err)
			return nil
		}
	}
	h := l.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // proxies must not hold frames back
	l.w.WriteHeader(http.StatusOK)
	l.rc = http.NewResponseController(l.w)
	if replayed {
		// The events this client missed, then on as usual.
		l.base = lastID
		for i := range missed {
			for _, f := range framesFor(rq.nodePath(), &missed[i]) {
				if l.write(missed[i].Index, f) != nil {
					return nil
				}
			}
			l.base = missed[i].Index
		}
	} else {
		if l.write(res.Index, first) != nil {
			return nil
		}
		l.base = res.Index
	}
	l.keepAlive = time.NewTimer(s.cfg.StreamKeepAlive)
	if !rq.id.expires.IsZero() {
		l.expiry = time.NewTimer(time.Until(rq.id.expires))
	}
	started = true
	return l
}

// close undoes what openStream set up.
func (l *streamLoop) close() {
	if l.expiry != nil {
		l.expiry.Stop()
	}
	if l.keepAlive != nil {
		l.keepAlive.Stop()
	}
	l.s.metrics.streamsOpen.Dec()
	if l.qs != nil {
		l.s.queries.remove(l.qs)
	}
	l.s.hub.unsubscribe(l.sub)
}

// run sends the stream's events until it ends, then closes it.
func (l *streamLoop) run() {
	defer l.close()
	var expired <-chan time.Time
	if l.expiry != nil {
		expired = l.expiry.C
	}
	for {
		select {
		case <-l.sub.recheck:
			// The rules changed: a reader they no longer allow is cancelled.
			if !l.allowed() {
				l.cancel()
				return
			}
		case <-expired:
			_ = l.write(0, authRevokedFrame)
			return
		case <-l.sub.wake:
			// Read rules may depend on data (root, data): a change that
			// stops the read cancels the stream before it shows anything.
			if l.rq.id.access != nil && !l.allowed() {
				l.cancel()
				return
			}
			if l.deliver() != nil {
				return
			}
			l.keepAlive.Reset(l.s.cfg.StreamKeepAlive)
		case <-l.keepAlive.C:
			if l.write(0, keepAliveFrame) != nil {
				return
			}
			l.keepAlive.Reset(l.s.cfg.StreamKeepAlive)
		case <-l.sub.done:
			l.end()
			return
		case <-l.ctx.Done():
			return
		}
	}
}

// write sends one frame, with its id line when the stream has them.
func (l *streamLoop) write(index uint64, b []byte) error {
	if l.ids && index != 0 {
		b = withID(index, b)
	}
	if l.conn != nil {
		return l.writeChunk(b)
	}
	if _, err := l.w.Write(b); err != nil {
		return err
	}
	return l.rc.Flush()
}

// take returns the frames to send: the hub's events, or for a query
// stream the changes of its window (the hub's frames then only wake it).
func (l *streamLoop) take() ([]frame, error) {
	frames := l.sub.take()
	if l.qs == nil {
		return frames, nil
	}
	return l.qs.frames(l.ctx, l.base)
}

// deliver sends the frames queued since the last wake-up.
func (l *streamLoop) deliver() error {
	frames, err := l.take()
	if err != nil {
		return err
	}
	for _, f := range frames {
		if f.index != 0 && f.index <= l.base {
			continue // the initial put already holds it
		}
		if err := l.write(f.index, f.data); err != nil {
			return err
		}
		l.s.metrics.streamEvents.Inc()
	}
	return nil
}

// end sends whatever was queued before the stream was ended, then the
// cancel frame if it was cancelled (not on shutdown).
func (l *streamLoop) end() {
	frames, err := l.take()
	if err != nil {
		return
	}
	for _, f := range frames {
		if f.index > l.base && l.write(f.index, f.data) != nil {
			return
		}
	}
	if l.sub.reason != "" {
		l.s.metrics.streamsDropped.Inc()
		_ = l.write(0, cancelFrame(l.sub.reason))
	}
}

// allowed reports whether the rules in force on this node's state still
// let the stream's reader read its path.
func (l *streamLoop) allowed() bool {
	_, err := l.s.db.Read(l.ctx, fsm.Read{Path: l.rq.nodePath(), Access: l.s.readAccess(l.rq)})
	return !errors.Is(err, fsm.ErrPermissionDenied)
}

// cancel ends the stream of a reader the rules no longer allow.
func (l *streamLoop) cancel() {
	l.s.metrics.streamsDropped.Inc()
	_ = l.write(0, cancelFrame(tree.MsgPermission))
}

// cancelFrame is `event: cancel` with reason as a JSON string.
func cancelFrame(reason string) []byte {
	b := append([]byte("event: cancel\ndata: "), jsonStringBytes(reason)...)
	return append(b, "\n\n"...)
}

// PublishEvents hands the change events of applied log entries to the
// open streams; the state machine calls it (fsm.FSM.SetEventSink) on its
// apply goroutine, in commit order, right after it installed the state
// that follows them. It never blocks.
func (s *Server) PublishEvents(events []fsm.Event) {
	s.hub.publish(events)
	s.captureQueryStreams(events)
}

// CloseStreams ends every open stream and refuses new ones: a node that
// shuts down lets its clients reconnect elsewhere at once instead of
// holding the graceful shutdown until its deadline. It returns once the
// detached streams (streamconn.go), which net/http's shutdown does not
// wait for, have sent what was queued — within detachedGrace.
func (s *Server) CloseStreams() {
	s.hub.close()
	s.hub.detached.closeAll(detachedGrace)
}

// jsonStringBytes encodes s as a JSON string.
func jsonStringBytes(s string) []byte {
	b, _ := json.Marshal(s) // a string always encodes
	return b
}
