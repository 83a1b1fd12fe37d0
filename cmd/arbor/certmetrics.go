package main

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// certExpiryDesc is the one metric certExpiryCollector exports.
var certExpiryDesc = prometheus.NewDesc(
	"arbor_certificate_expiry_timestamp_seconds",
	"When a certificate in use stops being valid (its NotAfter), in Unix seconds: cert=\"node\" is the one this node "+
		"presents (HTTPS and mutual TLS), cert=\"ca\" the first to expire of the --tls-ca certificates it trusts. "+
		"Follows reloads from disk. Alert well before it: time() > arbor_certificate_expiry_timestamp_seconds - 30*86400.",
	[]string{"cert"}, nil,
)

// certExpiryCollector reads the expiry of the certificates in use at
// every scrape, so a certificate reloaded from disk shows at once with
// nothing to update.
type certExpiryCollector struct {
	node func() time.Time // the served certificate's NotAfter
	ca   func() time.Time // nil without --tls-ca
}

// newCertExpiryCollector exports certs' expiry and, when ca is not nil,
// the CA's.
func newCertExpiryCollector(certs *certReloader, ca *caReloader) prometheus.Collector {
	c := &certExpiryCollector{node: func() time.Time { return certs.leaf().NotAfter }}
	if ca != nil {
		c.ca = ca.notAfter
	}
	return c
}

// Describe implements prometheus.Collector.
func (c *certExpiryCollector) Describe(ch chan<- *prometheus.Desc) { ch <- certExpiryDesc }

// Collect implements prometheus.Collector.
func (c *certExpiryCollector) Collect(ch chan<- prometheus.Metric) {
	emit := func(label string, t time.Time) {
		ch <- prometheus.MustNewConstMetric(certExpiryDesc, prometheus.GaugeValue, float64(t.Unix()), label)
	}
	emit("node", c.node())
	if c.ca != nil {
		emit("ca", c.ca())
	}
}
