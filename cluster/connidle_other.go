//go:build !unix

package cluster

import "net"

// connIdle cannot peek without blocking here; a pooled connection is
// assumed healthy, and a stale one makes one forwarded write "outcome
// unknown" (503) instead of being retried.
func connIdle(net.Conn) bool { return true }
