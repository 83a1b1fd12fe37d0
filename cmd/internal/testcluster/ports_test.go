package testcluster

import (
	"net"
	"testing"
)

// TestFreePortsAreDistinctAndFree: every port can be listened on, for
// TCP and UDP, once FreePorts has returned.
func TestFreePortsAreDistinctAndFree(t *testing.T) {
	ports, err := FreePorts(6)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] {
			t.Fatalf("port %d twice in %v", p, ports)
		}
		seen[p] = true
		ln, err := net.Listen("tcp", Loopback(p))
		if err != nil {
			t.Fatalf("TCP %d: %v", p, err)
		}
		pc, err := net.ListenPacket("udp", Loopback(p))
		if err != nil {
			t.Fatalf("UDP %d: %v", p, err)
		}
		ln.Close()
		pc.Close()
	}
}

func TestLoopback(t *testing.T) {
	if got := Loopback(8443); got != "127.0.0.1:8443" {
		t.Fatalf("Loopback(8443) = %q", got)
	}
}
