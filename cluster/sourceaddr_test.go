package cluster

import (
	"net"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/hashicorp/raft"
)

// acceptFrom listens on 127.0.0.1 and returns its address and a channel
// of the remote address of every connection it accepts.
func acceptFrom(t *testing.T) (string, <-chan net.Addr) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	from := make(chan net.Addr, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			from <- c.RemoteAddr()
			c.Close()
		}
	}()
	return ln.Addr().String(), from
}

func wantFrom(t *testing.T, from <-chan net.Addr, ip string) {
	t.Helper()
	select {
	case a := <-from:
		if got := a.(*net.TCPAddr).IP.String(); got != ip {
			t.Fatalf("the connection came from %s, want %s", got, ip)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no connection arrived")
	}
}

// TestPeersAreDialledFromTheBoundAddress: a network bound to one loopback
// address opens its peer connections from it; one bound to every address
// leaves the choice to the kernel.
func TestPeersAreDialledFromTheBoundAddress(t *testing.T) {
	addr, from := acceptFrom(t)
	nw, err := newTCPNetwork(Config{RaftAddr: "127.0.0.7:0"}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer nw.Close()
	c, err := nw.(*tcpNetwork).dial(raft.ServerAddress(addr), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	wantFrom(t, from, "127.0.0.7")

	if got := sourceAddr(&net.TCPAddr{IP: net.IPv4zero, Port: 8300}); got != nil {
		t.Errorf("source of an unspecified bind: %v, want the kernel's choice (nil)", got)
	}
}

// TestGossipStreamsAreDialledFromTheBoundAddress: memberlist's TCP
// connections leave from the gossip bind address, as its UDP does.
func TestGossipStreamsAreDialledFromTheBoundAddress(t *testing.T) {
	addr, from := acceptFrom(t)
	mc := memberlist.DefaultLANConfig()
	mc.BindAddr, mc.BindPort = "127.0.0.8", 0
	tr, err := gossipTransport(mc)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Shutdown()
	if mc.BindPort == 0 || mc.AdvertisePort != mc.BindPort {
		t.Fatalf("bind port %d, advertise port %d: want the port picked", mc.BindPort, mc.AdvertisePort)
	}
	c, err := tr.DialTimeout(addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	wantFrom(t, from, "127.0.0.8")

	mc.BindAddr = "0.0.0.0"
	if tr, err := gossipTransport(mc); tr != nil || err != nil {
		t.Errorf("unspecified bind: transport %v, error %v; want memberlist's own", tr, err)
	}
}
