package pki

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// expiryDesc is the one metric expiryCollector exports.
var expiryDesc = prometheus.NewDesc(
	"arbor_certificate_expiry_timestamp_seconds",
	"When a certificate in use stops being valid (its NotAfter), in Unix seconds: cert=\"node\" is the one this node "+
		"presents (HTTPS and mutual TLS), cert=\"ca\" the first to expire of the --tls-ca certificates it trusts. "+
		"Follows reloads from disk. Alert well before it: time() > arbor_certificate_expiry_timestamp_seconds - 30*86400.",
	[]string{"cert"}, nil,
)

// expiryCollector reads the expiry of the certificates in use at
// every scrape, so a certificate reloaded from disk shows at once with
// nothing to update.
type expiryCollector struct {
	node func() time.Time // the served certificate's NotAfter
	ca   func() time.Time // nil without --tls-ca
}

// NewExpiryCollector exports certs' expiry and, when ca is not nil,
// the CA's.
func NewExpiryCollector(certs *CertReloader, ca *CAReloader) prometheus.Collector {
	c := &expiryCollector{node: func() time.Time { return certs.Leaf().NotAfter }}
	if ca != nil {
		c.ca = ca.notAfter
	}
	return c
}

// Describe implements prometheus.Collector.
func (c *expiryCollector) Describe(ch chan<- *prometheus.Desc) { ch <- expiryDesc }

// Collect implements prometheus.Collector.
func (c *expiryCollector) Collect(ch chan<- prometheus.Metric) {
	emit := func(label string, t time.Time) {
		ch <- prometheus.MustNewConstMetric(expiryDesc, prometheus.GaugeValue, float64(t.Unix()), label)
	}
	emit("node", c.node())
	if c.ca != nil {
		emit("ca", c.ca())
	}
}
