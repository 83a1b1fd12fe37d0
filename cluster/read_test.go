package cluster

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestVerifyBatching checks that reads arriving while a quorum round runs
// share the next round instead of each running their own.
func TestVerifyBatching(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 10)
	b := &roundBatcher{run: func() (uint64, error) {
		started <- struct{}{}
		<-release
		return 7, nil
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	var wg sync.WaitGroup
	wg.Go(func() {
		if v, err := b.join(ctx); err != nil || v != 7 {
			t.Errorf("first join: %d, %v", v, err)
		}
	})
	<-started // round 1 is running; the next readers must wait for round 2
	const waiting = 20
	for range waiting {
		wg.Go(func() {
			if v, err := b.join(ctx); err != nil || v != 7 {
				t.Errorf("join: %d, %v", v, err)
			}
		})
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		b.mu.Lock()
		queued := b.next != nil && b.next.readers == waiting
		b.mu.Unlock()
		if queued || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond) // poll, bounded by the deadline
	}
	close(release) // lets round 1 and every later round finish at once
	wg.Wait()
	if got := b.rounds.Load(); got != 2 {
		t.Fatalf("%d readers ran %d rounds, want 2 (one running, one shared)", waiting+1, got)
	}
}
