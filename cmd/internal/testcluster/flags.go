package testcluster

import (
	"path/filepath"
	"strconv"
	"strings"
)

// Serve is a node's `arbor serve` command line in a cluster secured as
// in production: mutual TLS between the nodes and encrypted gossip.
type Serve struct {
	Node    string
	DataDir string
	// The listening addresses, and the host the node advertises to its
	// peers; each flag is left out when empty (the node's default).
	HTTPAddr, RaftAddr, GossipAddr, AdvertiseHost string

	Join        []string // the peers' gossip addresses
	Size        int      // --bootstrap-expect
	CertDir     string   // as `arbor certs init` wrote it (see CertsInit)
	AdminSecret string   // left out when empty
}

// Args are the arguments after the binary, "serve" first.
func (s Serve) Args() []string {
	args := []string{"serve", "--node-id", s.Node, "--data-dir", s.DataDir}
	for _, f := range [][2]string{
		{"--http-addr", s.HTTPAddr},
		{"--raft-addr", s.RaftAddr},
		{"--gossip-addr", s.GossipAddr},
		{"--advertise-host", s.AdvertiseHost},
	} {
		if f[1] != "" {
			args = append(args, f[0], f[1])
		}
	}
	args = append(args, ClusterFlags(s.Node, s.CertDir, s.Join, s.Size)...)
	if s.AdminSecret != "" {
		args = append(args, "--admin-secret", s.AdminSecret)
	}
	return args
}

// ClusterFlags are the serve flags that make node a member of a secured
// cluster of size nodes: it joins the gossip addresses join, bootstraps
// once size nodes have met, and takes its CA, certificate, key and
// gossip key from certDir, where `arbor certs init` wrote them.
func ClusterFlags(node, certDir string, join []string, size int) []string {
	return []string{
		"--join", strings.Join(join, ","),
		"--bootstrap-expect", strconv.Itoa(size),
		"--tls-ca", filepath.Join(certDir, "ca.pem"),
		"--tls-cert", filepath.Join(certDir, node+".pem"),
		"--tls-key", filepath.Join(certDir, node+"-key.pem"),
		"--gossip-key", filepath.Join(certDir, "gossip.key"),
	}
}

// Peers returns addr(n) for every node n of nodes but self, in order:
// the --join list of self.
func Peers(nodes []string, self string, addr func(node string) string) []string {
	var out []string
	for _, n := range nodes {
		if n != self {
			out = append(out, addr(n))
		}
	}
	return out
}

// LocalServes are the command lines of a cluster of nodes run as local
// processes, in the order of nodes: each listens on 127.0.0.1 on three
// free ports (HTTP, Raft, gossip) it keeps across restarts, joins the
// others' gossip ports, keeps its data in l.NodeDir and takes its
// certificates from l.PKI().
func LocalServes(l Layout, nodes []string) ([]Serve, error) {
	ports, err := FreePorts(3 * len(nodes))
	if err != nil {
		return nil, err
	}
	gossip := map[string]string{}
	for i, n := range nodes {
		gossip[n] = Loopback(ports[3*i+2])
	}
	var serves []Serve
	for i, n := range nodes {
		serves = append(serves, Serve{
			Node:       n,
			DataDir:    l.NodeDir(n),
			HTTPAddr:   Loopback(ports[3*i]),
			RaftAddr:   Loopback(ports[3*i+1]),
			GossipAddr: gossip[n],
			Join:       Peers(nodes, n, func(m string) string { return gossip[m] }),
			Size:       len(nodes),
			CertDir:    l.PKI(),
		})
	}
	return serves, nil
}

// ContainerServe is the command line of node in its container (see
// ContainerSpec), one of nodes: it listens on 8443 (HTTPS) and 8300 (Raft),
// gossip on gossipPort, advertises its node id as host, joins the others
// by their ids (network aliases), keeps its data in /data and takes its
// certificates from /certs.
func ContainerServe(node string, nodes []string, gossipPort int) Serve {
	return Serve{
		Node:          node,
		DataDir:       containerDataDir,
		HTTPAddr:      ":" + strconv.Itoa(containerHTTPPort),
		RaftAddr:      ":" + strconv.Itoa(containerRaftPort),
		GossipAddr:    ":" + strconv.Itoa(gossipPort),
		AdvertiseHost: node,
		Join:          Peers(nodes, node, func(m string) string { return m + ":" + strconv.Itoa(gossipPort) }),
		Size:          len(nodes),
		CertDir:       containerCertDir,
	}
}
