package main

import (
	"context"
	"time"

	"github.com/arbordb/arbor/cmd/internal/pki"
)

// pollReloads calls every check twice per pki.CheckInterval until ctx
// ends (twice, because the reloaders themselves look at most once per
// interval, and a tick that came a hair early would otherwise double the
// delay). The certificate and CA reloaders otherwise look at their files
// only when a handshake asks, and a quiet node (pooled connections between
// nodes, no clients) might not shake hands for hours: polling makes a
// rollout show in the log and in the expiry metric within a second, which
// is how an operator knows a rotation step has reached the node.
func pollReloads(ctx context.Context, checks ...func()) {
	t := time.NewTicker(pki.CheckInterval / 2)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			for _, check := range checks {
				check()
			}
		}
	}
}
