// Package watch runs the chaos run's stream watchers and judges what
// they saw. Each watcher keeps one resumable event stream (SPEC §5) open
// on the root of the database, moving from node to node — when its node
// dies, hangs or ends the stream, and every MaxAge on purpose — and
// reconnects with Last-Event-ID so that no event is missed. It applies
// every frame to its own copy of the tree and records, per key, each
// change with its log index. Check then holds those changes against the
// history: every value seen was written by an operation that did not
// certainly fail, values follow commit order and never go back, and every
// committed write was delivered unless a put at "/" legitimately
// coalesced it.
package watch

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/arbordb/arbor/cmd/internal/client"
)

// Config describes the watchers of a run.
type Config struct {
	Watchers  int
	Endpoints []client.Endpoint
	CA        *x509.CertPool
	Secret    string // admin secret, sent as a Bearer token
	// Idle: a stream that delivers no frame, keep-alives included, for
	// this long is given up for the next node (the nodes run with a
	// shorter --stream-keepalive). A paused node's stream goes quiet.
	Idle time.Duration
	// MaxAge: a stream this old is closed and reopened on the next node
	// with Last-Event-ID, so resumes happen without faults too.
	MaxAge time.Duration
	// Clock is the history's clock (ns since the workload started).
	Clock func() int64
}

// Bounds of a watcher's loops: they end with their context, and these
// cap them in count whatever happens.
const (
	maxConnects  = 100_000
	maxFrames    = 1 << 26
	retryPause   = 250 * time.Millisecond
	headerWait   = 10 * time.Second
	maxErrorBody = 4 << 10
)

// Watcher is one stream watcher.
type Watcher struct {
	id     int
	cfg    Config
	https  map[string]*http.Client
	spread *spread // shared by the watchers of a Set

	mu      sync.Mutex
	rep     replica
	rec     Record
	started bool // a first put arrived
}

// newWatcher returns watcher id, with its own connections.
func newWatcher(id int, cfg Config, sp *spread) *Watcher {
	w := &Watcher{id: id, cfg: cfg, https: map[string]*http.Client{}, spread: sp, rec: Record{Watcher: id}}
	for _, ep := range cfg.Endpoints {
		tr := &http.Transport{
			TLSClientConfig:       &tls.Config{RootCAs: cfg.CA, ServerName: ep.Node, MinVersion: tls.VersionTLS12},
			DialContext:           (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
			TLSHandshakeTimeout:   3 * time.Second,
			ResponseHeaderTimeout: headerWait,
			// Every stream gets a new connection: one to a killed node
			// must not be reused.
			DisableKeepAlives: true,
		}
		w.https[ep.Node] = &http.Client{Transport: tr} // no timeout: a stream lasts
	}
	return w
}

// run keeps a stream open until ctx ends, moving after each one to the
// next node no other watcher streams from (spread).
func (w *Watcher) run(ctx context.Context) {
	nodes := make([]string, len(w.cfg.Endpoints))
	for i, ep := range w.cfg.Endpoints {
		nodes[i] = ep.Node
	}
	cur := w.id % len(nodes)
	// Each watcher rotates at its own pace (MaxAge to twice that), so
	// watchers that reconnected together part again.
	watchers := time.Duration(max(w.cfg.Watchers, 1))
	for n := 0; n < maxConnects && ctx.Err() == nil; n++ {
		age := w.cfg.MaxAge * (watchers + time.Duration(w.id)) / watchers
		if n == 0 {
			age = w.cfg.MaxAge * time.Duration(w.id+1) / watchers
		}
		opened := w.stream(ctx, w.cfg.Endpoints[cur], age)
		cur = w.spread.next(w.id, nodes, cur)
		if !opened {
			pause(ctx, retryPause)
		}
	}
}

// stream opens one stream on ep and follows it until it ends; false when
// none opened.
func (w *Watcher) stream(ctx context.Context, ep client.Endpoint, age time.Duration) bool {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Claimed from the attempt on, so that watchers reconnecting at once
	// (after a kill-all) do not all pick the first node back.
	w.spread.set(w.id, ep.Node)
	defer w.spread.set(w.id, "")
	w.mu.Lock()
	last := w.rec.Last
	w.mu.Unlock()
	body := w.connect(sctx, ep, last)
	if body == nil {
		w.failed()
		return false
	}
	defer body.Close()
	st := &Stream{Node: ep.Node, Opened: w.cfg.Clock(), LastEventID: last, How: "quiet"}
	if last == 0 {
		st.How = "initial"
	}
	st.End = w.follow(ctx, cancel, st, body, age)
	st.Closed = w.cfg.Clock()
	w.mu.Lock()
	w.rec.Streams = append(w.rec.Streams, *st)
	w.mu.Unlock()
	return true
}

// connect asks ep for a resumable stream of the root after last (0:
// from the start) and returns its body, or nil when none opened; an
// answer other than a stream or a 503 is a problem.
func (w *Watcher) connect(ctx context.Context, ep client.Endpoint, last uint64) io.ReadCloser {
	req, err := http.NewRequestWithContext(ctx, "GET", ep.URL("/.json?resume=true&consistency=linearizable"), nil)
	if err != nil {
		w.problem("request: %v", err)
		return nil
	}
	req.Header.Set("Accept", "text/event-stream")
	if w.cfg.Secret != "" {
		req.Header.Set("Authorization", "Bearer "+w.cfg.Secret)
	}
	if last > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatUint(last, 10))
	}
	resp, err := w.https[ep.Node].Do(req)
	if err != nil {
		return nil // refused, reset, timed out: the node is down or hangs
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			w.problem("%s answered a stream with %d: %s", ep.Node, resp.StatusCode, strings.TrimSpace(string(body)))
		}
		return nil
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		resp.Body.Close()
		w.problem("%s answered a stream with Content-Type %q", ep.Node, ct)
		return nil
	}
	return resp.Body
}

// follow reads the frames of body until the stream ends — the node closes
// it or fails, it is quiet for Idle, it reaches age, ctx ends — and says
// why it ended. cancel ends the request.
func (w *Watcher) follow(ctx context.Context, cancel context.CancelFunc, st *Stream, body io.Reader, age time.Duration) string {
	var (
		mu  sync.Mutex
		cut string // why a timer cut the stream
	)
	stop := func(why string) {
		mu.Lock()
		if cut == "" {
			cut = why
		}
		mu.Unlock()
		cancel()
	}
	idle := time.AfterFunc(w.cfg.Idle, func() { stop("idle") })
	defer idle.Stop()
	rotate := time.AfterFunc(age, func() { stop("rotated") })
	defer rotate.Stop()

	rd := NewReader(body)
	why := "too many frames"
	for range maxFrames {
		f, err := rd.Next()
		if err != nil {
			why = endReason(err, ctx)
			if errors.Is(err, ErrFrame) {
				w.problem("%s: %v", st.Node, err)
			}
			break
		}
		idle.Reset(w.cfg.Idle)
		if why = w.frame(st, f); why != "" {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if cut != "" && ctx.Err() == nil {
		return cut
	}
	return why
}

// endReason names how a stream's reading ended.
func endReason(err error, ctx context.Context) string {
	switch {
	case ctx.Err() != nil:
		return "stopped"
	case errors.Is(err, io.EOF):
		return "eof"
	case errors.Is(err, ErrFrame):
		return "malformed"
	}
	return "error: " + err.Error()
}

// frame handles one frame; a non-empty result ends the stream.
func (w *Watcher) frame(st *Stream, f Frame) string {
	switch f.Event {
	case EventKeepAlive:
		st.KeepAlives++
		if string(f.Data) != "null" {
			w.problem("%s: keep-alive with data %.60q", st.Node, f.Data)
		}
		return ""
	case EventCancel:
		var reason string
		if err := json.Unmarshal(f.Data, &reason); err != nil {
			w.problem("%s: cancel with data %.60q", st.Node, f.Data)
		}
		// A subscriber too slow to keep up is cancelled (SPEC §5); the
		// admin may read everything, so no other reason is legal.
		if !strings.HasPrefix(reason, "Too slow") {
			w.problem("%s: stream cancelled: %q", st.Node, reason)
		}
		return "cancel: " + reason
	case EventAuthRevoked:
		w.problem("%s: auth_revoked on an admin stream", st.Node)
		return "auth_revoked"
	}
	if !f.HasID {
		w.problem("%s: a %s frame without an id on a resumable stream", st.Node, f.Event)
		return "no id"
	}
	c, err := ParseChange(f.Event, f.Data)
	if err != nil {
		w.problem("%s: id %d: %v", st.Node, f.ID, err)
		return "malformed"
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	st.Events++
	root := f.Event == EventPut && len(c.Path) == 0
	first := st.Events == 1
	prev := w.rec.Last
	switch {
	case first && !w.started && !root:
		w.problemLocked("%s: the first frame is a %s at %q, not a put at \"/\"", st.Node, f.Event, "/"+strings.Join(c.Path, "/"))
		return "no initial put"
	case first && root && w.started && f.ID < prev:
		w.problemLocked("%s: a fresh put at index %d, older than index %d already seen", st.Node, f.ID, prev)
	case w.started && !(first && root) && f.ID <= prev:
		w.problemLocked("%s: id %d after %d: ids must increase", st.Node, f.ID, prev)
	}
	if first && w.started {
		st.How = "resumed"
		if root {
			st.How = "fresh"
		}
	} else if root && !first {
		st.Restores++
	}
	if root {
		w.rebase(st, c.Value, f.ID, prev)
	} else {
		w.rep.apply(f.Event, c, f.ID, false)
	}
	w.rec.Last = max(w.rec.Last, f.ID)
	return ""
}

// rebase replaces the copy with a put at "/" at index.
func (w *Watcher) rebase(st *Stream, v any, index, prev uint64) {
	if w.started && index == prev {
		// The same index again must be the same state.
		before := string(w.rep.tree.JSON())
		w.rep.apply(EventPut, Change{Value: v}, index, true)
		if after := string(w.rep.tree.JSON()); after != before {
			w.problemLocked("%s: a put at \"/\" at index %d differs from the state the watcher had at that index", st.Node, index)
		}
		return
	}
	after := uint64(0)
	if w.started {
		after = prev
	}
	w.rec.Puts = append(w.rec.Puts, Put{After: after, Index: index, At: w.cfg.Clock()})
	w.rep.apply(EventPut, Change{Value: v}, index, true)
	w.started = true
}

func (w *Watcher) failed() {
	w.mu.Lock()
	w.rec.Failed++
	w.mu.Unlock()
}

func (w *Watcher) problem(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.problemLocked(format, args...)
}

// maxProblems bounds the problems one watcher keeps; the count goes on.
const maxProblems = 200

func (w *Watcher) problemLocked(format string, args ...any) {
	if len(w.rec.Problems) == maxProblems {
		w.rec.MoreProblems++
		return
	}
	w.rec.Problems = append(w.rec.Problems, fmt.Sprintf("watcher %d: ", w.id)+fmt.Sprintf(format, args...))
}

// copyJSON is the copy's canonical JSON, and whether a first put arrived.
func (w *Watcher) copyJSON() ([]byte, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rep.tree.JSON(), w.started
}

// record returns what the watcher recorded, with its copy.
func (w *Watcher) record() Record {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.rec
	r.Keys = w.rep.keys
	r.Copy = string(w.rep.tree.JSON())
	return r
}
