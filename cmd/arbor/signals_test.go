package main

import (
	"log/slog"
	"syscall"
	"testing"
	"time"
)

func TestNotifyShutdownFirstCancelsSecondExits(t *testing.T) {
	exited := make(chan int, 1)
	ctx, stop := notifyShutdown(slog.New(slog.DiscardHandler), func(code int) { exited <- code })
	defer stop()

	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("first signal did not cancel the context")
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-exited:
		if code == 0 {
			t.Errorf("second signal exited with 0, want non-zero")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("second signal did not exit")
	}
}
