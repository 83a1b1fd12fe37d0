// Package bench is `arbor bench`: load generation against Arbor, etcd or
// a bare HTTPS handler, with latency histograms, Raft stage timings
// scraped from /metrics, and Markdown reports (docs/PERFORMANCE.md).
package bench

import (
	"context"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/arbordb/arbor/cmd/internal/cliflags"
)

// Exit codes of Run, as the arbor binary's other commands use them.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// Run is `arbor bench`: a load generator for the REST API, for etcd's v3
// JSON gateway (--target etcd) and for a bare HTTPS handler (the ceiling),
// all driven by the same HTTP/1.1 keep-alive client so that the figures
// compare. With --report it prints the comparison table of saved --json
// results instead. It returns the process exit code.
func Run(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseBenchConfig(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		cliflags.Report(stderr, "arbor bench", err)
		return exitUsage
	}
	if cfg.Report != "" {
		if err := printBenchReport(cfg.Report, stdout); err != nil {
			fmt.Fprintf(stderr, "arbor bench: %v\n", err)
			return exitFailure
		}
		return exitOK
	}
	// Ctrl-C ends the run early; what was measured is still reported.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := bench(ctx, cfg, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "arbor bench: %v\n", err)
		if hint := benchHint(err, cfg.Target); hint != "" {
			fmt.Fprintf(stderr, "arbor bench: %s\n", hint)
		}
		return exitFailure
	}
	write := res.writeText
	if cfg.JSON {
		write = res.writeJSON
	}
	if err := write(stdout); err != nil {
		fmt.Fprintf(stderr, "arbor bench: %v\n", err)
		return exitFailure
	}
	if res.Ops == 0 {
		fmt.Fprintln(stderr, "arbor bench: no request succeeded")
		return exitFailure
	}
	return exitOK
}

// bench probes the target, preloads the keys a read workload needs, and
// measures. Progress goes to stderr.
func bench(ctx context.Context, cfg benchConfig, stderr io.Writer) (benchResult, error) {
	value := benchValue(cfg.ValueSize)
	var builder requestBuilder = newArborBuilder(value)
	var extraRoot *x509.Certificate
	switch cfg.Target {
	case "etcd":
		builder = newEtcdBuilder(value)
	case "bare":
		srv, err := startBareServer(value)
		if err != nil {
			return benchResult{}, err
		}
		defer srv.close()
		cfg.Addrs, extraRoot = []string{srv.addr}, srv.cert
	}
	conf, err := benchTLSConfig(cfg.CA, cfg.Insecure, extraRoot)
	if err != nil {
		return benchResult{}, err
	}
	r := newBenchRunner(cfg, builder, conf)
	if err := r.probe(ctx); err != nil {
		return benchResult{}, fmt.Errorf("cannot use %w", err)
	}
	if cfg.Preload && needsPreload(cfg.Workload) {
		fmt.Fprintf(stderr, "bench: writing the %d keys first\n", cfg.Keys)
		if err := r.preload(ctx); err != nil {
			return benchResult{}, err
		}
	}
	fmt.Fprintf(stderr, "bench: %s on %s (%d node(s)), %d clients, %s\n",
		cfg.Workload, cfg.Target, len(cfg.Addrs), cfg.Clients, cfg.Duration)
	if cfg.CPUProfile != "" {
		stopProfile, err := startCPUProfile(cfg.CPUProfile)
		if err != nil {
			return benchResult{}, err
		}
		defer stopProfile()
	}
	var stages *stageWatcher
	if cfg.Target == "arbor" {
		stages = newStageWatcher(ctx, conf, cfg.Addrs)
	}
	prog := newBenchProgress(stderr, cfg, &r.ok, &r.failed)
	stats, elapsed := r.measure(ctx, prog.start)
	prog.finish(elapsed)
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "bench: interrupted; the figures cover the time until then")
	}
	res := newBenchResult(cfg, stats, elapsed)
	if stages != nil {
		res.RaftStages = stages.finish(context.WithoutCancel(ctx))
	}
	return res, nil
}

// startCPUProfile profiles the measured part of a run (not the probe or
// the preload) into file; the returned function ends the profile.
func startCPUProfile(file string) (func(), error) {
	f, err := os.Create(file)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
