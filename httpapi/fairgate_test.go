package httpapi

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestFairGateTakesConnectionsInTurn: with every slot taken, a connection
// with many writes waiting and one with a single write are admitted
// alternately, whatever order they queued in.
func TestFairGateTakesConnectionsInTurn(t *testing.T) {
	g := newFairGate(1, prometheus.NewGauge(prometheus.GaugeOpts{Name: "w"}))
	ctx := context.Background()
	if err := g.acquire(ctx, "held"); err != nil {
		t.Fatal(err)
	}
	order := make(chan string, 10)
	queue := func(key string) {
		go func() {
			if err := g.acquire(ctx, key); err != nil {
				t.Error(err)
				return
			}
			order <- key
		}()
	}
	// The burst queues five writes, then the other connection one, then
	// the burst five more.
	for range 5 {
		queueAndCount(t, g, queue, "burst")
	}
	queueAndCount(t, g, queue, "other")
	for range 5 {
		queueAndCount(t, g, queue, "burst")
	}
	var got []string
	for range 11 {
		g.release()
		got = append(got, <-order)
	}
	if got[0] != "burst" || got[1] != "other" {
		t.Fatalf("admitted %v; want the burst's first write, then the other connection's", got)
	}
	g.release()
	if g.free != 1 || len(g.turn) != 0 || len(g.waiting) != 0 {
		t.Fatalf("after every release: free %d, turn %d, waiting %d", g.free, len(g.turn), len(g.waiting))
	}
}

// queueAndCount queues one write of key and waits until the gate holds it.
func queueAndCount(t *testing.T, g *fairGate, queue func(string), key string) {
	t.Helper()
	before := waiters(g)
	queue(key)
	waitFor(t, "the write to wait at the gate", func() bool { return waiters(g) == before+1 })
}

func waiters(g *fairGate) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, q := range g.turn {
		n += len(q.waiters)
	}
	return n
}

// TestFairGateCancelledWaiterLeaves: a write whose context ends while it
// waits leaves the gate as it was, and the slot goes to the next.
func TestFairGateCancelledWaiterLeaves(t *testing.T) {
	g := newFairGate(1, prometheus.NewGauge(prometheus.GaugeOpts{Name: "w"}))
	if err := g.acquire(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := g.acquire(ctx, "b"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a waiter past its deadline: %v", err)
	}
	if len(g.turn) != 0 || len(g.waiting) != 0 {
		t.Fatalf("a cancelled waiter stayed: turn %d, waiting %d", len(g.turn), len(g.waiting))
	}
	g.release()
	if err := g.acquire(context.Background(), "c"); err != nil {
		t.Fatal(err)
	}
	g.release()
	if g.free != 1 {
		t.Fatalf("free %d after all released", g.free)
	}
}
