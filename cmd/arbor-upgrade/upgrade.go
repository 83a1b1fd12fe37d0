package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/arbordb/arbor/cmd/internal/checks"
	"github.com/arbordb/arbor/cmd/internal/client"
	"github.com/arbordb/arbor/cmd/internal/history"
	"github.com/arbordb/arbor/cmd/internal/model"
	"github.com/arbordb/arbor/cmd/internal/workload"
)

// options are the command line's settings.
type options struct {
	OldBin, NewBin     string
	OldImage, NewImage string
	Docker             string // auto, yes or no
	Dir                string
	Keep               bool
	Verbose            bool
	Clients            int
	Rate               int
	Registers          int
	Settle             time.Duration
	Dwell              time.Duration
	MaxGap             time.Duration
	StepTimeout        time.Duration
	Timeout            time.Duration
	CheckTimeout       time.Duration
}

// releases are the two releases' names, as their binaries report them.
type releases struct{ Old, New string }

// step is one node's replacement.
type step struct {
	Node string
	// Leader is the leader when the step began.
	Leader string
	// Stop is SIGTERM → exited; Ready is started → /readyz 200; Healthy
	// is SIGTERM → the whole cluster healthy again (the step's length).
	Stop, Ready, Healthy time.Duration
	Window               window
	Writes               writeStats
	// Snapshot is the newest snapshot the old release left in the data
	// directory, SnapshotErr why there is none.
	Snapshot    snapFile
	SnapshotErr error
}

// result is everything one variant found.
type result struct {
	Variant  string
	Releases releases
	Dir      string
	Steps    []step
	// Baseline are the writes before the first step, Overall all of them.
	Baseline, Overall writeStats
	Ops, Reads        int
	// Linear is porcupine's verdict per key; Checks the chaos runner's
	// other checks of the history and the replicas.
	Linear []model.KeyResult
	Checks []checks.Result
	// Formats are the checks of crossing the new entry and snapshot
	// formats (formats.go).
	Formats []formatCheck
	// OldEntry and OldSnapshot are the newest entry and snapshot formats
	// the reference applies, as its /status advertises them.
	OldEntry, OldSnapshot int
	Notes                 []string
	Failures              []string
	// clock is the load's clock, once it runs.
	clock func() time.Duration
}

func (r *result) fail(format string, args ...any) {
	r.Failures = append(r.Failures, fmt.Sprintf(format, args...))
}

// runVariant runs the whole rolling upgrade on b, whose files are in dir,
// and checks it.
func runVariant(ctx context.Context, o options, b backend, dir string, rel releases, secret string) *result {
	r := &result{Variant: b.name(), Releases: rel, Dir: dir}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	defer func() {
		// Cleanup runs even when ctx has ended (a timeout, a ^C).
		cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer ccancel()
		if err := b.cleanup(cctx); err != nil {
			r.fail("cleanup: %v", err)
		}
	}()

	if err := b.setup(ctx); err != nil {
		r.fail("setup: %v", err)
		return r
	}
	ca, err := client.LoadCA(b.caFile())
	if err != nil {
		r.fail("%v", err)
		return r
	}
	ccfg := clientConfig(b.addrs(), ca, secret)
	admin := adminClient{client.New(ccfg)}
	defer admin.Close()
	leader, err := waitHealthy(ctx, admin, o.StepTimeout)
	if err != nil {
		r.fail("the old cluster: %v", err)
		return r
	}
	for _, id := range nodes {
		if got, err := b.release(ctx, id); err != nil || got != rel.Old {
			r.fail("%s should run the old release %s before the upgrade: %q %v", id, rel.Old, got, err)
			return r
		}
	}
	if err := r.readOldFormats(ctx, admin, leader); err != nil {
		r.fail("the old cluster: %v", err)
		return r
	}

	// The chaos runner's workload (cmd/internal/workload): reads,
	// overwrites by PUT and PATCH, compare-and-sets, increments and
	// appends — every entry kind crosses the mixed-version cluster.
	wcfg := workload.DefaultConfig()
	wcfg.Clients, wcfg.Roaming = o.Clients, min(2, o.Clients)
	wcfg.Rate = float64(o.Rate) / float64(o.Clients)
	wcfg.Registers = o.Registers
	wcfg.Nodes, wcfg.Client, wcfg.Seed = nodes, ccfg, uint64(time.Now().UnixNano())
	l := startLoad(ctx, wcfg)
	r.clock = func() time.Duration { return time.Duration(l.since()) }
	finished := false
	var ops []history.Op
	finish := func() {
		if !finished {
			ops, finished = l.finish(), true
		}
	}
	defer func() {
		if !finished { // a step failed: keep what was recorded, for a person
			finish()
			if err := history.WriteFile(filepath.Join(r.Dir, "history.jsonl"), ops); err != nil {
				r.Notes = append(r.Notes, err.Error())
			}
		}
	}()
	if err := pause(ctx, o.Settle); err != nil {
		r.fail("%v", err)
		return r
	}
	baseline := window{0, l.since()}

	remaining := []string{"n3", "n2", "n1"}
	var upgraded []string
	for len(remaining) > 0 {
		id := nextNode(remaining, leader)
		remaining = slices.DeleteFunc(remaining, func(s string) bool { return s == id })
		s, newLeader, err := replace(ctx, o, b, admin, l, id, leader)
		r.Steps = append(r.Steps, s)
		if err != nil {
			r.fail("replacing %s: %v", id, err)
			return r
		}
		leader = newLeader
		upgraded = append(upgraded, id)
		r.checkRestoredOld(ctx, admin, s)
		// Let the mixed-version cluster carry the load a while before
		// the next step, as an operator checking it would.
		if err := pause(ctx, o.Dwell); err != nil {
			r.fail("%v", err)
			return r
		}
		if len(remaining) > 0 {
			r.checkGated(ctx, o, b, admin, upgraded, remaining, leader)
		}
	}
	// Every node on the new release: the new kinds are allowed now.
	rulesSet := r.checkUpgraded(ctx, o, admin, leader)
	if err := pause(ctx, o.Settle); err != nil {
		r.fail("%v", err)
		return r
	}
	finish()

	// Quiet now: wait until every node has applied everything, then
	// cross the formats where the log's growth can be counted, then read
	// every key from every node (recorded, and judged with the rest).
	leader, err = waitHealthy(ctx, admin, o.StepTimeout)
	if err != nil {
		r.fail("after the upgrade: %v", err)
	} else if rulesSet {
		via := follower(leader)
		r.checkChunked(ctx, o, admin, leader, via)
		r.checkRestartWithRules(ctx, o, b, admin, leader, via)
	} else {
		r.skipped(phaseQuiet, "large write as one entry, restart from a snapshot with the rules", "the rules were not set")
	}
	r.check(ctx, o, b, admin, l, ccfg, baseline)
	return r
}

// readOldFormats records the formats the reference applies, from the
// /status of node (an old one), and notes those the run crosses.
func (r *result) readOldFormats(ctx context.Context, admin adminClient, node string) error {
	st, err := admin.status(ctx, node)
	if err != nil {
		return err
	}
	r.OldEntry, r.OldSnapshot = max(st.Versions.EntryFormat, 1), max(st.Versions.SnapshotFormat, 1)
	cross := formatsToCross(r.OldEntry, r.OldSnapshot)
	if cross == "" {
		cross = "none: the reference applies every format this tree writes"
	}
	r.Notes = append(r.Notes, fmt.Sprintf("the reference applies entry format %d and snapshot format %d; formats to cross: %s",
		r.OldEntry, r.OldSnapshot, cross))
	return nil
}

// replace is one step: stop id gracefully, start it on the new release,
// wait for it to be ready and for the cluster to be healthy. It returns
// the step and the leader afterwards.
func replace(ctx context.Context, o options, b backend, admin adminClient, l *load, id, leader string) (step, string, error) {
	s := step{Node: id, Leader: leader}
	s.Window.From = l.since()
	t0 := time.Now()
	if err := b.stop(ctx, id); err != nil {
		s.Window.To = l.since()
		return s, "", err
	}
	s.Stop = time.Since(t0)
	s.Snapshot, s.SnapshotErr = newestSnapshot(b.dataDir(id))
	t1 := time.Now()
	if err := b.startNew(ctx, id); err != nil {
		s.Window.To = l.since()
		return s, "", err
	}
	if err := waitReady(ctx, admin, id, o.StepTimeout); err != nil {
		s.Window.To = l.since()
		return s, "", err
	}
	s.Ready = time.Since(t1)
	newLeader, err := waitHealthy(ctx, admin, o.StepTimeout)
	s.Healthy = time.Since(t0)
	s.Window.To = l.since()
	return s, newLeader, err
}

// keepOrRemove deletes the variant's directory after a success unless
// asked to keep it.
func (r *result) keepOrRemove(keep bool) {
	if keep || len(r.Failures) > 0 {
		return
	}
	if err := os.RemoveAll(r.Dir); err != nil {
		r.Notes = append(r.Notes, "removing "+r.Dir+": "+err.Error())
	}
}
