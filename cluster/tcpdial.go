package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/hashicorp/raft"
)

// dial opens a connection to a peer's cluster port, with the TLS handshake
// done, within timeout.
func (t *tcpNetwork) dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return t.dialContext(ctx, addr)
}

// Peers are on one LAN (or one cloud region): a connection is set up in
// milliseconds, so a dial that takes longer is to an address nobody holds
// any more. On Kubernetes a replaced pod's old IP vanishes while DNS still
// names it for a moment, and a connect to it hangs until its timeout:
// with the transport's 10 s, every replaced pod would wait ~11 s to be
// caught up and Ready. Connect (with the name resolved again, as every
// dial does) and the TLS handshake now each get a LAN-sized bound, and
// Raft's next attempt resolves the name again.
const (
	peerConnectTimeout   = 500 * time.Millisecond
	peerHandshakeTimeout = 2 * time.Second
)

// A peer's name may not resolve for seconds after it was replaced: on
// Kubernetes the new pod is up and gossiping before DNS names it (make
// test-k8s saw 4.6 s of "lookup …: i/o timeout", and a replaced pod Ready
// only after that). Gossip learns the new pod's address as soon as it
// joins, so a dial whose name does not resolve, or whose connect times out
// (the name still giving the old pod's IP), is made again to the host
// gossip last saw that live peer at, on the port of its Raft address.
// Mutual TLS checks the peer's certificate against the cluster CA either
// way.

// resolvePeersWith gives the network the gossip view of peers' hosts.
func (t *tcpNetwork) resolvePeersWith(host func(raft.ServerAddress) (string, bool)) {
	t.gossipHost.Store(&host)
}

func (t *tcpNetwork) dialContext(ctx context.Context, addr raft.ServerAddress) (net.Conn, error) {
	d := sourceDialer(peerConnectTimeout, t.source)
	c, err := d.DialContext(ctx, "tcp", string(addr))
	if err != nil && unresolvedOrGone(err) {
		if alt, ok := t.gossipAddr(addr); ok {
			var altErr error
			if c, altErr = d.DialContext(ctx, "tcp", alt); altErr == nil {
				err = nil
				t.log.Info("peer name did not resolve: dialled the address gossip knows", "peer", string(addr), "addr", alt)
			}
		}
	}
	if err != nil {
		return nil, err
	}
	if t.cliTLS == nil {
		return c, nil
	}
	hctx, cancel := context.WithTimeout(ctx, peerHandshakeTimeout)
	defer cancel()
	tc := tls.Client(c, t.cliTLS)
	if err := tc.HandshakeContext(hctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
	}
	return tc, nil
}

// unresolvedOrGone reports whether a dial failed because the peer's name
// did not resolve, or its connect timed out (the name still gives the IP
// of the pod replaced).
func unresolvedOrGone(err error) bool {
	var dnsErr *net.DNSError
	var netErr net.Error
	return errors.As(err, &dnsErr) || (errors.As(err, &netErr) && netErr.Timeout())
}

// gossipAddr is addr with its host replaced by the one gossip last saw
// the peer at, if gossip knows one other than addr's.
func (t *tcpNetwork) gossipAddr(addr raft.ServerAddress) (string, bool) {
	f := t.gossipHost.Load()
	if f == nil {
		return "", false
	}
	host, port, err := net.SplitHostPort(string(addr))
	if err != nil {
		return "", false
	}
	alt, ok := (*f)(addr)
	if !ok || alt == host {
		return "", false
	}
	return net.JoinHostPort(alt, port), true
}
