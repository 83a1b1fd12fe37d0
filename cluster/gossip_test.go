package cluster

import (
	"net"
	"strconv"
	"testing"
)

// TestGossipAdvertisesBoundPort (docs/CHAOS.md, bug 1): with an explicit
// gossip port and an advertise host, memberlist must advertise that port;
// its default (7946) made every peer look failed in Compose and
// Kubernetes, which gossip on 8301.
func TestGossipAdvertisesBoundPort(t *testing.T) {
	g := &gossip{log: testLogger(t)}
	mc, err := g.memberlistConfig(Config{NodeID: "n1", GossipAddr: ":8301", AdvertiseHost: "127.0.0.2", Timing: FastTiming()})
	if err != nil {
		t.Fatal(err)
	}
	if mc.AdvertisePort != 8301 || mc.BindPort != 8301 || mc.AdvertiseAddr != "127.0.0.2" {
		t.Fatalf("advertises %s:%d, binds port %d; want 127.0.0.2:8301", mc.AdvertiseAddr, mc.AdvertisePort, mc.BindPort)
	}

	// A running node on a concrete port tells its peers that port. The
	// port is free for UDP when picked; another process may take it for
	// TCP before gossip binds both, so a few ports are tried.
	var (
		d    discovery
		port int
	)
	for range 5 {
		l, lerr := net.ListenPacket("udp", "127.0.0.1:0")
		if lerr != nil {
			t.Fatal(lerr)
		}
		port = l.LocalAddr().(*net.UDPAddr).Port
		l.Close()
		cfg := Config{NodeID: "n1", GossipAddr: "127.0.0.1:" + strconv.Itoa(port), AdvertiseHost: "127.0.0.1", Timing: FastTiming()}
		if d, err = newGossip(cfg, nodeMeta{}, testLogger(t), func() {}); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("gossip on port %d: %v", port, err)
	}
	defer d.Close()
	if got := d.(*gossip).ml.LocalNode().Port; int(got) != port {
		t.Fatalf("running node advertises port %d, want %d", got, port)
	}
}
