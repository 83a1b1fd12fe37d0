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
// the client went away, having undone whatever it had set up.
func (s *Server) openStream(c *gin.Context, rq *request) *streamLoop {
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
	l := &streamLoop{s: s, ctx: c.Request.Context(), w: c.Writer, rq: rq, ids: ids, qs: newQueryStream(rq)}
	if l.qs != nil {
		l.qs.key = queryKey(rq.path, c.Request.URL.Query())
	}
	if l.qs != nil {
		lastID = 0 // a query stream resumes with a fresh put
	}
	if err := l.open(lastID); err != nil {
		l.close()
		if !c.Writer.Written() {
			s.writeError(c, err)
		}
		return nil
	}
	return l
}

// open subscribes the stream and sends its first frames. Whatever it set
// up before failing, close undoes.
func (l *streamLoop) open(lastID uint64) error {
	s, rq := l.s, l.rq
	var judge func() (bool, bool)
	if rq.id.access != nil {
		judge = l.judge
	}
	// Subscribe before reading (or with the history, atomically), then
	// skip the events already sent: nothing is missed, nothing sent twice.
	sub := newSubscriber(rq.nodePath(), s.cfg.StreamBufferBytes, judge)
	sub.dropped = s.metrics.streamsDropped
	var (
		missed    []fsm.Event
		inHistory bool
		rulesAt   uint64
		open      bool
	)
	if lastID > 0 {
		missed, inHistory, rulesAt, open = s.hub.subscribeSince(sub, lastID)
	} else {
		open = s.hub.subscribe(sub)
	}
	if !open {
		return errStreamsClosed
	}
	l.sub = sub
	s.metrics.streamsOpen.Inc()
	// A key withdrawn since the request was authenticated signalled only
	// the streams subscribed then.
	if !s.streamCredentialValid(rq) {
		return errBadToken
	}
	if l.qs != nil {
		// Registered before the read: every batch after it is captured.
		l.qs.sub, l.qs.budget, l.qs.cpu = sub, int64(s.cfg.StreamBufferBytes), s.render.cpu
		s.queries.add(l.qs)
	}
	res, err := s.db.Read(l.ctx, fsm.Read{Path: rq.nodePath(), Linearizable: rq.opts.linearizable, Access: s.readAccess(rq), Watch: true})
	if err != nil {
		return fmt.Errorf("stream %s: %w", rq.nodePath(), err)
	}
	s.hub.settle(sub, res.AccessFixed, res.Index)
	replay := lastID > 0 && replayable(lastID, missed, inHistory, rulesAt, res)
	var first []byte
	if l.qs != nil {
		if first, err = l.qs.start(l.ctx, res, s.cfg.StrictIndexes); err != nil {
			return err
		}
	}
	var release func()
	if !replay && l.qs == nil && res.Value.Size() >= s.render.streamFrom {
		if release, err = s.reserveRender(l.ctx, res.Value.Size()); err != nil {
			return err
		}
		defer release()
	}
	h := l.w.Header()
	h.Set("Content-Type", eventStreamContentType)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // proxies must not hold frames back
	l.w.WriteHeader(http.StatusOK)
	l.rc = http.NewResponseController(l.w)
	rc := l.rc
	sub.cut.Store(func() { _ = rc.SetWriteDeadline(time.Now()) })
	switch {
	case replay:
		// The events this client missed, then on as usual.
		l.base = lastID
		for i := range missed {
			frames := framesFor(rq.nodePath(), &missed[i])
			l.armDeadline(framesSize(frames))
			for _, f := range frames {
				if err := l.write(missed[i].Index, f); err != nil {
					return err
				}
			}
			l.base = missed[i].Index
		}
	case first != nil:
		l.armDeadline(len(first))
		if err := l.write(res.Index, first); err != nil {
			return err
		}
		l.base = res.Index
	default:
		if err := l.sendPut(res.Index, res.Value); err != nil {
			return err
		}
		l.base = res.Index
	}
	l.disarm()
	l.keepAlive = time.NewTimer(s.cfg.StreamKeepAlive)
	if !rq.id.expires.IsZero() {
		l.expiry = time.NewTimer(time.Until(rq.id.expires))
	}
	return nil
}

// eventStreamContentType announces UTF-8, as Firebase does: clients that
// honour the charset would otherwise decode the frames as Latin-1.
const eventStreamContentType = "text/event-stream; charset=utf-8"

// replayLimit bounds the values a resume replays: beyond it a fresh put,
// rendered within the render budget, costs the node no more.
const replayLimit = renderSmall

// replayable reports whether a stream resuming after lastID may be sent
// the events it missed instead of a fresh put. A replayed event must be
// one its reader could read in the state right after it, under the rules
// in force then; the history keeps no states, so replay is only for a
// reader whose permission is fixed (it depends on neither the data nor
// the time) under rules unchanged since lastID. The history must reach
// back to lastID, lastID must not be ahead of the state read, and the
// replay must be small.
func replayable(lastID uint64, missed []fsm.Event, inHistory bool, rulesAt uint64, res fsm.ReadResult) bool {
	if !inHistory || !res.AccessFixed || rulesAt > lastID || lastID > res.Index {
		return false
	}
	var size int64
	for i := range missed {
		if size += eventBytes(&missed[i]); size > replayLimit {
			return false
		}
	}
	return true
}

// framesSize is the bytes of frames.
func framesSize(frames [][]byte) int {
	n := 0
	for _, f := range frames {
		n += len(f)
	}
	return n
}

// close undoes what open set up; it may be called after open failed
// part-way.
func (l *streamLoop) close() {
	if l.expiry != nil {
		l.expiry.Stop()
	}
	if l.keepAlive != nil {
		l.keepAlive.Stop()
	}
	if l.sub == nil {
		return
	}
	l.s.metrics.streamsOpen.Dec()
	if l.qs != nil && l.qs.sub != nil {
		l.s.queries.remove(l.qs)
	}
	l.s.hub.unsubscribe(l.sub)
	l.sub.finish("")
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
			// The trusted keys changed: a stream whose token they no
			// longer verify ends.
			if !l.s.streamCredentialValid(l.rq) {
				l.armDeadline(len(authRevokedFrame))
				_ = l.write(0, authRevokedFrame)
				return
			}
		case <-expired:
			l.armDeadline(len(authRevokedFrame))
			_ = l.write(0, authRevokedFrame)
			return
		case <-l.sub.wake:
			// The hub judged the reader for every batch it queued (the
			// top of streamhub.go).
			if l.deliver() != nil {
				return
			}
			l.disarm()
			l.keepAlive.Reset(l.s.cfg.StreamKeepAlive)
		case <-l.keepAlive.C:
			l.armDeadline(len(keepAliveFrame))
			if l.write(0, keepAliveFrame) != nil {
				return
			}
			l.disarm()
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
	if err := l.writeRaw(b); err != nil || l.conn != nil {
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

// deliver sends the frames queued since the last wake-up, within the
// write deadline of their size.
func (l *streamLoop) deliver() error {
	frames, err := l.take()
	if err != nil {
		return err
	}
	return l.send(frames)
}

// send writes the frames after base, within one deadline for them all.
func (l *streamLoop) send(frames []frame) error {
	size := 0
	for _, f := range frames {
		size += f.size()
	}
	l.armDeadline(size)
	for _, f := range frames {
		if f.index != 0 && f.index <= l.base {
			continue // the initial put already holds it
		}
		if err := l.write(f.index, f.bytes()); err != nil {
			return err
		}
		l.s.metrics.streamEvents.Inc()
	}
	return nil
}

// end sends whatever was queued before the stream was ended, then the
// cancel frame if it was cancelled (not on shutdown). A stream that fell
// behind gets the cancel alone: its client must start over anyway.
func (l *streamLoop) end() {
	if l.sub.reason != msgTooSlow {
		frames, err := l.take()
		if err != nil || l.send(frames) != nil {
			return
		}
	}
	if l.sub.reason != "" {
		if l.sub.reason != msgTooSlow { // counted when the hub decided it
			l.s.metrics.streamsDropped.Inc()
		}
		f := cancelFrame(l.sub.reason)
		l.armDeadline(len(f))
		_ = l.write(0, f)
	}
}

// judge reads the stream's location as its reader, in the node's current
// state (the hub calls it while that is the state after a batch).
func (l *streamLoop) judge() (allowed, fixed bool) {
	res, err := l.s.db.Read(context.Background(), fsm.Read{Path: l.rq.nodePath(), Access: l.s.readAccess(l.rq), Watch: true})
	return !errors.Is(err, fsm.ErrPermissionDenied), res.AccessFixed
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
func (s *Server) PublishEvents(applied uint64, events []fsm.Event) {
	events = s.disconnects.withoutDisconnectEvents(events)
	s.hub.publish(applied, events)
	s.captureQueryStreams(events)
}

// CloseStreams ends every open stream and refuses new ones: a node that
// shuts down lets its clients reconnect elsewhere at once instead of
// holding the graceful shutdown until its deadline. It returns once the
// detached streams (streamconn.go), which net/http's shutdown does not
// wait for, have sent what was queued — within detachedGrace.
func (s *Server) CloseStreams() {
	s.rt.Close()
	s.hub.close()
	s.hub.detached.closeAll(detachedGrace)
}

// jsonStringBytes encodes s as a JSON string.
func jsonStringBytes(s string) []byte {
	b, _ := json.Marshal(s) // a string always encodes
	return b
}
