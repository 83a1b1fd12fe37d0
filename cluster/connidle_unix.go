//go:build unix

package cluster

import (
	"errors"
	"net"
	"syscall"
)

// connIdle reports whether nothing is readable on c, without blocking:
// a non-blocking MSG_PEEK receive on the socket. EAGAIN means idle and
// healthy; data, EOF (the peer closed) or an error mean the connection is
// finished. (A read with an expired deadline would not do: Go returns the
// timeout without looking at the socket.)
func connIdle(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	idle := false
	var buf [1]byte
	err = rc.Read(func(fd uintptr) bool {
		_, _, rerr := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		idle = errors.Is(rerr, syscall.EAGAIN) || errors.Is(rerr, syscall.EWOULDBLOCK)
		return true // never wait for readiness
	})
	return err == nil && idle
}
