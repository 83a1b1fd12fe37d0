package testcluster

import (
	"slices"
	"strings"
	"testing"
)

// TestServeArgs: every flag given, in the order the tools expect, and
// the empty ones left out.
func TestServeArgs(t *testing.T) {
	s := Serve{Node: "n2", DataDir: "/data", RaftAddr: ":8300", Join: []string{"n1:8301", "n3:8301"}, Size: 3, CertDir: "/certs", AdminSecret: "s"}
	want := []string{"serve", "--node-id", "n2", "--data-dir", "/data", "--raft-addr", ":8300",
		"--join", "n1:8301,n3:8301", "--bootstrap-expect", "3",
		"--tls-ca", "/certs/ca.pem", "--tls-cert", "/certs/n2.pem", "--tls-key", "/certs/n2-key.pem", "--gossip-key", "/certs/gossip.key",
		"--admin-secret", "s"}
	if got := s.Args(); !slices.Equal(got, want) {
		t.Errorf("Args() =\n%q\nwant\n%q", got, want)
	}
	s.AdminSecret = ""
	if got := s.Args(); slices.Contains(got, "--admin-secret") {
		t.Errorf("an empty secret is passed on: %q", got)
	}
}

func TestPeers(t *testing.T) {
	got := Peers([]string{"n1", "n2", "n3"}, "n2", func(n string) string { return n + ":1" })
	if !slices.Equal(got, []string{"n1:1", "n3:1"}) {
		t.Errorf("Peers = %v", got)
	}
}

// TestLocalServes: distinct loopback ports, each node joining the
// others' gossip addresses, data and certificates in the layout.
func TestLocalServes(t *testing.T) {
	nodes := []string{"n1", "n2", "n3"}
	serves, err := LocalServes(Layout("/run"), nodes)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i, s := range serves {
		if s.Node != nodes[i] || s.DataDir != "/run/nodes/"+s.Node || s.CertDir != "/run/pki" || s.Size != 3 || s.AdvertiseHost != "" {
			t.Errorf("serve %d: %+v", i, s)
		}
		for _, a := range []string{s.HTTPAddr, s.RaftAddr, s.GossipAddr} {
			if !strings.HasPrefix(a, "127.0.0.1:") || seen[a] {
				t.Errorf("address %q: not loopback, or twice", a)
			}
			seen[a] = true
		}
		var want []string
		for j, o := range serves {
			if j != i {
				want = append(want, o.GossipAddr)
			}
		}
		if !slices.Equal(s.Join, want) {
			t.Errorf("%s joins %v, want %v", s.Node, s.Join, want)
		}
	}
}

func TestContainerServe(t *testing.T) {
	got := ContainerServe("n1", []string{"n1", "n2", "n3"}, 7946).Args()
	for _, want := range []string{"--http-addr :8443", "--raft-addr :8300", "--gossip-addr :7946", "--advertise-host n1",
		"--join n2:7946,n3:7946", "--data-dir /data", "--tls-cert /certs/n1.pem"} {
		if !strings.Contains(strings.Join(got, " "), want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
}
