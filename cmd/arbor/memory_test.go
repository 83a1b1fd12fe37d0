package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestReleaseMemoryOnceReady: the release happens once, after the first
// ready answer, and not at all when the node never becomes ready.
func TestReleaseMemoryOnceReady(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	var calls atomic.Int32
	ready := func(context.Context) error {
		if calls.Add(1) < 3 {
			return errors.New("catching up")
		}
		return nil
	}
	releaseMemoryOnceReady(context.Background(), ready, logger, time.Millisecond, time.Minute)
	if calls.Load() != 3 || !strings.Contains(buf.String(), "returned unused memory") {
		t.Fatalf("%d ready calls, log %q", calls.Load(), buf.String())
	}

	buf.Reset()
	never := func(context.Context) error { return errors.New("no leader") }
	releaseMemoryOnceReady(context.Background(), never, logger, time.Millisecond, 20*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	releaseMemoryOnceReady(ctx, never, logger, time.Millisecond, time.Minute)
	if buf.Len() != 0 {
		t.Fatalf("released without being ready: %q", buf.String())
	}
}
