package main

import (
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/arbordb/arbor/cmd/arbor-chaos/internal/nemesis"
	"github.com/arbordb/arbor/cmd/internal/workload"
)

// config is the runner's configuration, one field per flag.
type config struct {
	Backend  string
	Duration time.Duration
	Seed     uint64
	Out      string
	Arbor    string
	Image    string
	Faults   string
	Keep     bool
	Check    string // re-check a saved history instead of running

	Workload workload.Config
	Watchers int // stream watchers (internal/watch); 0: none
	Presence int // presence watchers (internal/presence); 0: none

	RaftTimeout       time.Duration
	WriteTimeout      time.Duration
	RequestTimeout    time.Duration
	SnapshotThreshold int
	TrailingLogs      int
	GossipPort        int

	CheckTimeout   time.Duration
	RecoverTimeout time.Duration
	StartTimeout   time.Duration

	faults  []nemesis.Fault // parsed from Faults once the backend is known
	seedSet bool
}

func defaultConfig() config {
	return config{
		Backend:           "auto",
		Duration:          3 * time.Minute,
		Arbor:             "bin/arbor",
		Image:             "arbor:0.0.0-dev",
		Faults:            "all",
		Workload:          workload.DefaultConfig(),
		Watchers:          3,
		Presence:          3,
		RaftTimeout:       0,
		WriteTimeout:      3 * time.Second,
		RequestTimeout:    10 * time.Second,
		SnapshotThreshold: 400,
		TrailingLogs:      100,
		GossipPort:        8301,
		CheckTimeout:      5 * time.Minute,
		RecoverTimeout:    60 * time.Second,
		StartTimeout:      120 * time.Second,
	}
}

func (c *config) bindFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Backend, "backend", c.Backend, "where the nodes run: process, docker, or auto (docker when it answers and has the image)")
	fs.DurationVar(&c.Duration, "duration", c.Duration, "how long the workload and the faults run")
	fs.Func("seed", "seed of the fault schedule and the workload (default: random, printed)", func(s string) error {
		_, err := fmt.Sscan(s, &c.Seed)
		c.seedSet = err == nil
		return err
	})
	fs.StringVar(&c.Out, "out", c.Out, "report `directory` (default: a new directory under $TMPDIR)")
	fs.StringVar(&c.Arbor, "arbor", c.Arbor, "arbor `binary` for the process backend")
	fs.StringVar(&c.Image, "image", c.Image, "arbor container `image` for the docker backend (make image)")
	fs.StringVar(&c.Faults, "faults", c.Faults, "comma-separated faults: all, "+faultNames())
	fs.BoolVar(&c.Keep, "keep", c.Keep, "keep the nodes' data directories even when the run passes")
	fs.StringVar(&c.Check, "check", c.Check, "check a saved history.jsonl instead of running a cluster")

	w := &c.Workload
	fs.IntVar(&w.Clients, "clients", w.Clients, "concurrent clients")
	fs.IntVar(&w.Roaming, "roaming", w.Roaming, "clients that send each operation to a random node (the others stay with one node)")
	fs.Float64Var(&w.Rate, "rate", w.Rate, "operations per second per client (0: unthrottled)")
	fs.DurationVar(&w.Generation, "generation", w.Generation, "how long clients use one set of keys before moving to fresh ones")
	fs.IntVar(&w.Registers, "registers", w.Registers, "register keys per generation")
	fs.IntVar(&w.Counters, "counters", w.Counters, "counter keys in use at once (each takes 62 increments, one power of two each, then is replaced)")
	fs.IntVar(&w.Lists, "lists", w.Lists, "list keys per generation")
	fs.Float64Var(&w.LocalReads, "local-reads", w.LocalReads, "fraction of reads sent with consistency=local (not judged)")
	fs.BoolVar(&w.JudgeLocal, "judge-local-reads", w.JudgeLocal, "self-test: judge local reads as linearizable; a run with faults should then FAIL")
	fs.IntVar(&c.Watchers, "watchers", c.Watchers, "stream watchers: resumable event streams on the root, moving between nodes, checked against the history (0: none)")
	fs.IntVar(&c.Presence, "presence", c.Presence, "presence watchers: realtime connections holding an onDisconnect operation, moving between nodes; each must run exactly once, after its connection was last served (0: none)")

	fs.DurationVar(&c.RaftTimeout, "raft-timeout", c.RaftTimeout, "the nodes' --raft-timeout (0: their default)")
	fs.DurationVar(&c.WriteTimeout, "write-timeout", c.WriteTimeout, "the nodes' --write-timeout")
	fs.DurationVar(&c.RequestTimeout, "request-timeout", c.RequestTimeout, "client timeout per request (then the operation is indeterminate)")
	fs.IntVar(&c.SnapshotThreshold, "snapshot-threshold", c.SnapshotThreshold, "the nodes' --snapshot-threshold (small: snapshots and installs happen under faults)")
	fs.IntVar(&c.TrailingLogs, "trailing-logs", c.TrailingLogs, "the nodes' --trailing-logs")
	fs.IntVar(&c.GossipPort, "gossip-port", c.GossipPort, "docker backend: the containers' gossip port")

	fs.DurationVar(&c.CheckTimeout, "check-timeout", c.CheckTimeout, "bound of the linearizability search per key")
	fs.DurationVar(&c.RecoverTimeout, "recover-timeout", c.RecoverTimeout, "how long the cluster may take to be ready after a fault is healed")
	fs.DurationVar(&c.StartTimeout, "start-timeout", c.StartTimeout, "how long the new cluster may take to elect a leader")
}

func faultNames() string {
	s := make([]string, len(nemesis.AllFaults))
	for i, f := range nemesis.AllFaults {
		s[i] = string(f)
	}
	return strings.Join(s, ", ")
}

// parseConfig parses args; flag.ErrHelp for -h.
func parseConfig(args []string, usage io.Writer) (config, error) {
	c := defaultConfig()
	fs := flag.NewFlagSet("arbor-chaos", flag.ContinueOnError)
	fs.SetOutput(usage)
	c.bindFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(usage, `arbor-chaos runs a three-node arbor cluster under a concurrent workload while
a nemesis kills, pauses, stops and partitions nodes, then checks the history:
linearizability with porcupine, acknowledged writes present, replicas
converged, push keys in commit order, and event streams that deliver every
committed write once, in commit order. Exit status 0: pass; 1: a check
failed; 2: the run could not be set up.

Usage: arbor-chaos [flags]

`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if !c.seedSet {
		c.Seed = rand.Uint64() % 1_000_000_000 // short enough to type
	}
	return c, c.validate()
}

func (c *config) validate() error {
	switch c.Backend {
	case "auto", "process", "docker":
	default:
		return fmt.Errorf("-backend %q: want process, docker or auto", c.Backend)
	}
	switch {
	case c.Duration <= 0 || c.Duration > 24*time.Hour:
		return fmt.Errorf("-duration %s: want more than 0 and at most 24h", c.Duration)
	case c.RequestTimeout <= c.WriteTimeout:
		return fmt.Errorf("-request-timeout %s must exceed -write-timeout %s, so a node's 503 arrives before the client gives up", c.RequestTimeout, c.WriteTimeout)
	case c.RaftTimeout < 0:
		return fmt.Errorf("-raft-timeout %s: must not be negative", c.RaftTimeout)
	}
	if c.Watchers < 0 || c.Watchers > 20 {
		return fmt.Errorf("-watchers %d: want 0 to 20", c.Watchers)
	}
	if c.Presence < 0 || c.Presence > 20 {
		return fmt.Errorf("-presence %d: want 0 to 20", c.Presence)
	}
	w := c.Workload
	w.Nodes = nemesis.NodeNames
	return w.Validate()
}

// outDir returns the report directory, creating it.
func (c *config) outDir() (string, error) {
	dir := c.Out
	if dir == "" {
		dir = filepath.Join(os.TempDir(), fmt.Sprintf("arbor-chaos-%s-seed%d", time.Now().Format("20060102-150405"), c.Seed))
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return "", err
	}
	return abs, nil
}

// replay is the command line that runs the same schedule again.
func (c *config) replay(backend string) string {
	d := defaultConfig()
	args := []string{"arbor-chaos", "-backend", backend, "-seed", fmt.Sprint(c.Seed), "-duration", c.Duration.String()}
	add := func(cond bool, flag string, v any) {
		if cond {
			args = append(args, flag)
			if s := fmt.Sprint(v); s != "" {
				args = append(args, s)
			}
		}
	}
	add(c.Faults != d.Faults, "-faults", c.Faults)
	add(backend == "process", "-arbor", c.Arbor)
	add(backend == "docker", "-image", c.Image)
	w, dw := c.Workload, d.Workload
	add(w.Clients != dw.Clients, "-clients", w.Clients)
	add(w.Roaming != dw.Roaming, "-roaming", w.Roaming)
	add(w.Rate != dw.Rate, "-rate", w.Rate)
	add(w.Generation != dw.Generation, "-generation", w.Generation)
	add(w.LocalReads != dw.LocalReads, "-local-reads", w.LocalReads)
	add(w.JudgeLocal, "-judge-local-reads", "")
	add(c.Watchers != d.Watchers, "-watchers", c.Watchers)
	add(c.Presence != d.Presence, "-presence", c.Presence)
	add(c.RaftTimeout != d.RaftTimeout, "-raft-timeout", c.RaftTimeout)
	add(c.WriteTimeout != d.WriteTimeout, "-write-timeout", c.WriteTimeout)
	add(c.SnapshotThreshold != d.SnapshotThreshold, "-snapshot-threshold", c.SnapshotThreshold)
	add(c.GossipPort != d.GossipPort, "-gossip-port", c.GossipPort)
	return strings.Join(args, " ")
}
