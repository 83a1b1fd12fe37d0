package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestServesJSONOverTLS(t *testing.T) {
	n := StartReadyNode(t, Options{})

	if r := n.Do(t, "PUT", "/smoke/greeting.json", `{"text":"hello","n":5}`); r.Status != http.StatusOK || r.Body != `{"n":5,"text":"hello"}` {
		t.Errorf("PUT: %d %s", r.Status, r.Body)
	}
	if r := n.Do(t, "GET", "/smoke.json", ""); r.Status != http.StatusOK || r.Body != `{"greeting":{"n":5,"text":"hello"}}` {
		t.Errorf("GET: %d %s", r.Status, r.Body)
	}
	if r := n.Do(t, "GET", "/smoke/missing.json", ""); r.Status != http.StatusOK || r.Body != "null" {
		t.Errorf("GET missing: %d %s", r.Status, r.Body)
	}
	if r := n.Do(t, "GET", "/livez", ""); r.Status != http.StatusOK {
		t.Errorf("livez: %d %s", r.Status, r.Body)
	}
}

func TestPlainHTTPIsRefused(t *testing.T) {
	n := StartNode(t, Options{})
	resp, err := (&http.Client{Timeout: requestTimeout}).Get("http://" + n.Addr() + "/.json")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("plain HTTP got %d, want 400", resp.StatusCode)
	}
}

func TestSIGTERMExitsZeroAndKeepsData(t *testing.T) {
	n := StartReadyNode(t, Options{})
	if r := n.Do(t, "PUT", "/kept.json", `"yes"`); r.Status != http.StatusOK {
		t.Fatalf("PUT: %d %s", r.Status, r.Body)
	}
	start := time.Now()
	code := n.Stop(t)
	if took := time.Since(start); code != 0 || took > 10*time.Second {
		t.Errorf("SIGTERM: exit code %d after %s, want 0 within 10s", code, took)
	}
	if _, err := os.Stat(filepath.Join(n.DataDir, "http.addr")); !os.IsNotExist(err) {
		t.Errorf("http.addr left behind after a clean stop: %v", err)
	}
	n.Restart(t)
	n.WaitReady(t)
	if r := n.Do(t, "GET", "/kept.json", ""); r.Body != `"yes"` {
		t.Errorf("after restart: %d %s", r.Status, r.Body)
	}
}

// TestKillNineKeepsAcknowledgedWrites crashes a node while writers are
// busy: every write it acknowledged must be there after a restart.
func TestKillNineKeepsAcknowledgedWrites(t *testing.T) {
	n := StartReadyNode(t, Options{})
	const (
		writers      = 4
		maxPerWriter = 5000 // bounds the loop; the kill comes much sooner
		killAfter    = 100  // acknowledged writes before the kill
	)
	var (
		mu    sync.Mutex
		acked = map[string]int{} // key → value acknowledged
		wg    sync.WaitGroup
		ready = make(chan struct{})
		once  sync.Once
	)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range maxPerWriter {
				key := fmt.Sprintf("w%d-%d", w, i)
				r, err := n.TryDo("PUT", "/items/"+key+".json", fmt.Sprint(i))
				if err != nil {
					return // the node is gone
				}
				if r.Status != http.StatusOK {
					t.Errorf("PUT %s: %d %s", key, r.Status, r.Body)
					return
				}
				mu.Lock()
				acked[key] = i
				if len(acked) >= killAfter {
					once.Do(func() { close(ready) })
				}
				mu.Unlock()
			}
		}()
	}
	select {
	case <-ready:
	case <-time.After(readyTimeout):
		t.Fatal("writers did not get enough writes acknowledged")
	}
	n.Kill(t)
	wg.Wait()

	n.Restart(t)
	n.WaitReady(t)
	r := n.Do(t, "GET", "/items.json", "")
	var got map[string]int
	if err := json.Unmarshal([]byte(r.Body), &got); err != nil {
		t.Fatalf("GET /items.json: %d %s: %v", r.Status, r.Body, err)
	}
	for key, v := range acked {
		if gv, ok := got[key]; !ok || gv != v {
			t.Errorf("acknowledged write %s=%d lost (have %d, %v)", key, v, gv, ok)
		}
	}
	t.Logf("%d acknowledged writes survived kill -9 (%d stored)", len(acked), len(got))
}

// TestCertificateRotation replaces the certificate on disk and expects it
// to be served without a restart.
func TestCertificateRotation(t *testing.T) {
	n := StartReadyNode(t, Options{})
	dir := filepath.Join(n.DataDir, "tls")
	certPEM, keyPEM, der := newCertificate(t)
	// Key first, certificate last, each by rename: how a careful rotation
	// writes; the server keeps the old pair until both match.
	writeAtomic(t, filepath.Join(dir, "key.pem"), keyPEM)
	writeAtomic(t, filepath.Join(dir, "cert.pem"), certPEM)

	poll(t, 10*time.Second, "the new certificate to be served", func() bool {
		conn, err := tls.Dial("tcp", n.Addr(), &tls.Config{InsecureSkipVerify: true}) // #nosec: we compare the certificate ourselves
		if err != nil {
			return false
		}
		defer conn.Close()
		return string(conn.ConnectionState().PeerCertificates[0].Raw) == string(der)
	})
	client, err := NewClient(filepath.Join(dir, "cert.pem"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Get(n.URL("/livez"))
	if err != nil {
		t.Fatalf("a client trusting only the new certificate: %v", err)
	}
	resp.Body.Close()
	if !strings.Contains(n.Logs(), "TLS certificate reloaded") {
		t.Errorf("the reload was not logged")
	}
}

// newCertificate makes a self-signed certificate for 127.0.0.1 and returns
// it and its key as PEM, and its DER bytes.
func newCertificate(t *testing.T) (certPEM, keyPEM, der []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err = x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), der
}

func writeAtomic(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}
