package main

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// shutdownGrace is how long past --shutdown-timeout serve still waits for
// the node's own stop to return before giving up on it.
const shutdownGrace = 2 * time.Second

// errShutdownStuck says a shutdown step did not return in time; the
// process exits anyway. Nothing acknowledged is lost by that: the Raft log
// is fsynced before a write is acknowledged, so this is no worse than a
// kill -9, which a restart recovers from.
var errShutdownStuck = errors.New("shutdown did not finish in time; exiting without it")

// stopWithin runs stop and returns its error, or errShutdownStuck when
// stop is still running shutdownGrace after ctx's deadline: a stop that
// hangs (docs/CHAOS.md, bug 2) must not keep the process alive until the
// orchestrator kills it.
func stopWithin(ctx context.Context, grace time.Duration, stop func(context.Context) error) error {
	done := make(chan error, 1)
	go func() { done <- stop(ctx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		return fmt.Errorf("%w (still waiting after the timeout and %s more)", errShutdownStuck, grace)
	}
}
