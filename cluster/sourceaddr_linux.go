//go:build linux

package cluster

import (
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// sourceDialer dials from local when it is set. IP_BIND_ADDRESS_NO_PORT
// defers the choice of the local port to connect, as a dial without a
// local address has it: a bind to port 0 would otherwise reserve a port
// of its own for every connection, from the range a listener on port 0
// draws from too.
func sourceDialer(timeout time.Duration, local *net.TCPAddr) *net.Dialer {
	d := &net.Dialer{Timeout: timeout}
	if local == nil {
		return d
	}
	d.LocalAddr = local
	d.Control = func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_BIND_ADDRESS_NO_PORT, 1)
		}); err != nil {
			return err
		}
		return serr
	}
	return d
}
