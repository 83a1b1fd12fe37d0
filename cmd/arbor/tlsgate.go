package main

import (
	"context"
	"net"
	"runtime"
	"sync"
)

// A TLS handshake costs the server a signature and a key agreement: about
// a millisecond of a core each, and far more under a storm of clients
// reconnecting at once (after a failover, or a Service moving them).
// Computed all at once on a two-core node they leave Raft no core, and the
// leader misses its heartbeats and steps down. So the server's share of
// the handshakes runs in at most half the cores (at least one) at a time:
// a handshake takes a slot once the client's hello is read and gives it
// back with the server's first write (the computing is done by then) or
// when the handshake ends, whichever comes first. A client that stalls
// after its hello holds no slot for longer than that computing.

// handshakeGate holds the slots of the handshakes computing now.
type handshakeGate struct{ slots chan struct{} }

func newHandshakeGate() *handshakeGate {
	return &handshakeGate{slots: make(chan struct{}, max(1, runtime.GOMAXPROCS(0)/2))}
}

// enter waits for a slot (or ctx: the handshake's timeout) and returns
// the function that gives it back; it may be called more than once.
func (g *handshakeGate) enter(ctx context.Context) (leave func(), err error) {
	select {
	case g.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	var once sync.Once
	return func() { once.Do(func() { <-g.slots }) }, nil
}

// gatedConn is a connection in its handshake: its first write after the
// client's hello gives the handshake's slot back.
type gatedConn struct {
	net.Conn
	mu    sync.Mutex
	leave func() // set once the hello was read and a slot taken
}

// Write implements net.Conn.
func (c *gatedConn) Write(b []byte) (int, error) {
	c.release()
	return c.Conn.Write(b)
}

// NetConn is the connection c wraps (the realtime server waits on its
// socket).
func (c *gatedConn) NetConn() net.Conn { return c.Conn }

// hold records the slot the handshake took.
func (c *gatedConn) hold(leave func()) {
	c.mu.Lock()
	c.leave = leave
	c.mu.Unlock()
}

// release gives the slot back, if one is held.
func (c *gatedConn) release() {
	c.mu.Lock()
	leave := c.leave
	c.leave = nil
	c.mu.Unlock()
	if leave != nil {
		leave()
	}
}
