// Command arbor is the Arbor database server (`arbor serve`) and, over time,
// the command-line tools that talk to it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/arbordb/arbor/cluster"
	"github.com/arbordb/arbor/cmd/internal/bench"
	"github.com/arbordb/arbor/cmd/internal/cliflags"
	"github.com/arbordb/arbor/cmd/internal/pki"
	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/httpapi"
)

// Process exit codes. Usage errors (bad flags, unknown or unfinished
// commands) get 2, like the flag package; anything that fails at run time 1.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches every subcommand (this is the one place) and returns the
// process exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printUsage(stderr)
		return exitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case "serve":
		return runServe(rest, stderr)
	case "version", "-version", "--version":
		printVersion(stdout)
		return exitOK
	case "help", "-h", "-help", "--help":
		if len(rest) > 0 && rest[0] == "serve" {
			return runServe([]string{"-h"}, stdout)
		}
		printUsage(stdout)
		return exitOK
	case "status":
		return runStatus(rest, stdout, stderr)
	case "members":
		return runMembers(rest, stdout, stderr)
	case "certs":
		return runCerts(rest, stdout, stderr)
	case "bench":
		return bench.Run(rest, stdout, stderr)
	case "backup":
		return runBackup(rest, stdout, stderr)
	case "restore":
		return runRestore(rest, os.Stdin, stdout, stderr)
	case "token":
		return runToken(rest, os.Getenv, stdout, stderr)
	case "recover":
		return runRecover(rest, os.Stdin, stdout, stderr)
	}
	fmt.Fprintf(stderr, "arbor: unknown command %q ('arbor help' lists the commands)\n", name)
	return exitUsage
}

// runServe parses the serve flags, runs a node until a signal, and maps the
// outcome to an exit code.
func runServe(args []string, stderr io.Writer) int {
	cfg, warnings, err := parseServeConfig(args, os.LookupEnv, os.Environ(), stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		cliflags.Report(stderr, "arbor serve", err)
		return exitUsage
	}
	logger := newLogger(stderr, cfg.level, cfg.LogFormat)
	for _, w := range warnings {
		logger.Warn(w)
	}
	// Before the node opens its log: the limit must already hold while
	// the log is replayed.
	applyMemoryLimit(cfg.memoryLimit, os.LookupEnv, os.ReadFile, logger)
	keepGCHeadroom(os.LookupEnv, logger)
	ctx, stop := notifyShutdown(logger, os.Exit)
	defer stop()
	if err := serve(ctx, cfg, logger); err != nil {
		logger.Error("arbor serve failed", "err", err)
		return exitFailure
	}
	logger.Info("stopped")
	return exitOK
}

// serve builds the components in dependency order, runs until ctx is
// cancelled or the HTTPS server fails, then stops them in reverse order,
// all of the stopping within cfg.ShutdownTimeout.
func serve(ctx context.Context, cfg serveConfig, logger *slog.Logger) error {
	if cfg.Dev {
		// Whether the rules are open is known once the log is replayed
		// (announceDevNode).
		logger.Warn("development mode: \"Bearer owner\" is an admin; never use --dev in production")
	}
	if err := prepareDataDir(cfg.DataDir); err != nil {
		return err
	}
	certs, err := loadCertificates(cfg, logger)
	if err != nil {
		return err
	}

	cc := cfg.clusterConfig(logger)
	cc.Release, cc.Commit = release(), commit
	var ca *pki.CAReloader
	if cfg.TLSCA != "" {
		if ca, err = pki.NewCAReloader(cfg.TLSCA, logger); err != nil {
			return err
		}
		cc.TLS = clusterTLS(ca, certs)
	}
	tokens, err := cfg.tokenVerifier()
	if err != nil {
		return err
	}
	state := fsm.New()
	node, err := cluster.New(cc, state)
	if err != nil {
		return fmt.Errorf("start cluster node: %w", err)
	}
	// Key material is re-read while the node runs, so each step of a
	// rotation is a file rollout (docs/OPERATIONS.md); the poller ends
	// before serve returns.
	reloads := []func(){func() { _, _ = certs.GetCertificate(nil) }}
	if ca != nil {
		reloads = append(reloads, func() { ca.Pool() })
	}
	if tokens != nil {
		// A key withdrawn from --jwt-public-key ends the streams it
		// authenticated even while no new token arrives.
		reloads = append(reloads, tokens.Check)
	}
	if cc.GossipAddr != "" && len(cc.GossipKeys) > 0 {
		logger.Info("gossip keys", "in_use", pki.GossipKeyID(cc.GossipKeys[0]), "keys", pki.GossipKeyIDs(cc.GossipKeys))
		reloads = append(reloads, pki.NewGossipKeyReloader(cfg.GossipKeys, cc.GossipKeys, node.SetGossipKeys, logger).Check)
	}
	pollCtx, stopPolling := context.WithCancel(ctx)
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		pollReloads(pollCtx, reloads...)
	}()
	defer func() { stopPolling(); <-polled }()
	go releaseMemoryOnceReady(ctx, node.Ready, logger, 200*time.Millisecond, 10*time.Minute)
	// From here on every exit path must shut the node down: it owns the
	// Raft log and its file locks.
	stopNode := func(ctx context.Context) error {
		if err := node.Shutdown(ctx); err != nil {
			return fmt.Errorf("shut down cluster node: %w", err)
		}
		return nil
	}
	abort := func(err error) error {
		ctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
		defer cancel()
		return errors.Join(err, stopNode(ctx))
	}

	reg, err := newRegistry(node, pki.NewExpiryCollector(certs, ca))
	if err != nil {
		return abort(err)
	}
	hc := cfg.httpConfig(logger, reg)
	hc.Tokens = tokens
	// onDisconnect operations are registered to this node and this run of
	// its process.
	hc.NodeID, hc.RunID = node.ID(), node.RunID()
	hc.LeaderContact = node.LeaderContact
	api, err := httpapi.NewWithAdmin(hc, node, node)
	if err != nil {
		return abort(fmt.Errorf("build HTTP API: %w", err))
	}
	// Streams are fed by this node's own applied log (SPEC §5).
	state.SetEventSink(api.PublishEvents)
	fds, err := raiseFDLimit()
	if err != nil {
		logger.Warn("could not raise the file descriptor limit", "limit", fds, "err", err)
	}
	maxConns := connectionLimit(cfg.MaxConnections, fds)
	if uint64(maxConns)+fdReserve > fds {
		logger.Warn("--max-connections leaves fewer descriptors than the node needs for Raft, gossip and snapshots under a connection flood",
			"max_connections", maxConns, "fd_limit", fds, "reserve", fdReserve)
	}
	web, err := listenHTTPS(cfg.HTTPAddr, addrFile(cfg.DataDir), maxConns, api.Handler(), certs.GetCertificate, logger)
	if err != nil {
		return abort(err)
	}
	if cfg.Dev {
		rules := func() *fsm.Rules { return state.ReadLocal(nil).Rules }
		go announceDevNode(ctx, node.Ready, rules, devURL(web.addr), logger, 200*time.Millisecond, 10*time.Minute)
	}

	var runErr error
	select {
	case <-ctx.Done():
		logger.Info("shutting down", "timeout", cfg.ShutdownTimeout)
	case runErr = <-web.failed():
		logger.Error("HTTPS server stopped unexpectedly; shutting down", "err", runErr)
	}

	stopCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	// Draining first turns /readyz to 503 and ends streams, so load
	// balancers and clients move on while in-flight requests finish.
	api.SetDraining(true)
	api.CloseStreams()
	// The HTTP drain gets at most half of the budget: a straggling request
	// must not eat the time the node needs to hand over leadership and
	// take its shutdown snapshot.
	drainCtx, cancelDrain := context.WithTimeout(stopCtx, cfg.ShutdownTimeout/2)
	defer cancelDrain()
	web.shutdown(drainCtx)
	start := time.Now()
	err = stopWithin(stopCtx, shutdownGrace, stopNode)
	if errors.Is(err, errShutdownStuck) {
		logger.Error("cluster node did not stop within --shutdown-timeout; exiting anyway (acknowledged writes are on disk)",
			"timeout", cfg.ShutdownTimeout, "error", err)
		return errors.Join(runErr, err)
	}
	logger.Info("cluster node stopped", "took", time.Since(start).Round(time.Millisecond))
	return errors.Join(runErr, err)
}
