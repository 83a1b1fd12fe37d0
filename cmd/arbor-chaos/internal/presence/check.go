package presence

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/arbordb/arbor/cmd/internal/checks"
	"github.com/arbordb/arbor/cmd/internal/client"
)

// Ran is what an operation left at Root/<key>: how many times it ran and
// the server time of its last run (Unix milliseconds).
type Ran struct {
	Runs int   `json:"runs"`
	At   int64 `json:"at"`
}

// Check waits, within timeout, until every registered operation has run,
// reading Root through the nodes in turn (linearizable reads), and then
// judges the records against what ran (Judge).
func Check(ctx context.Context, admin *client.Client, nodes []string, root string, records []Record, timeout time.Duration) checks.Result {
	deadline := time.Now().Add(timeout)
	var ran map[string]Ran
	var lastErr error
	for i := 0; ; i++ {
		got, err := read(ctx, admin, nodes[i%len(nodes)], root)
		if err == nil {
			ran, lastErr = got, nil
			if allRan(records, ran) {
				break
			}
		} else {
			lastErr = err
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		sleep(ctx, 250*time.Millisecond)
	}
	if ran == nil {
		b := checks.NewBuilder(checkName)
		b.Fail("could not read /%s: %v", root, lastErr)
		return b.Done("no state to judge")
	}
	return Judge(records, ran)
}

const checkName = "presence: every registered onDisconnect ran exactly once, after its connection was last served"

func read(ctx context.Context, admin *client.Client, node, root string) (map[string]Ran, error) {
	r, err := admin.Do(ctx, node, "GET", "/"+root+".json", "")
	if err != nil {
		return nil, err
	}
	if r.Status != 200 {
		return nil, fmt.Errorf("%s: %d %.200s", node, r.Status, r.Body)
	}
	ran := map[string]Ran{}
	if err := json.Unmarshal(r.Body, &ran); err != nil {
		return nil, fmt.Errorf("%s: /%s: %w", node, root, err)
	}
	return ran, nil
}

func allRan(records []Record, ran map[string]Ran) bool {
	for _, rec := range records {
		if rec.Reg == Registered && ran[rec.Key].Runs == 0 {
			return false
		}
	}
	return true
}

// Judge holds the records against what ran: a registered operation ran
// exactly once, one of unknown outcome at most once, none before its
// connection was last served, and nothing ran that no watcher asked for.
func Judge(records []Record, ran map[string]Ran) checks.Result {
	b := checks.NewBuilder(checkName)
	byKey := map[string]Record{}
	counts := map[Registration]int{}
	for _, rec := range records {
		byKey[rec.Key] = rec
		counts[rec.Reg]++
		r := ran[rec.Key]
		switch {
		case rec.Reg == Registered && r.Runs != 1:
			b.Fail("%s (held on %s, ended: %s): registered, ran %d times", rec.Key, rec.Node, rec.Ended, r.Runs)
		case r.Runs > 1:
			b.Fail("%s (held on %s, ended: %s): outcome of the registration unknown, ran %d times", rec.Key, rec.Node, rec.Ended, r.Runs)
		}
		if r.Runs > 0 && r.At < rec.Served {
			b.Fail("%s (held on %s, ended: %s): ran at %d, %d ms before its connection was last served", rec.Key, rec.Node, rec.Ended, r.At, rec.Served-r.At)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(ran)) {
		if _, ok := byKey[key]; !ok {
			b.Fail("%s ran (%d times), but no watcher registered it", key, ran[key].Runs)
		}
	}
	return b.Done(fmt.Sprintf("%d connections held: %d registrations answered ok, %d of unknown outcome (%d of those ran)",
		len(records), counts[Registered], counts[Unknown], ranUnknown(records, ran)))
}

func ranUnknown(records []Record, ran map[string]Ran) int {
	n := 0
	for _, rec := range records {
		if rec.Reg == Unknown && ran[rec.Key].Runs > 0 {
			n++
		}
	}
	return n
}
