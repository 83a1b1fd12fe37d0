package cluster

import (
	"errors"
	"net"
	"strconv"
	"syscall"
	"time"

	"github.com/hashicorp/raft"
)

// Raft transport tuning: the connection pool per peer and the I/O deadline
// of one RPC (snapshot installs extend their own deadline).
const (
	transportMaxPool = 3
	transportTimeout = 10 * time.Second
)

// streamLayer is the raft.StreamLayer of a tcpNetwork. It exists (instead
// of raft.NewTCPTransport) because the Raft port is shared with Arbor's RPCs
// (the network's accept loop hands Raft only its own connections), because
// connections may be mutual TLS, and because the advertised address must
// carry the real port when binding port 0 and may be a DNS name kept as a
// name, which TCPStreamLayer's *net.TCPAddr cannot express.
type streamLayer struct {
	net *tcpNetwork
}

// Accept implements net.Listener: the next Raft connection.
func (s *streamLayer) Accept() (net.Conn, error) {
	select {
	case c := <-s.net.raftConns:
		return c, nil
	case <-s.net.closed:
		return nil, net.ErrClosed
	}
}

// Close implements net.Listener; it closes the whole network, which Raft
// does only when it shuts down.
func (s *streamLayer) Close() error { return s.net.closeListener() }

// Addr returns the advertised address: what peers store in the Raft
// configuration and dial.
func (s *streamLayer) Addr() net.Addr { return s.net.adv }

// A peer being replaced — a pod restarting on a new IP, a process
// restarting — refuses connections, or its name does not resolve yet, for
// a second or two. Failing each dial at once let hashicorp/raft count a
// failure every few milliseconds and back off exponentially, to seconds
// between attempts, so a restarted member waited for its leader long after
// it was up: a rolling upgrade in make test-k8s once saw a pod Ready 6.5 s
// after its container started, 4 s of it waiting for the leader. Quick
// failures are therefore retried within one dial, every peerRetryEvery for
// up to peerRetryWindow: Raft counts about one failure per window and
// retries within its first, short backoffs once the peer is back.
const (
	peerRetryEvery  = 50 * time.Millisecond
	peerRetryWindow = time.Second
)

// Dial implements raft.StreamLayer.
func (s *streamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	deadline := time.Now().Add(min(timeout, peerRetryWindow))
	for {
		c, err := s.net.dial(address, timeout)
		if err == nil || !quickDialFailure(err) || time.Now().Add(peerRetryEvery).After(deadline) {
			return c, err
		}
		select {
		case <-time.After(peerRetryEvery):
		case <-s.net.closed:
			return nil, net.ErrClosed
		}
	}
}

// quickDialFailure reports whether err is a dial that failed at once
// because nobody listens at the address or its name does not resolve:
// what a peer being replaced answers. Timeouts and TLS failures are not.
func quickDialFailure(err error) bool {
	var dnsErr *net.DNSError
	return errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &dnsErr)
}

// hostPort is a net.Addr that keeps a host name unresolved.
type hostPort string

// Network implements net.Addr.
func (hostPort) Network() string { return "tcp" }

// String implements net.Addr.
func (h hostPort) String() string { return string(h) }

// advertiseAddr picks the address peers should dial: the configured host
// (kept as a name) or the bound IP, with the port actually bound. An
// unspecified bind (":8300", "0.0.0.0:8300") advertises 127.0.0.1: set
// the advertise host for anything beyond one machine.
func advertiseAddr(host string, bound net.Addr) net.Addr {
	port := 0
	var ip net.IP
	if tcp, ok := bound.(*net.TCPAddr); ok {
		port, ip = tcp.Port, tcp.IP
	}
	if host == "" {
		if ip == nil || ip.IsUnspecified() {
			host = "127.0.0.1"
		} else {
			host = ip.String()
		}
	}
	return hostPort(net.JoinHostPort(host, strconv.Itoa(port)))
}
