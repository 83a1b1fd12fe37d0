package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	"github.com/arbordb/arbor/cmd/arbor-chaos/internal/presence"
	"github.com/arbordb/arbor/cmd/arbor-chaos/internal/watch"
	"github.com/arbordb/arbor/cmd/internal/checks"
	"github.com/arbordb/arbor/cmd/internal/client"
)

// How long a presence watcher holds a connection before leaving, unless
// a fault ends it first: long enough for a fault to land on many, short
// enough that clients leaving is exercised as often.
const (
	presenceMinHold = 2 * time.Second
	presenceMaxHold = 12 * time.Second
)

// presenceFile is where a run keeps what its presence watchers recorded.
const presenceFile = "presence.json"

// presenceRun is the run's presence watchers; nil when there are none.
type presenceRun struct {
	set    *presence.Set
	client *client.Client
}

// startPresence starts cfg.Presence watchers over the nodes.
func startPresence(ctx context.Context, cfg config, ccfg client.Config, nodes []string) *presenceRun {
	if cfg.Presence == 0 {
		return nil
	}
	c := client.New(ccfg)
	return &presenceRun{client: c, set: presence.Start(ctx, presence.Config{
		Watchers: cfg.Presence, Nodes: nodes, Client: c, Root: watch.PresenceKey,
		MinHold: presenceMinHold, MaxHold: presenceMaxHold, Seed: cfg.Seed,
	})}
}

// stop ends the watchers' connections (their clients leave) and saves
// what they recorded in dir.
func (p *presenceRun) stop(dir string) []presence.Record {
	if p == nil {
		return nil
	}
	records := p.set.Stop()
	p.client.Close()
	if b, err := json.MarshalIndent(records, "", "  "); err == nil {
		_ = os.WriteFile(filepath.Join(dir, presenceFile), b, 0o644)
	}
	return records
}

// check judges what ran once the cluster has recovered: every operation
// of a connection that ended runs within timeout.
func (p *presenceRun) check(ctx context.Context, admin *client.Client, nodes []string, records []presence.Record, timeout time.Duration) []checks.Result {
	if p == nil {
		return nil
	}
	return []checks.Result{presence.Check(ctx, admin, nodes, watch.PresenceKey, records, timeout)}
}
