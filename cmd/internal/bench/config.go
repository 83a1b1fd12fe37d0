package bench

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/arbordb/arbor/cmd/internal/cliflags"
)

// benchConfig holds the `arbor bench` settings, one field per flag. It is
// filled by parseBenchConfig and never changed after.
type benchConfig struct {
	Target     string
	Addrs      []string // base URLs, https://host:port
	CA         string
	Auth       string
	Insecure   bool
	Workload   string
	Clients    int
	Duration   time.Duration
	MaxOps     uint64
	ValueSize  int
	Keys       int
	Fields     int
	Timeout    time.Duration
	Preload    bool
	JSON       bool
	Report     string
	CPUProfile string
}

// benchUsage introduces the flags in `arbor bench -h`.
const benchUsage = `Usage: arbor bench [flags]

Sends requests back to back from --clients concurrent clients, each on its
own keep-alive HTTPS connection, for --duration (or --max-ops requests), and
prints throughput, latency percentiles and errors. Against Arbor it also
prints where the nodes spent the time: each Raft stage's mean (the leader's
and followers' log writes, the replication round trip, commit, apply), read
from every node's /metrics before and after the run.

  arbor bench --addr 127.0.0.1:8443 --ca ca.pem --auth SECRET --workload write --clients 64
  arbor bench --target etcd --addr 127.0.0.1:2379 --ca ca.pem --workload read-local
  arbor bench --target bare --clients 64            # the ceiling: a constant HTTPS handler
  arbor bench --report results.jsonl                # table of saved --json results

Flags:
`

// Limits that keep every run bounded in time, memory and request size
// (each client keeps its own histograms, ~35 KB per operation kind).
const (
	benchMaxClients  = 1024
	benchMaxDuration = time.Hour
	benchMaxTimeout  = time.Minute
	benchMaxKeys     = 10_000_000
	// benchMaxValue stays under etcd's default 1.5 MiB request limit, so
	// the same value size works on both targets.
	benchMaxValue = 1 << 20
	// benchMaxFields is etcd's default --max-txn-ops.
	benchMaxFields = 128
)

// benchTargets are the --target values; bare is an in-process HTTPS
// handler that answers a constant: the ceiling of the client and TLS.
var benchTargets = []string{"arbor", "etcd", "bare"}

// defaultBenchAddr is where each target listens by default.
var defaultBenchAddr = map[string]string{"arbor": "127.0.0.1:8443", "etcd": "127.0.0.1:2379"}

func defaultBenchConfig() benchConfig {
	return benchConfig{
		Target:    "arbor",
		Workload:  "write",
		Clients:   16,
		Duration:  10 * time.Second,
		ValueSize: 100,
		Keys:      1000,
		Fields:    10,
		Timeout:   10 * time.Second,
		Preload:   true,
	}
}

// parseBenchConfig parses and validates the flags. -h prints the help to
// out and returns flag.ErrHelp.
func parseBenchConfig(args []string, out io.Writer) (benchConfig, error) {
	c := defaultBenchConfig()
	fs := flag.NewFlagSet("arbor bench", flag.ContinueOnError)
	fs.SetOutput(out)
	var addrs string
	fs.StringVar(&c.Target, "target", c.Target, "what to load: arbor, etcd (its v3 JSON gateway) or bare (an in-process constant HTTPS handler: the ceiling)")
	fs.StringVar(&addrs, "addr", "", "comma list of nodes (host:port or https://host:port); clients are spread round-robin (default 127.0.0.1:8443 for arbor, 127.0.0.1:2379 for etcd; unused with bare)")
	fs.StringVar(&c.CA, "ca", "", "PEM file of the CA that signed the nodes' certificates")
	fs.StringVar(&c.Auth, "auth", "", "credential: an admin secret or ID token for arbor (sent as Bearer), an auth token for etcd")
	fs.BoolVar(&c.Insecure, "insecure", false, "do not verify the nodes' certificates")
	fs.StringVar(&c.Workload, "workload", c.Workload, "one of "+strings.Join(workloads, ", "))
	fs.IntVar(&c.Clients, "clients", c.Clients, "concurrent clients, each with its own keep-alive HTTP/1.1 connection")
	fs.DurationVar(&c.Duration, "duration", c.Duration, "how long to measure (at most 1h)")
	fs.Uint64Var(&c.MaxOps, "max-ops", 0, "stop after this many requests (0: only --duration bounds the run)")
	fs.IntVar(&c.ValueSize, "value-size", c.ValueSize, "bytes in each written value")
	fs.IntVar(&c.Keys, "keys", c.Keys, "number of distinct keys the operations pick from")
	fs.IntVar(&c.Fields, "fields", c.Fields, "keys set by each patch-multi request (etcd: puts in one transaction)")
	fs.DurationVar(&c.Timeout, "timeout", c.Timeout, "limit of one request")
	fs.BoolVar(&c.Preload, "preload", c.Preload, "write every key once before a read or mixed workload")
	fs.BoolVar(&c.JSON, "json", false, "print the result as one JSON object instead of text")
	fs.StringVar(&c.CPUProfile, "cpuprofile", "", "write the CPU profile of this process (the client, and the handler of --target bare) to this file")
	fs.StringVar(&c.Report, "report", "", "print a comparison table of the JSON results in this file (- for stdin) instead of running")
	fs.Usage = func() {
		fmt.Fprint(out, benchUsage)
		fs.PrintDefaults()
	}
	if err := cliflags.Parse(fs, args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if c.Report != "" {
		return c, nil
	}
	if err := c.validate(addrs); err != nil {
		return c, err
	}
	return c, nil
}

// validate checks the settings and fills Addrs from the --addr list.
func (c *benchConfig) validate(addrs string) error {
	var errs []error
	if !slices.Contains(benchTargets, c.Target) {
		errs = append(errs, fmt.Errorf("--target must be one of %s, not %q", strings.Join(benchTargets, ", "), c.Target))
	}
	if !slices.Contains(workloads, c.Workload) {
		errs = append(errs, fmt.Errorf("--workload must be one of %s, not %q", strings.Join(workloads, ", "), c.Workload))
	}
	if c.Clients < 1 || c.Clients > benchMaxClients {
		errs = append(errs, fmt.Errorf("--clients must be between 1 and %d", benchMaxClients))
	}
	if c.Duration <= 0 || c.Duration > benchMaxDuration {
		errs = append(errs, fmt.Errorf("--duration must be positive and at most %s", benchMaxDuration))
	}
	if c.Timeout <= 0 || c.Timeout > benchMaxTimeout {
		errs = append(errs, fmt.Errorf("--timeout must be positive and at most %s", benchMaxTimeout))
	}
	if c.ValueSize < 0 || c.ValueSize > benchMaxValue {
		errs = append(errs, fmt.Errorf("--value-size must be between 0 and %d", benchMaxValue))
	}
	if c.Keys < 1 || c.Keys > benchMaxKeys {
		errs = append(errs, fmt.Errorf("--keys must be between 1 and %d", benchMaxKeys))
	}
	if c.Fields < 1 || c.Fields > benchMaxFields || c.Fields > c.Keys {
		errs = append(errs, fmt.Errorf("--fields must be between 1 and %d and at most --keys", benchMaxFields))
	}
	if c.Target == "bare" {
		if addrs != "" {
			errs = append(errs, errors.New("--addr is not used with --target bare: the handler listens on 127.0.0.1 in this process"))
		}
	} else if slices.Contains(benchTargets, c.Target) {
		if err := c.parseAddrs(addrs); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// parseAddrs turns the --addr list into base URLs. Only HTTPS is spoken:
// both Arbor and the etcd of the comparison pay for TLS.
func (c *benchConfig) parseAddrs(list string) error {
	if list == "" {
		list = defaultBenchAddr[c.Target]
	}
	c.Addrs = nil
	for a := range strings.SplitSeq(list, ",") {
		a = strings.TrimSuffix(strings.TrimSpace(a), "/")
		switch {
		case a == "":
			continue
		case strings.HasPrefix(a, "http://"):
			return fmt.Errorf("--addr %s: only https is supported", a)
		case !strings.HasPrefix(a, "https://"):
			a = "https://" + a
		}
		if strings.Count(a, "/") > 2 {
			return fmt.Errorf("--addr %s: give host:port without a path", a)
		}
		c.Addrs = append(c.Addrs, a)
	}
	if len(c.Addrs) == 0 {
		return errors.New("--addr names no node")
	}
	return nil
}
