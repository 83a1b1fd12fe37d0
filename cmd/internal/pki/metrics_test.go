package pki

import (
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// expiryGauges scrapes reg's certificate expiry gauges by label.
func expiryGauges(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "arbor_certificate_expiry_timestamp_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			got[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
		}
	}
	return got
}

func TestCertExpiryMetric(t *testing.T) {
	dir := t.TempDir()
	mustInit(t, dir, "n1")
	certs, err := NewCertReloader(filepath.Join(dir, "n1.pem"), filepath.Join(dir, "n1-key.pem"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ca, err := NewCAReloader(filepath.Join(dir, "ca.pem"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewExpiryCollector(certs, ca))
	got := expiryGauges(t, reg)
	if got["node"] != float64(certs.Leaf().NotAfter.Unix()) || got["ca"] != float64(ca.notAfter().Unix()) || len(got) != 2 {
		t.Fatalf("gauges %v; want node %d, ca %d", got, certs.Leaf().NotAfter.Unix(), ca.notAfter().Unix())
	}

	// A renewal reaches the gauge with the reload, nothing else.
	clock := &fakeClock{t: time.Now()}
	certs.now = clock.now
	ca2, err := loadCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := Renew(dir, nil, nil, ca2.cert.NotAfter.Add(-24*time.Hour), io.Discard); err != nil {
		t.Fatal(err)
	}
	bumpMtime(t, filepath.Join(dir, "n1.pem"), 1)
	clock.t = clock.t.Add(CheckInterval)
	certs.mu.Lock()
	certs.nextCheck = clock.t
	certs.mu.Unlock()
	if _, err := certs.GetCertificate(nil); err != nil {
		t.Fatal(err)
	}
	if got := expiryGauges(t, reg); got["node"] != float64(ca2.cert.NotAfter.Unix()) {
		t.Errorf("after renewal the node gauge is %v, want %d", got["node"], ca2.cert.NotAfter.Unix())
	}

	// Without --tls-ca there is no ca series.
	reg = prometheus.NewRegistry()
	reg.MustRegister(NewExpiryCollector(certs, nil))
	if got := expiryGauges(t, reg); len(got) != 1 {
		t.Errorf("without a CA: %v", got)
	}
}
