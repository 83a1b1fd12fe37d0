package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// notifyShutdown returns a context cancelled by the first SIGTERM or
// SIGINT, which starts a graceful shutdown. A second signal means the
// operator will not wait: exit is called at once with a non-zero code.
// stop releases the signal handlers.
func notifyShutdown(logger *slog.Logger, exit func(int)) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-sigs:
			logger.Info("signal received; shutting down gracefully (send it again to exit at once)", "signal", sig.String())
			cancel()
		case <-done:
			return
		}
		select {
		case sig := <-sigs:
			logger.Warn("second signal received; exiting at once", "signal", sig.String())
			exit(exitFailure)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}
