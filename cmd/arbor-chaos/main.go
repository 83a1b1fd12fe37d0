// Command arbor-chaos attacks a three-node arbor cluster and judges what
// it did: concurrent clients on random nodes read, overwrite,
// compare-and-set, increment and append over a few keys while a nemesis
// kills (-9), pauses, gracefully stops, restarts and — with Docker —
// partitions nodes. Every operation is recorded; afterwards porcupine
// checks the history for linearizability key by key, and the runner
// checks that every acknowledged write survived, that the replicas
// converged to the same root ETag, and that push keys grew in commit
// order. Meanwhile stream watchers (internal/watch) keep resumable event
// streams open from node to node, and every event they receive is held
// against the history. `make chaos` runs it; docs/CHAOS.md explains what
// it found.
//
// It is a test tool, kept out of the arbor binary: the product has no
// switch that exists only for it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// Exit statuses.
const (
	exitPass  = 0
	exitFail  = 1 // a check failed
	exitSetup = 2 // bad flags, or the cluster could not be set up
	exitInt   = 130
)

func main() {
	os.Exit(realMain(os.Args[1:]))
}

func realMain(args []string) int {
	cfg, err := parseConfig(args, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitPass
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "arbor-chaos:", err)
		return exitSetup
	}
	if cfg.Check != "" {
		return recheck(cfg, os.Stdout)
	}
	// Signals stay caught until the end: a second ^C must not cut the
	// cleanup short and leave containers behind.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return run(ctx, cfg, os.Stdout)
}
