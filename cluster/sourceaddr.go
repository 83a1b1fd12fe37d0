package cluster

import (
	"net"
	"time"

	"github.com/hashicorp/memberlist"
)

// A node bound to one address (not 0.0.0.0) sends its cluster traffic
// from that address too, over TCP as gossip's UDP socket already does.
// Peers and firewalls then see one address per node whichever way a
// connection was opened, and on a multi-homed host the traffic leaves
// by the interface the operator chose. Nodes sharing a machine on
// loopback addresses of their own can so be cut apart by address
// (the e2e partition tests do that with iptables).

// sourceAddr is the local address to dial peers from: the bound IP, or
// nil (the kernel's choice) when the bind is unspecified.
func sourceAddr(bound net.Addr) *net.TCPAddr {
	tcp, ok := bound.(*net.TCPAddr)
	if !ok || tcp.IP == nil || tcp.IP.IsUnspecified() {
		return nil
	}
	return &net.TCPAddr{IP: tcp.IP}
}

// sourceBoundTransport is memberlist's own transport, whose stream
// connections (push/pull state exchange, TCP probes) are dialled from
// local rather than from the kernel's choice.
type sourceBoundTransport struct {
	*memberlist.NetTransport
	local *net.TCPAddr
}

var _ memberlist.NodeAwareTransport = (*sourceBoundTransport)(nil)

// gossipTransport binds memberlist's transport for mc and, when mc binds
// one IP, dials from it. It returns nil when the bind is unspecified:
// memberlist then makes its own transport.
func gossipTransport(mc *memberlist.Config) (memberlist.Transport, error) {
	ip := net.ParseIP(mc.BindAddr)
	if ip == nil || ip.IsUnspecified() {
		return nil, nil
	}
	nt, err := memberlist.NewNetTransport(&memberlist.NetTransportConfig{
		BindAddrs: []string{mc.BindAddr},
		BindPort:  mc.BindPort,
		Logger:    mc.Logger,
	})
	if err != nil {
		return nil, err
	}
	if mc.BindPort == 0 {
		mc.BindPort = nt.GetAutoBindPort()
		mc.AdvertisePort = mc.BindPort
	}
	return &sourceBoundTransport{NetTransport: nt, local: &net.TCPAddr{IP: ip}}, nil
}

// DialTimeout implements memberlist.Transport.
func (t *sourceBoundTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	return sourceDialer(timeout, t.local).Dial("tcp", addr)
}

// DialAddressTimeout implements memberlist.NodeAwareTransport.
func (t *sourceBoundTransport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	return t.DialTimeout(a.Addr, timeout)
}
