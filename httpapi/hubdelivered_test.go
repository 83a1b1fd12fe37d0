package httpapi

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

// A write's waiter returns once a batch holding its index was routed
// (with events or none), at once for an index already routed, and when the
// hub closes.
func TestHubWaitDelivered(t *testing.T) {
	var h hub
	one, err := tree.ParseBody([]byte("1"), tree.MaxDepth)
	if err != nil {
		t.Fatal(err)
	}
	put := func(index uint64) {
		h.publish(index, []fsm.Event{{Index: index, Kind: fsm.EventPut, Path: tree.Path{"a"}, Value: one}})
	}
	put(3)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.waitDelivered(ctx, 3); err != nil {
		t.Fatalf("index routed already: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- h.waitDelivered(ctx, 5) }()
	put(4)
	select {
	case err := <-done:
		t.Fatalf("returned before index 5 was routed: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	put(5)
	if err := <-done; err != nil {
		t.Fatalf("after index 5: %v", err)
	}
	// An entry that changed nothing has no events, and is routed all the same.
	go func() { done <- h.waitDelivered(ctx, 6) }()
	h.publish(6, nil)
	if err := <-done; err != nil {
		t.Fatalf("after index 6, which changed nothing: %v", err)
	}
	short, cancelShort := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancelShort()
	if err := h.waitDelivered(short, 9); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("past its context: %v", err)
	}
	go func() { done <- h.waitDelivered(ctx, 9) }()
	h.close()
	if err := <-done; !errors.Is(err, errStreamsClosed) {
		t.Fatalf("on close: %v", err)
	}
}
