package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/arbordb/arbor/cmd/arbor-chaos/internal/nemesis"
	"github.com/arbordb/arbor/cmd/arbor-chaos/internal/report"
	"github.com/arbordb/arbor/cmd/internal/checks"
	"github.com/arbordb/arbor/cmd/internal/client"
	"github.com/arbordb/arbor/cmd/internal/history"
	"github.com/arbordb/arbor/cmd/internal/model"
	"github.com/arbordb/arbor/cmd/internal/testcluster"
	"github.com/arbordb/arbor/cmd/internal/workload"
)

// cleanupTimeout bounds the removal of everything a run started; it runs
// on a fresh context, also after an interrupt.
const cleanupTimeout = 3 * time.Minute

// run carries out one chaos run and returns the exit status.
func run(ctx context.Context, cfg config, out io.Writer) int {
	dir, err := cfg.outDir()
	if err != nil {
		fmt.Fprintln(out, "arbor-chaos:", err)
		return exitSetup
	}
	backend, err := chooseBackend(ctx, &cfg, dir)
	if err != nil {
		fmt.Fprintln(out, "arbor-chaos:", err)
		return exitSetup
	}
	faults, err := nemesis.ParseFaults(cfg.Faults, backend.Partitions())
	if err != nil {
		fmt.Fprintln(out, "arbor-chaos: -faults:", err)
		return exitSetup
	}
	plan := nemesis.Plan(cfg.Seed, faults, cfg.Duration)
	sum := report.Summary{
		Replay:   cfg.replay(backend.Name()),
		Seed:     cfg.Seed,
		Backend:  backend.Name(),
		Duration: cfg.Duration,
		Dir:      dir,
		Faults:   faults,
	}
	fmt.Fprintf(out, "arbor-chaos: seed %d, backend %s, duration %s\n", cfg.Seed, backend.Name(), cfg.Duration)
	fmt.Fprintf(out, "arbor-chaos: report directory %s\n", dir)
	fmt.Fprintf(out, "arbor-chaos: replay with: %s\n", sum.Replay)
	sched, err := os.Create(filepath.Join(dir, "schedule.txt"))
	if err != nil {
		fmt.Fprintln(out, "arbor-chaos:", err)
		return exitSetup
	}
	defer sched.Close()
	writePlan(io.MultiWriter(out, sched), cfg, plan)

	// From here on, whatever happens, everything started is removed —
	// once the logs are saved, before the (possibly long) checks, and in
	// any case on the way out.
	cleanup := func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if err := backend.Cleanup(cctx); err != nil {
			fmt.Fprintln(out, "arbor-chaos: CLEANUP FAILED:", err)
		}
	}
	defer cleanup()

	fmt.Fprintf(out, "arbor-chaos: starting three %s nodes …\n", backend.Name())
	if err := backend.Setup(ctx); err != nil {
		return finishSetupError(ctx, out, backend, dir, sum, fmt.Errorf("setup: %w", err))
	}
	ca, err := client.LoadCA(backend.CAFile())
	if err != nil {
		return finishSetupError(ctx, out, backend, dir, sum, err)
	}
	ccfg := client.Config{Endpoints: backend.Endpoints(), CA: ca, Secret: adminSecret(backend), Timeout: cfg.RequestTimeout}
	admin := client.New(client.Config{Endpoints: ccfg.Endpoints, CA: ca, Secret: ccfg.Secret, Timeout: 5 * time.Second})
	defer admin.Close()

	nem := &nemesis.Nemesis{
		B:              backend,
		Admin:          admin,
		Log:            io.MultiWriter(out, sched),
		RecoverTimeout: cfg.RecoverTimeout,
		Seed:           cfg.Seed,
	}
	took, err := nem.AwaitStable(ctx, cfg.StartTimeout)
	if err != nil {
		return finishSetupError(ctx, out, backend, dir, sum, fmt.Errorf("the new cluster did not elect a leader within %s: %w", cfg.StartTimeout, err))
	}
	// Time zero of the history and of the fault events: the workload's
	// start.
	rec := history.NewRecorder()
	nem.Clock = func() time.Duration { return time.Duration(rec.Now()) }
	// The stream watchers run from before the first write until the
	// final state is settled.
	watchCtx, stopWatchers := context.WithCancel(ctx)
	defer stopWatchers()
	watchers := startWatchers(watchCtx, out, cfg, ccfg, ca, rec)
	present := startPresence(ctx, cfg, ccfg, backend.Nodes())
	fmt.Fprintf(out, "arbor-chaos: cluster ready in %s; workload (%d clients), nemesis and %d stream watchers for %s\n", took.Round(time.Millisecond), cfg.Workload.Clients, cfg.Watchers, cfg.Duration)

	wcfg := cfg.Workload
	wcfg.Nodes = backend.Nodes()
	wcfg.Client = ccfg
	wcfg.Seed = cfg.Seed
	runCtx, cancel := context.WithTimeout(ctx, cfg.Duration)
	var wg sync.WaitGroup
	wg.Go(func() { workload.Run(runCtx, wcfg, rec) })
	wg.Go(func() { nem.Run(runCtx, ctx, plan) })
	wg.Wait()
	cancel()
	sum.Events = nem.Events()
	held := present.stop(dir)

	if ctx.Err() != nil {
		fmt.Fprintln(out, "arbor-chaos: interrupted; saving the history and cleaning up")
		saveRun(ctx, out, backend, dir, rec.Ops(), sum.Events)
		return exitInt
	}

	// Quiescence: every fault healed, every node up and ready.
	extra := []checks.Result{finalRecovery(ctx, nem, cfg.RecoverTimeout)}
	extra = append(extra, present.check(ctx, admin, backend.Nodes(), held, cfg.RecoverTimeout)...)
	fmt.Fprintln(out, "arbor-chaos: quiescence: waiting for the replicas to converge")
	extra = append(extra, checks.Converge(ctx, admin, backend.Nodes(), dir, cfg.RecoverTimeout))
	workload.FinalReads(ctx, ccfg, rec, backend.Nodes(), wcfg.Clients)
	streams := settleWatchers(ctx, out, watchers, admin, backend.Nodes(), dir, cfg.RecoverTimeout)
	// Read while every node still runs; a node restarted by a fault lost
	// its count, and the log scan below finds its panics instead.
	extra = append(extra, checks.PanicsRecovered(ctx, admin, backend.Nodes()))

	ops := rec.Ops()
	saveRun(ctx, out, backend, dir, ops, sum.Events)
	cleanup()
	extra = append(extra, checks.Logs(filepath.Join(dir, "logs")))

	fmt.Fprintf(out, "arbor-chaos: checking %d operations …\n", len(ops))
	sum.Ops = ops
	sum.Linear = model.Check(ops, model.Options{Timeout: cfg.CheckTimeout, VizDir: filepath.Join(dir, "viz")})
	sum.Checks = append(historyChecks(ops, len(backend.Nodes())), extra...)
	var streamResults []checks.Result
	sum.Streams, streamResults = streamChecks(ops, streams)
	sum.Checks = append(sum.Checks, streamResults...)
	return finish(out, dir, sum, cfg.Keep)
}

// historyChecks are the checks that need only the history.
func historyChecks(ops []history.Op, nodes int) []checks.Result {
	return []checks.Result{
		checks.AckedWritesPresent(ops, nodes),
		checks.PushKeys(ops),
		checks.ETags(ops),
		checks.UnexpectedAnswers(ops),
	}
}

// chooseBackend builds the backend -backend names; auto is docker when a
// daemon answers and has the image, else processes.
func chooseBackend(ctx context.Context, cfg *config, dir string) (nemesis.Backend, error) {
	opts := nemesis.NodeOptions{
		AdminSecret:       newSecret(),
		RaftTimeout:       cfg.RaftTimeout,
		WriteTimeout:      cfg.WriteTimeout,
		SnapshotThreshold: cfg.SnapshotThreshold,
		TrailingLogs:      cfg.TrailingLogs,
		Extra:             streamNodeFlags(*cfg),
	}
	name := cfg.Backend
	if name == "auto" {
		name = "process"
		if testcluster.DockerAvailable(ctx) && testcluster.ImageExists(ctx, cfg.Image) == nil {
			name = "docker"
		}
	}
	switch name {
	case "docker":
		return &nemesis.Docker{Image: cfg.Image, Dir: dir, Opts: opts, RunID: newRunID(), GossipPort: cfg.GossipPort}, nil
	default:
		bin, err := filepath.Abs(cfg.Arbor)
		if err != nil {
			return nil, err
		}
		if _, err := os.Stat(bin); err != nil {
			return nil, fmt.Errorf("arbor binary: %w (make build, or -arbor)", err)
		}
		return &nemesis.Process{Binary: bin, Dir: dir, Opts: opts}, nil
	}
}

// adminSecret returns the secret the backend's nodes accept.
func adminSecret(b nemesis.Backend) string {
	switch b := b.(type) {
	case *nemesis.Docker:
		return b.Opts.AdminSecret
	case *nemesis.Process:
		return b.Opts.AdminSecret
	}
	return ""
}

func newSecret() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// newRunID names this run's containers and networks (with its label).
func newRunID() string {
	var b [4]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// writePlan prints the fault schedule that fits in the run.
func writePlan(w io.Writer, cfg config, plan []nemesis.Step) {
	fmt.Fprintf(w, "fault schedule (seed %d; steps start after the previous fault is healed and the cluster recovered):\n", cfg.Seed)
	var at time.Duration
	for i, s := range plan {
		if at > cfg.Duration {
			break
		}
		fmt.Fprintf(w, "  step %-3d %s\n", i, s)
		at += s.Quiet + s.Hold
	}
}

// saveRun writes the history and the events and collects the node logs.
func saveRun(ctx context.Context, out io.Writer, b nemesis.Backend, dir string, ops []history.Op, events []nemesis.Event) {
	if err := history.WriteFile(filepath.Join(dir, "history.jsonl"), ops); err != nil {
		fmt.Fprintln(out, "arbor-chaos:", err)
	}
	if ev, err := json.MarshalIndent(events, "", "  "); err == nil {
		os.WriteFile(filepath.Join(dir, "events.json"), ev, 0o644)
	}
	logs := filepath.Join(dir, "logs")
	os.MkdirAll(logs, 0o755)
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	if err := b.CollectLogs(lctx, logs); err != nil {
		fmt.Fprintln(out, "arbor-chaos: collecting logs:", err)
	}
}

// finishSetupError reports a run that could not start.
func finishSetupError(ctx context.Context, out io.Writer, b nemesis.Backend, dir string, sum report.Summary, err error) int {
	saveRun(ctx, out, b, dir, nil, nil)
	sum.Setup = err
	writeSummary(out, dir, sum)
	return exitSetup
}

// finish writes the report and returns the exit status.
func finish(out io.Writer, dir string, sum report.Summary, keep bool) int {
	writeSummary(out, dir, sum)
	if sum.Pass() {
		if !keep {
			// The data directories are only worth their space when
			// something is to be investigated.
			os.RemoveAll(filepath.Join(dir, "nodes"))
		}
		return exitPass
	}
	return exitFail
}

func writeSummary(out io.Writer, dir string, sum report.Summary) {
	f, err := os.Create(filepath.Join(dir, "summary.txt"))
	if err != nil {
		fmt.Fprintln(out, "arbor-chaos:", err)
		sum.Write(out)
		return
	}
	defer f.Close()
	fmt.Fprintln(out)
	sum.Write(io.MultiWriter(out, f))
	fmt.Fprintf(out, "\nreport: %s\n", filepath.Join(dir, "summary.txt"))
}
