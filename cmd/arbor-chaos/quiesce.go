package main

import (
	"context"
	"fmt"
	"time"

	"github.com/arbordb/arbor/cmd/arbor-chaos/internal/nemesis"
	"github.com/arbordb/arbor/cmd/internal/checks"
)

// finalRecovery heals whatever is still in place and checks that the
// cluster comes back: every node ready, one leader.
func finalRecovery(ctx context.Context, nem *nemesis.Nemesis, timeout time.Duration) checks.Result {
	b := checks.NewBuilder("recovered after the last fault")
	if err := nem.HealAll(ctx); err != nil {
		b.Fail("healing at the end: %v", err)
	}
	took, err := nem.AwaitStable(ctx, timeout)
	if err != nil {
		b.Fail("not ready with one leader %s after the last heal: %v", timeout, err)
		return b.Done("the cluster did not recover")
	}
	return b.Done(fmt.Sprintf("every node ready with one leader %s after the final heal", took.Round(time.Millisecond)))
}
