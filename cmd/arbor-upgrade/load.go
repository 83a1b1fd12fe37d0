package main

import (
	"context"
	"sync"

	"github.com/arbordb/arbor/cmd/internal/history"
	"github.com/arbordb/arbor/cmd/internal/workload"
)

// load is the chaos runner's workload running in the background, with its
// recorder, whose clock is the run's.
type load struct {
	rec  *history.Recorder
	stop context.CancelFunc
	wg   sync.WaitGroup
	err  error
}

// startLoad starts the workload's clients.
func startLoad(ctx context.Context, cfg workload.Config) *load {
	ctx, cancel := context.WithCancel(ctx)
	l := &load{rec: history.NewRecorder(), stop: cancel}
	l.wg.Go(func() { l.err = workload.Run(ctx, cfg, l.rec) })
	return l
}

// since is the run's clock: nanoseconds since the load started.
func (l *load) since() int64 { return l.rec.Now() }

// finish stops the clients, waits for their last requests and returns
// the history.
func (l *load) finish() []history.Op {
	l.stop()
	l.wg.Wait()
	return l.rec.Ops()
}
