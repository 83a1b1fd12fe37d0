package main

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestServeExitsAfterShutdownTimeout: a shutdown step that never returns
// (docs/CHAOS.md, bug 2: Raft's stop hung on a deadlocked replication
// goroutine) no longer keeps serve alive past --shutdown-timeout plus the
// grace.
func TestServeExitsAfterShutdownTimeout(t *testing.T) {
	hang := make(chan struct{})
	t.Cleanup(func() { close(hang) })
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := stopWithin(ctx, 100*time.Millisecond, func(context.Context) error {
		<-hang
		return nil
	})
	if !errors.Is(err, errShutdownStuck) {
		t.Fatalf("stopWithin a hung stop: %v, want errShutdownStuck", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("returned after %s", took)
	}
}

// TestStopWithinReturnsTheStopsError: a stop that returns, even late in
// the grace, has its own error reported.
func TestStopWithinReturnsTheStopsError(t *testing.T) {
	boom := errors.New("boom")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	err := stopWithin(ctx, 5*time.Second, func(ctx context.Context) error {
		<-ctx.Done()
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want boom", err)
	}
	if err := stopWithin(context.Background(), time.Second, func(context.Context) error { return nil }); err != nil {
		t.Fatalf("a clean stop: %v", err)
	}
}
