package e2e

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rotationStepTimeout bounds how long one rotation step may take to reach
// every node: they look at the files about once a second.
const rotationStepTimeout = 30 * time.Second

// TestCertRotation runs every rotation docs/OPERATIONS.md describes on a
// live three-node cluster, with the commands an operator runs and without
// restarting anything: the CA (bundle, new node certificates, old CA
// dropped) and the gossip key (added, promoted, old one dropped). Each
// step must reach every node (its log says so) before the next. Then the
// cluster still takes a forwarded write, and a node restarted with only
// the new files (new CA alone, new certificate, new gossip key alone)
// rejoins Raft and gossip: the running nodes really switched, on both
// sides of the handshake and in gossip. The expiry metric follows.
func TestCertRotation(t *testing.T) {
	c := StartCluster(t, 3)
	leader := c.WaitStable(t, c.Nodes...)
	mustStatus(t, "a write before the rotations", leader.Do(t, "PUT", "/rotation.json", `"before"`), 200)

	step := func(what, logLine string, args ...string) {
		t.Helper()
		before := map[*Node]int{}
		for _, n := range c.Nodes {
			before[n] = strings.Count(n.Logs(), logLine)
		}
		if code, out := Run(t, append([]string{"certs"}, args...)...); code != 0 {
			t.Fatalf("arbor certs %s: exit %d\n%s", strings.Join(args, " "), code, out)
		}
		var last string
		poll(t, rotationStepTimeout, what+" to reach every node", func() bool {
			for _, n := range c.Nodes {
				if strings.Count(n.Logs(), logLine) <= before[n] {
					last = n.Name + " has not logged " + strconv.Quote(logLine)
					return false
				}
			}
			return true
		}, func() string { return last })
	}

	step("the bundle of both CAs", "TLS CA reloaded", "rotate-ca", "--dir", c.PKI)
	for _, n := range c.Nodes {
		n.retrust(t) // the test's clients, too, trust both CAs from here on
	}
	step("the node certificates from the new CA", "TLS certificate reloaded", "renew", "--dir", c.PKI)
	step("the new CA alone", "TLS CA reloaded", "rotate-ca", "--dir", c.PKI, "--drop-old")
	step("a second gossip key", "gossip keys reloaded", "gossip-key", "--dir", c.PKI)
	step("the new gossip key in use", "gossip keys reloaded", "gossip-key", "--dir", c.PKI, "--promote")
	step("the old gossip key dropped", "gossip keys reloaded", "gossip-key", "--dir", c.PKI, "--drop-old")
	for _, n := range c.Nodes {
		n.retrust(t)
	}

	leader = c.WaitStable(t, c.Nodes...)
	others := c.Others(leader)
	writeUntilOK(t, others[0], "/rotation.json", `"after"`, rotationStepTimeout)

	restarted := others[1]
	restarted.Kill(t)
	restarted.Restart(t)
	c.WaitStable(t, c.Nodes...)
	var last string
	poll(t, clusterReadyTimeout, "every member alive in gossip, as the restarted node and the leader see it", func() bool {
		for _, n := range []*Node{restarted, leader} {
			st, ok := n.Status()
			if !ok || len(st.Members) != len(c.Nodes) {
				last = fmt.Sprintf("%s: %d members", n.Name, len(st.Members))
				return false
			}
			for _, m := range st.Members {
				if m.Health != "alive" {
					last = fmt.Sprintf("%s sees %s %s", n.Name, m.ID, m.Health)
					return false
				}
			}
		}
		return true
	}, func() string { return last })
	wantResponse(t, "the forwarded write, read on the restarted node", restarted.Do(t, "GET", "/rotation.json", ""), 200, `"after"`)

	newCA := readCertificate(t, filepath.Join(c.PKI, "ca.pem"))
	for _, n := range []*Node{leader, restarted} {
		if got := expiryGauge(t, n, "ca"); got != newCA.NotAfter.Unix() {
			t.Errorf("%s: ca expiry %d, want the new CA's %d", n.Name, got, newCA.NotAfter.Unix())
		}
		if got := expiryGauge(t, n, "node"); got <= 0 || got > newCA.NotAfter.Unix() {
			t.Errorf("%s: node certificate expiry %d", n.Name, got)
		}
	}
}

// retrust rebuilds n's HTTPS client from its trust file as the file is now
// (the harness reads it once per process start).
func (n *Node) retrust(t testing.TB) {
	t.Helper()
	client, err := NewClient(n.trustFile)
	if err != nil {
		t.Fatalf("%s: %v", n.Name, err)
	}
	n.mu.Lock()
	n.client = client
	n.mu.Unlock()
}

// readCertificate reads the first certificate of a PEM file.
func readCertificate(t testing.TB, file string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatalf("%s: no PEM", file)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return c
}

// expiryGauge reads arbor_certificate_expiry_timestamp_seconds{cert=…}
// from n's /metrics.
func expiryGauge(t testing.TB, n *Node, cert string) int64 {
	t.Helper()
	r := n.Do(t, "GET", "/metrics", "")
	prefix := `arbor_certificate_expiry_timestamp_seconds{cert="` + cert + `"} `
	for _, line := range strings.Split(r.Body, "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("%s: %q: %v", n.Name, line, err)
			}
			return int64(f)
		}
	}
	t.Fatalf("%s: /metrics has no %s", n.Name, strings.TrimSpace(prefix))
	return 0
}
