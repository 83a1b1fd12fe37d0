//go:build !linux

package cluster

import (
	"net"
	"time"
)

// sourceDialer dials from local when it is set.
func sourceDialer(timeout time.Duration, local *net.TCPAddr) *net.Dialer {
	d := &net.Dialer{Timeout: timeout}
	if local != nil {
		d.LocalAddr = local
	}
	return d
}
