package httpapi

import (
	"context"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// A write waits for Raft behind every write already proposed, and clients
// are served first come, first served: one client's 1,000 concurrent
// HTTP/2 PUTs would keep everyone else's writes waiting behind them.
// fairGate admits at most a fixed
// number of writes in progress on the node; writes beyond that wait, and
// as slots come free the waiting connections are admitted in turn, one
// write each, so a connection with many writes waiting delays another's
// by at most one write per other waiting connection. Connections are
// bounded (--max-connections), so the turn is too.
type fairGate struct {
	waitingGauge prometheus.Gauge // writes waiting for a slot

	mu      sync.Mutex
	free    int
	waiting map[string]*fairQueue // connections with writes waiting
	turn    []*fairQueue          // their order: the head is admitted next
}

// fairQueue is one connection's waiting writes, oldest first.
type fairQueue struct {
	key     string
	waiters []chan struct{}
}

func newFairGate(slots int, waiting prometheus.Gauge) *fairGate {
	return &fairGate{free: max(1, slots), waiting: make(map[string]*fairQueue), waitingGauge: waiting}
}

// acquire waits for a slot for a write of connection key, or until ctx
// ends (ctx's error). A nil error must be followed by release.
func (g *fairGate) acquire(ctx context.Context, key string) error {
	g.mu.Lock()
	if g.free > 0 && len(g.turn) == 0 {
		g.free--
		g.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	q := g.waiting[key]
	if q == nil {
		q = &fairQueue{key: key}
		g.waiting[key] = q
		g.turn = append(g.turn, q)
	}
	q.waiters = append(q.waiters, ch)
	g.mu.Unlock()
	g.waitingGauge.Inc()
	defer g.waitingGauge.Dec()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
	}
	g.mu.Lock()
	select {
	case <-ch: // admitted as ctx ended: hand the slot on
		g.mu.Unlock()
		g.release()
		return ctx.Err()
	default:
	}
	for i, w := range q.waiters {
		if w == ch {
			q.waiters = append(q.waiters[:i], q.waiters[i+1:]...)
			break
		}
	}
	if len(q.waiters) == 0 {
		g.drop(q)
	}
	g.mu.Unlock()
	return ctx.Err()
}

// release gives a slot back: to the next connection in turn, if any waits.
func (g *fairGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.turn) == 0 {
		g.free++
		return
	}
	q := g.turn[0]
	g.turn = g.turn[1:]
	ch := q.waiters[0]
	q.waiters = q.waiters[1:]
	if len(q.waiters) > 0 {
		g.turn = append(g.turn, q) // its next write waits for everyone else's turn
	} else {
		delete(g.waiting, q.key)
	}
	close(ch)
}

// drop removes q, which has no more waiters, from the turn.
func (g *fairGate) drop(q *fairQueue) {
	delete(g.waiting, q.key)
	for i, o := range g.turn {
		if o == q {
			g.turn = append(g.turn[:i], g.turn[i+1:]...)
			return
		}
	}
}
