package workload

import (
	"context"
	"slices"

	"github.com/arbordb/arbor/cmd/internal/client"
	"github.com/arbordb/arbor/cmd/internal/history"
)

// FinalReads reads every key the workload used from every node, with
// linearizable reads, once the cluster is quiet. They are recorded like
// any operation (as clients after the workload's), so porcupine judges
// them too, and the durability checks compare them with the
// acknowledged writes. A read that gets no answer is retried a few times;
// every attempt stays in the history.
func FinalReads(ctx context.Context, ccfg client.Config, rec *history.Recorder, nodes []string, firstClient int) {
	keys := map[string]history.Kind{}
	for _, op := range rec.Ops() {
		keys[op.Key] = op.Kind
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	slices.Sort(names)
	for i, n := range nodes {
		cl := client.New(ccfg)
		e := &Exec{Client: cl, Recorder: rec, ID: firstClient + i, Final: true}
		for _, k := range names {
			for attempt := 0; attempt < 5 && ctx.Err() == nil; attempt++ {
				if op := e.Read(ctx, n, k, keys[k], false, false); op.Outcome == history.OK {
					break
				}
			}
		}
		cl.Close()
	}
}
