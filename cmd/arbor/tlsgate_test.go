package main

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestHandshakeGateBoundsComputing: at most the gate's slots are held at
// once, and a slot given back lets the next handshake in.
func TestHandshakeGateBoundsComputing(t *testing.T) {
	g := &handshakeGate{slots: make(chan struct{}, 2)}
	var inside, most atomic.Int32
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			leave, err := g.enter(context.Background())
			if err != nil {
				t.Error(err)
				return
			}
			n := inside.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(time.Millisecond)
			inside.Add(-1)
			leave()
			leave() // twice is once
		})
	}
	wg.Wait()
	if m := most.Load(); m > 2 || m < 1 {
		t.Fatalf("%d handshakes computed at once through 2 slots", m)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	l1, _ := g.enter(ctx)
	l2, _ := g.enter(ctx)
	if _, err := g.enter(ctx); err == nil {
		t.Fatal("a third handshake entered two full slots")
	}
	l1()
	l2()
}

// TestStalledHandshakeHoldsNoSlot: a client that sends its hello and then
// nothing more gives the slot back with the server's answer, so other
// clients still connect at once through a one-slot gate.
func TestStalledHandshakeHoldsNoSlot(t *testing.T) {
	s := startTestServer(t)
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	for range 4 {
		raw, err := net.DialTimeout("tcp", s.addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		// It writes its hello, then never reads the answer: the server
		// waits for its Finished until the handshake timeout.
		go func() {
			_ = tls.Client(stalledReads{raw, done}, &tls.Config{RootCAs: s.pool, ServerName: "127.0.0.1"}).Handshake()
		}()
	}
	time.Sleep(100 * time.Millisecond) // the hellos are in (a probe's pause, not a wait for state)
	dialer := &net.Dialer{Timeout: 3 * time.Second}
	for i := range 20 {
		cn, err := tls.DialWithDialer(dialer, "tcp", s.addr, &tls.Config{RootCAs: s.pool, ServerName: "127.0.0.1"})
		if err != nil {
			t.Fatalf("client %d behind 4 stalled handshakes: %v", i, err)
		}
		cn.Close()
	}
}

// stalledReads is a connection whose reads return only once done is
// closed.
type stalledReads struct {
	net.Conn
	done chan struct{}
}

func (s stalledReads) Read([]byte) (int, error) {
	<-s.done
	return 0, io.EOF
}
