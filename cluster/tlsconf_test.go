package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// handshake runs one mutual TLS handshake over loopback TCP between a
// client and a server node configuration and returns both sides' errors.
func handshake(t *testing.T, client, server *TLSConfig) error {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	srvErr := make(chan error, 1)
	go func() {
		raw, err := ln.Accept()
		if err != nil {
			srvErr <- err
			return
		}
		defer raw.Close()
		_ = raw.SetDeadline(time.Now().Add(10 * time.Second))
		c := tls.Server(raw, server.serverTLS())
		err = c.Handshake()
		if err == nil {
			// TLS 1.3: the client's certificate is checked after the
			// client has finished; a byte proves the server accepted it.
			_, err = c.Write([]byte{1})
		}
		srvErr <- err
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	_ = raw.SetDeadline(time.Now().Add(10 * time.Second))
	c := tls.Client(raw, client.clientTLS())
	cliErr := c.Handshake()
	if cliErr == nil {
		_, cliErr = c.Read(make([]byte, 1))
	}
	return errors.Join(cliErr, <-srvErr)
}

// TestTLSRootsReadPerHandshake: the CA pool is asked for at every
// handshake, on both sides, so a CA rotation (trust both, switch the node
// certificates, drop the old CA) takes effect on the next connection, and
// mutual TLS stays strict throughout.
func TestTLSRootsReadPerHandshake(t *testing.T) {
	oldCA, newCA := newTestCA(t), newTestCA(t)
	var roots atomic.Pointer[x509.CertPool]
	current := func() *x509.CertPool { return roots.Load() }
	oldNode, newNode := oldCA.tls("old"), newCA.tls("new")
	oldNode.Roots, newNode.Roots = current, current
	type pair struct {
		name           string
		client, server *TLSConfig
		ok             bool
	}
	check := func(phase string, pairs ...pair) {
		t.Helper()
		for _, p := range pairs {
			err := handshake(t, p.client, p.server)
			if p.ok && err != nil {
				t.Errorf("%s: %s: %v", phase, p.name, err)
			}
			if !p.ok && err == nil {
				t.Errorf("%s: %s: handshake succeeded, want it refused", phase, p.name)
			}
		}
	}

	roots.Store(oldCA.pool)
	check("old CA only",
		pair{"old to old", oldNode, oldNode, true},
		pair{"new client to old server", newNode, oldNode, false},
		pair{"old client to new server", oldNode, newNode, false},
	)

	bundle := x509.NewCertPool()
	bundle.AddCert(oldCA.cert)
	bundle.AddCert(newCA.cert)
	roots.Store(bundle)
	check("both CAs",
		pair{"old to old", oldNode, oldNode, true},
		pair{"new client to old server", newNode, oldNode, true},
		pair{"old client to new server", oldNode, newNode, true},
		pair{"new to new", newNode, newNode, true},
	)

	roots.Store(newCA.pool)
	check("new CA only",
		pair{"new to new", newNode, newNode, true},
		pair{"old client to new server", oldNode, newNode, false},
		pair{"new client to old server", newNode, oldNode, false},
	)

	// No pool is no trust at all, never the system roots.
	roots.Store(nil)
	check("no pool", pair{"new to new", newNode, newNode, false})
}

// TestTLSAcceptsIntermediates: a node certificate from an intermediate CA
// (what cert-manager and corporate CAs often hand out) is accepted when
// the node sends the intermediate after its certificate and the peers
// trust the root.
func TestTLSAcceptsIntermediates(t *testing.T) {
	root := newTestCA(t)
	inter := newTestCAUnder(t, root)
	der := inter.cert.Raw
	node := inter.tls("leaf")
	leafOnly, err := node.Certificate()
	if err != nil {
		t.Fatal(err)
	}
	chain := &tls.Certificate{Certificate: [][]byte{leafOnly.Certificate[0], der}, PrivateKey: leafOnly.PrivateKey}
	node.Roots = StaticRoots(root.pool)
	withChain := &TLSConfig{Roots: node.Roots, Certificate: func() (*tls.Certificate, error) { return chain, nil }}
	if err := handshake(t, withChain, withChain); err != nil {
		t.Errorf("leaf + intermediate, root trusted: %v", err)
	}
	if err := handshake(t, node, withChain); err == nil {
		t.Error("a leaf sent without its intermediate was accepted")
	}
}
