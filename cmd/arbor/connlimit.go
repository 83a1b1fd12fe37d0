package main

import (
	"net"
	"sync"
	"sync/atomic"
)

// fdReserve is how many file descriptors a node keeps for everything but
// client connections: the Raft log and snapshot files, the cluster port's
// connections (Raft and forwarding, to every peer), gossip and the
// certificate reloads. Client connections are capped at the descriptor
// limit minus this, so a flood of clients cannot starve them.
const fdReserve = 1024

// maxAutoConnections caps the automatic connection limit: beyond it a
// node on two cores is slower to serve anyone than to make clients wait.
const maxAutoConnections = 16384

// connectionLimit is the client connection limit: configured (> 0), or
// derived from the descriptor limit fds.
func connectionLimit(configured int, fds uint64) int {
	if configured > 0 {
		return configured
	}
	if fds <= fdReserve+64 {
		return 64
	}
	return int(min(fds-fdReserve, maxAutoConnections))
}

// limitListener admits at most max connections at a time. Accept waits
// for a free slot, so further clients wait in the kernel's backlog (or
// are refused once it is full) and nothing inside the node runs out of
// descriptors.
type limitListener struct {
	net.Listener
	slots   chan struct{}
	done    chan struct{}
	once    sync.Once
	waiting atomic.Bool // Accept is waiting for a slot (for tests and logs)
}

func newLimitListener(l net.Listener, max int) *limitListener {
	return &limitListener{Listener: l, slots: make(chan struct{}, max), done: make(chan struct{})}
}

// Accept implements net.Listener.
func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	default:
		l.waiting.Store(true)
		select {
		case l.slots <- struct{}{}:
			l.waiting.Store(false)
		case <-l.done:
			return nil, net.ErrClosed
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.slots }}, nil
}

// Close implements net.Listener; a waiting Accept returns.
func (l *limitListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitConn gives its slot back when closed (once).
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

// NetConn is the connection c wraps (the realtime server waits on its
// socket).
func (c *limitConn) NetConn() net.Conn { return c.Conn }

// Close implements net.Conn.
func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
