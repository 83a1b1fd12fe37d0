package main

import (
	"net"
	"testing"
	"time"
)

func TestConnectionLimitFromDescriptors(t *testing.T) {
	for _, c := range []struct {
		configured int
		fds        uint64
		want       int
	}{
		{0, 1024, 64}, {0, 4096, 4096 - fdReserve}, {0, 1 << 20, maxAutoConnections}, {100, 1 << 20, 100},
	} {
		if got := connectionLimit(c.configured, c.fds); got != c.want {
			t.Errorf("connectionLimit(%d, %d) = %d, want %d", c.configured, c.fds, got, c.want)
		}
	}
}

// TestLimitListenerMakesTheNextClientWait: with every slot taken, the
// next connection is not accepted until one closes; Close ends a waiting
// Accept.
func TestLimitListenerMakesTheNextClientWait(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := newLimitListener(raw, 2)
	accepted := make(chan net.Conn, 3)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	var clients []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", raw.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		clients = append(clients, c)
	}
	first, second := <-accepted, <-accepted
	deadline := time.Now().Add(5 * time.Second)
	for !l.waiting.Load() { // poll: Accept is now waiting for a slot
		if time.Now().After(deadline) {
			t.Fatal("Accept did not wait for a slot")
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case <-accepted:
		t.Fatal("a third connection was accepted over the limit of 2")
	default:
	}
	if l.open() != 2 {
		t.Fatalf("open = %d", l.open())
	}
	first.Close()
	first.Close() // a second close gives nothing back twice
	select {
	case c := <-accepted:
		c.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting connection was not accepted after a slot freed")
	}
	second.Close()
	l.Close()
	for range accepted {
	}
}
