package testcluster

import (
	"context"
	"syscall"
	"time"
)

// StopWithDump stops a node gracefully: SIGTERM, then up to grace for it
// to exit. A node still running then gets SIGQUIT, which makes the Go
// runtime write every goroutine's stack to the node's output and exit —
// the dump shows what the shutdown waited for — and dump more to do so;
// after that SIGKILL, and kill more to be gone. It returns how long it
// took and whether SIGTERM alone ended the node within grace; err only
// when SIGTERM could not be sent. The steps after grace run even when
// ctx has ended.
func StopWithDump(ctx context.Context, n Signaller, grace, dump, kill time.Duration) (took time.Duration, graceful bool, err error) {
	start := time.Now()
	if err := n.Signal(ctx, syscall.SIGTERM); err != nil {
		return 0, false, err
	}
	if n.WaitExit(ctx, grace) {
		return time.Since(start), true, nil
	}
	ctx = context.WithoutCancel(ctx)
	n.Signal(ctx, syscall.SIGQUIT)
	if !n.WaitExit(ctx, dump) {
		n.Signal(ctx, syscall.SIGKILL)
		n.WaitExit(ctx, kill)
	}
	return time.Since(start), false, nil
}
