//go:build abuse

package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// probeTLSStorm: 5,000 new TLS connections to the leader, as fast as 64
// clients can make them (each closed once its handshake is done), as
// thousands of clients reconnecting at once would. The leader keeps its
// seat and the canary its bound: the handshakes compute in at most half
// the cores (cmd/arbor/tlsgate.go).
func probeTLSStorm(t *testing.T, c *Cluster) {
	leader, _, term := settled(t, c)
	pool := x509.NewCertPool()
	pem, err := os.ReadFile(c.PKI + "/ca.pem")
	if err != nil || !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("CA: %v", err)
	}
	k := startCanary(t, c)
	k.waitStarted(t)
	const total = 5000
	var next, done, failed atomic.Int64
	deadline := time.Now().Add(2 * time.Minute) // bounded whatever happens
	start := time.Now()
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			d := &net.Dialer{Timeout: 10 * time.Second}
			for next.Add(1) <= total && time.Now().Before(deadline) {
				cn, err := tls.DialWithDialer(d, "tcp", leader.Addr(), &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12})
				if err != nil {
					failed.Add(1)
					continue
				}
				cn.Close()
				done.Add(1)
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	k.finish(t, "5,000 TLS handshakes")
	t.Logf("%d handshakes in %s (%.0f/s), %d failed", done.Load(), took.Round(time.Millisecond), float64(done.Load())/took.Seconds(), failed.Load())
	if done.Load() < total*9/10 {
		t.Errorf("only %d of %d TLS connections completed", done.Load(), total)
	}
	healthy(t, c, "TLS storm", term)
}
