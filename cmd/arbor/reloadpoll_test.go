package main

import (
	"context"
	"testing"
	"time"

	"github.com/arbordb/arbor/cmd/internal/pki"
)

func TestPollReloads(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := make(chan string, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		pollReloads(ctx, func() { calls <- "a" }, func() { calls <- "b" })
	}()
	deadline := time.After(10 * pki.CheckInterval)
	for _, want := range []string{"a", "b", "a", "b"} {
		select {
		case got := <-calls:
			if got != want {
				t.Fatalf("call %q, want %q (each check in order, every interval)", got, want)
			}
		case <-deadline:
			t.Fatal("checks not called")
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("pollReloads kept running after its context ended")
	}
}
