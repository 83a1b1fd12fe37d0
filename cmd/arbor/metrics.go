package main

import (
	"fmt"

	"github.com/arbordb/arbor/cluster"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// newRegistry builds the process's own Prometheus registry (not the global
// default, so nothing registers behind our back) with the Go runtime,
// process and cluster node collectors and the extra ones (certificate
// expiry); the HTTP API adds its own.
func newRegistry(node *cluster.Node, extra ...prometheus.Collector) (*prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	for _, c := range []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register runtime metrics: %w", err)
		}
	}
	if err := node.RegisterMetrics(reg); err != nil {
		return nil, fmt.Errorf("register cluster metrics: %w", err)
	}
	for _, c := range extra {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register metrics: %w", err)
		}
	}
	return reg, nil
}
