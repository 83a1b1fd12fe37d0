package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/arbordb/arbor/fsm"
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
	qs := newQueryStream(rq)
	resume := c.Query("resume")
	if resume != "" && resume != "true" && resume != "false" {
		s.writeError(c, badRequest("resume must be true or false"))
		return
	}
	lastID, ids, err := resumeFrom(c.GetHeader("Last-Event-ID"), resume == "true")
	if err != nil {
		s.writeError(c, err)
		return
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
		return
	}
	defer s.hub.unsubscribe(sub)
	if qs != nil {
		// Registered before the read: every batch after it is captured.
		qs.sub, qs.budget = sub, int64(s.cfg.StreamBufferBytes)
		s.queries.add(qs)
		defer s.queries.remove(qs)
	}
	s.metrics.streamsOpen.Inc()
	defer s.metrics.streamsOpen.Dec()
	var res fsm.ReadResult
	if replayed && rq.id.access != nil {
		// A resumed stream reads nothing, but its reader must still be
		// allowed to.
		if _, err := s.db.Read(c.Request.Context(), fsm.Read{Path: rq.nodePath(), Access: s.readAccess(rq)}); err != nil {
			s.writeError(c, fmt.Errorf("stream %s: %w", rq.nodePath(), err))
			return
		}
	}
	if !replayed {
		if res, err = s.db.Read(c.Request.Context(), fsm.Read{Path: rq.nodePath(), Linearizable: rq.opts.linearizable, Access: s.readAccess(rq)}); err != nil {
			s.writeError(c, fmt.Errorf("stream %s: %w", rq.nodePath(), err))
			return
		}
	}
	first := putFrame(nil, res.Value)
	if qs != nil {
		if first, err = qs.start(c.Request.Context(), res, s.cfg.StrictIndexes); err != nil {
			s.writeError(c, err)
			return
		}
	}
	w := c.Writer
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // proxies must not hold frames back
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	write := func(index uint64, b []byte) error {
		if ids && index != 0 {
			b = withID(index, b)
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		return rc.Flush()
	}
	send := func(b []byte) error { return write(0, b) }
	if replayed {
		// The events this client missed, then on as usual.
		res.Index = lastID
		for i := range missed {
			for _, f := range framesFor(rq.nodePath(), &missed[i]) {
				if write(missed[i].Index, f) != nil {
					return
				}
			}
			res.Index = missed[i].Index
		}
	} else if write(res.Index, first) != nil {
		return
	}
	// take returns the frames to send: the hub's events, or for a query
	// stream the changes of its window (the hub's frames then only wake
	// it).
	take := func() ([]frame, error) {
		frames := sub.take()
		if qs == nil {
			return frames, nil
		}
		return qs.frames(c.Request.Context(), res.Index)
	}
	keepAlive := time.NewTimer(s.cfg.StreamKeepAlive)
	defer keepAlive.Stop()
	// allowed reports whether the rules in force on this node's state
	// still let the stream's reader read its path.
	allowed := func() bool {
		_, err := s.db.Read(c.Request.Context(), fsm.Read{Path: rq.nodePath(), Access: s.readAccess(rq)})
		return !errors.Is(err, fsm.ErrPermissionDenied)
	}
	var expired <-chan time.Time
	if !rq.id.expires.IsZero() {
		t := time.NewTimer(time.Until(rq.id.expires))
		defer t.Stop()
		expired = t.C
	}
	for {
		select {
		case <-sub.recheck:
			// The rules changed: a reader they no longer allow is cancelled.
			if !allowed() {
				s.metrics.streamsDropped.Inc()
				_ = send(cancelFrame(fsm.MsgPermission))
				return
			}
		case <-expired:
			_ = send(authRevokedFrame)
			return
		case <-sub.wake:
			// Read rules may depend on data (root, data): a change that
			// stops the read cancels the stream before it shows anything.
			if rq.id.access != nil && !allowed() {
				s.metrics.streamsDropped.Inc()
				_ = send(cancelFrame(fsm.MsgPermission))
				return
			}
			frames, err := take()
			if err != nil {
				return
			}
			for _, f := range frames {
				if f.index != 0 && f.index <= res.Index {
					continue // the initial put already holds it
				}
				if write(f.index, f.data) != nil {
					return
				}
				s.metrics.streamEvents.Inc()
			}
			keepAlive.Reset(s.cfg.StreamKeepAlive)
		case <-keepAlive.C:
			if send(keepAliveFrame) != nil {
				return
			}
			keepAlive.Reset(s.cfg.StreamKeepAlive)
		case <-sub.done:
			// Whatever was queued before the end is still delivered.
			frames, err := take()
			if err != nil {
				return
			}
			for _, f := range frames {
				if f.index > res.Index && write(f.index, f.data) != nil {
					return
				}
			}
			if sub.reason != "" {
				s.metrics.streamsDropped.Inc()
				_ = send(cancelFrame(sub.reason))
			}
			return
		case <-c.Request.Context().Done():
			return
		}
	}
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
// holding the graceful shutdown until its deadline.
func (s *Server) CloseStreams() { s.hub.close() }

// jsonStringBytes encodes s as a JSON string.
func jsonStringBytes(s string) []byte {
	b, _ := json.Marshal(s) // a string always encodes
	return b
}
