package selfsigned

import (
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"
)

func TestNewIsValidForItsHosts(t *testing.T) {
	now := time.Now()
	certPEM, keyPEM, err := New([]string{"localhost", "127.0.0.1"}, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"localhost", "127.0.0.1"} {
		if err := leaf.VerifyHostname(h); err != nil {
			t.Errorf("%s: %v", h, err)
		}
	}
	if !leaf.NotAfter.Equal(now.Add(time.Hour).Truncate(time.Second)) && leaf.NotAfter.Sub(now) > time.Hour {
		t.Errorf("valid until %s", leaf.NotAfter)
	}
}
