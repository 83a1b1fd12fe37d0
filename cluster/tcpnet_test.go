package cluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/arbordb/arbor/fsm"
)

// testCA is a throwaway certificate authority.
type testCA struct {
	t    *testing.T
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t *testing.T) *testCA { return newTestCAUnder(t, nil) }

// newTestCAUnder is a CA signed by parent (an intermediate), or a
// self-signed root when parent is nil.
func newTestCAUnder(t *testing.T, parent *testCA) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	signer, signerKey := tmpl, key
	if parent != nil {
		tmpl.SerialNumber, tmpl.Subject.CommonName = big.NewInt(2), "intermediate"
		signer, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{t: t, cert: cert, key: key, pool: pool}
}

// tls returns a node TLS configuration with a certificate for name (server
// auth only, as operators' certificates often are).
func (ca *testCA) tls(name string) *TLSConfig {
	ca.t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		ca.t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: name},
		DNSNames:     []string{name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		ca.t.Fatal(err)
	}
	cert := &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	return &TLSConfig{Roots: StaticRoots(ca.pool), Certificate: func() (*tls.Certificate, error) { return cert, nil }}
}

// TestTCPClusterMutualTLS runs the production wiring in-process: three
// nodes on loopback TCP with mutual TLS and encrypted memberlist gossip,
// bootstrapping through --bootstrap-expect and --join, forwarding a write
// and a read barrier over the TLS cluster port.
func TestTCPClusterMutualTLS(t *testing.T) {
	ca := newTestCA(t)
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	cfg := func(id string, join []string) Config {
		return Config{
			NodeID:          id,
			DataDir:         filepath.Join(root, id),
			RaftAddr:        "127.0.0.1:0",
			GossipAddr:      "127.0.0.1:0",
			Join:            join,
			GossipKeys:      [][]byte{key},
			TLS:             ca.tls(id),
			BootstrapExpect: 3,
			WriteTimeout:    3 * time.Second,
			Timing:          clusterTiming(),
			Logger:          testLogger(t),
		}
	}
	n1, _ := startNode(t, cfg("n1", nil))
	seed := n1.disco.(*gossip).ml.LocalNode().Address()
	n2, _ := startNode(t, cfg("n2", []string{seed}))
	n3, _ := startNode(t, cfg("n3", []string{"localhost:1", seed})) // a dead address first: join tries all
	nodes := []*Node{n1, n2, n3}
	c := &testCluster{t: t, nodes: nodes}
	leader := c.waitLeader()
	if got := ids(voters(t, leader)); len(got) != 3 {
		t.Fatalf("voters = %v", got)
	}
	var followers []*Node
	for _, n := range nodes {
		if n != leader {
			followers = append(followers, n)
		}
	}
	res := propose(t, followers[0], set("/tls", `{"ok":true}`))
	if got := readJSON(t, followers[1], "/tls", true); got != `{"ok":true}` || res.Index == 0 {
		t.Fatalf("read on the other follower = %s (write index %d)", got, res.Index)
	}
	st, err := followers[1].Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range st.(*Status).Members {
		if m.Health != "alive" || m.GossipAddress == "" || m.Versions == nil {
			t.Errorf("member %+v", m)
		}
	}

	// Strangers are refused: a certificate from another CA, and no TLS.
	for name, tc := range map[string]*TLSConfig{"other CA": newTestCA(t).tls("intruder"), "plain TCP": nil} {
		c := Config{RaftAddr: "127.0.0.1:0", TLS: tc}
		nw, err := newTCPNetwork(c, testLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err = nw.RoundTrip(ctx, leader.addr, opReadIndex, nil)
		cancel()
		nw.Close()
		if err == nil {
			t.Errorf("%s: a read-index RPC was answered", name)
		}
	}
}

// TestTCPRoundTripFailures: a refused connection is "not sent" (safe to
// retry); a peer that dies mid-request is not.
func TestTCPRoundTripFailures(t *testing.T) {
	nw, err := newTCPNetwork(Config{RaftAddr: "127.0.0.1:0"}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer nw.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := raft.ServerAddress(ln.Addr().String())
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := nw.RoundTrip(ctx, dead, opReadIndex, nil); !errors.Is(err, errNotSent) {
		t.Fatalf("to a closed port: %v, want errNotSent", err)
	}

	// A server that reads the request and hangs up without answering.
	srv, err := newTCPNetwork(Config{RaftAddr: "127.0.0.1:0"}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	srv.Serve(func(ctx context.Context, op rpcOp, payload []byte) []byte {
		if op == opPropose {
			srv.(*tcpNetwork).mu.Lock()
			for sc := range srv.(*tcpNetwork).serving {
				sc.conn.Close()
			}
			srv.(*tcpNetwork).mu.Unlock()
		}
		return encodeIndex(42)
	})
	defer srv.Close()
	reply, err := nw.RoundTrip(ctx, srv.Addr(), opReadIndex, nil)
	if err != nil {
		t.Fatalf("read index: %v", err)
	}
	if r, err := decodeReply(reply); err != nil || r.uvarint() != 42 {
		t.Fatalf("reply %v %v", r, err)
	}
	// The pooled connection is reused, then the server breaks it mid-call.
	_, err = nw.RoundTrip(ctx, srv.Addr(), opPropose, []byte("x"))
	if err == nil || errors.Is(err, errNotSent) {
		t.Fatalf("a request cut off after sending: %v, want an error that is not errNotSent", err)
	}
	// A stopped server's idle connections are noticed, not reused.
	if _, err := nw.RoundTrip(ctx, srv.Addr(), opReadIndex, nil); err != nil {
		t.Fatalf("after a broken connection: %v", err)
	}
	srv.Close()
	if _, err := nw.RoundTrip(ctx, srv.Addr(), opReadIndex, nil); !errors.Is(err, errNotSent) {
		t.Fatalf("to a stopped server with a pooled connection: %v, want errNotSent", err)
	}
	_ = fsm.ErrNoLeader
}

// TestRaftReplicatesWithoutPipeline (docs/CHAOS.md, bug 2): the
// production transport refuses a pipeline, so hashicorp/raft replicates
// one AppendEntries at a time and never enters v1.7.3's pipeline code,
// whose sender parks forever once its decoder has quit.
func TestRaftReplicatesWithoutPipeline(t *testing.T) {
	leader, follower := tcpPair(t, nil)
	p, err := leader.Transport().AppendEntriesPipeline("n2", follower.Addr())
	if !errors.Is(err, raft.ErrPipelineReplicationNotSupported) {
		if p != nil {
			p.Close()
		}
		t.Fatalf("AppendEntriesPipeline: %v, want raft.ErrPipelineReplicationNotSupported", err)
	}
	// Plain AppendEntries still work.
	var resp raft.AppendEntriesResponse
	if err := leader.Transport().AppendEntries("n2", follower.Addr(), &raft.AppendEntriesRequest{Term: 7}, &resp); err != nil || !resp.Success {
		t.Fatalf("AppendEntries: %v, %+v", err, resp)
	}
}

// TestDialGivesUpOnASilentPeer: a listener that accepts and never speaks
// (as a stale address can) fails a Raft dial within the handshake bound,
// not the transport's 10 s.
func TestDialGivesUpOnASilentPeer(t *testing.T) {
	ca := newTestCA(t)
	nw, err := newTCPNetwork(Config{RaftAddr: "127.0.0.1:0", TLS: ca.tls("n1")}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer nw.Close()
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := silent.Accept(); err == nil {
			accepted <- c
		}
	}()
	start := time.Now()
	_, err = nw.(*tcpNetwork).dial(raft.ServerAddress(silent.Addr().String()), transportTimeout)
	took := time.Since(start)
	if err == nil {
		t.Fatal("a dial to a peer that never answers the handshake succeeded")
	}
	if took > peerHandshakeTimeout+time.Second {
		t.Fatalf("the dial gave up after %s, want about %s", took, peerHandshakeTimeout)
	}
	select {
	case c := <-accepted:
		c.Close()
	default:
	}
}

// TestDialWaitsForAPeerComingBack: a Raft dial to an address that refuses
// connections (a peer being restarted) keeps trying for peerRetryWindow,
// so a peer listening again 300 ms later is reached by that same dial and
// Raft never counts a string of failures; one that stays away fails
// after about the window.
func TestDialWaitsForAPeerComingBack(t *testing.T) {
	nw, err := newTCPNetwork(Config{RaftAddr: "127.0.0.1:0"}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer nw.Close()
	stream := &streamLayer{net: nw.(*tcpNetwork)}
	// A free port: bound, noted, closed.
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := probe.Addr().String()
	probe.Close()

	start := time.Now()
	if _, err := stream.Dial(raft.ServerAddress(addr), transportTimeout); err == nil {
		t.Fatal("a dial to a closed port succeeded")
	} else if took := time.Since(start); took < peerRetryWindow-2*peerRetryEvery || took > peerRetryWindow+time.Second {
		t.Fatalf("a peer that stays away failed the dial after %s, want about %s: %v", took, peerRetryWindow, err)
	}

	back := make(chan net.Listener, 1)
	go func() {
		time.Sleep(300 * time.Millisecond) // the peer's restart, not a wait for a state
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			back <- nil
			return
		}
		back <- ln
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	}()
	c, err := stream.Dial(raft.ServerAddress(addr), transportTimeout)
	ln := <-back
	if ln == nil {
		t.Skip("the port was taken meanwhile")
	}
	defer ln.Close()
	if err != nil {
		t.Fatalf("a peer listening again 300 ms into the dial was not reached: %v", err)
	}
	c.Close()
}

// TestDialFallsBackToGossipAddress: a peer whose name does not resolve is
// dialled at the host gossip knows for its Raft address; without one the
// dial fails as before.
func TestDialFallsBackToGossipAddress(t *testing.T) {
	nw, err := newTCPNetwork(Config{RaftAddr: "127.0.0.1:0"}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer nw.Close()
	tn := nw.(*tcpNetwork)
	peer, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	go func() {
		for {
			c, err := peer.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(peer.Addr().String())
	// RFC 6761: names under .invalid never resolve.
	name := raft.ServerAddress(net.JoinHostPort("arbor-0.peers.invalid", port))
	if _, err := tn.dial(name, time.Second); err == nil {
		t.Fatal("a name that does not resolve was dialled without gossip")
	}
	tn.resolvePeersWith(func(addr raft.ServerAddress) (string, bool) {
		return "127.0.0.1", addr == name
	})
	c, err := tn.dial(name, time.Second)
	if err != nil {
		t.Fatalf("the gossip address was not dialled: %v", err)
	}
	c.Close()
	other := raft.ServerAddress(net.JoinHostPort("arbor-1.peers.invalid", port))
	if _, err := tn.dial(other, time.Second); err == nil {
		t.Fatal("a peer gossip does not know was dialled")
	}
}

// TestGossipHost: the host is that of the live peer advertising the Raft
// address, never this node's own, a dead peer's or a malformed one.
func TestGossipHost(t *testing.T) {
	g := newFakeGossip()
	add := func(id, raftAddr, gossipAddr string, st peerStatus) {
		g.peers[raft.ServerID(id)] = &peer{ID: raft.ServerID(id), Status: st, GossipAddr: gossipAddr, Meta: nodeMeta{RaftAddr: raft.ServerAddress(raftAddr)}}
	}
	add("a", "a.svc:8300", "10.0.0.1:8301", peerAlive)
	add("b", "b.svc:8300", "10.0.0.2:8301", peerAlive)
	add("c", "c.svc:8300", "10.0.0.3:8301", peerDead)
	add("d", "d.svc:8300", "not-an-address", peerAlive)
	n := &Node{id: "a", disco: &fakeMember{g: g, id: "a"}}
	for addr, want := range map[string]string{"b.svc:8300": "10.0.0.2", "a.svc:8300": "", "c.svc:8300": "", "d.svc:8300": "", "e.svc:8300": ""} {
		got, ok := n.gossipHost(raft.ServerAddress(addr))
		if got != want || ok != (want != "") {
			t.Errorf("gossipHost(%s) = %q %v, want %q", addr, got, ok, want)
		}
	}
}
