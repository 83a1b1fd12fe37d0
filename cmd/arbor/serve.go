package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/arbordb/arbor/cluster"
	"github.com/arbordb/arbor/cmd/internal/cliflags"
	"github.com/arbordb/arbor/cmd/internal/pki"
	"github.com/arbordb/arbor/httpapi"
	"github.com/prometheus/client_golang/prometheus"
)

// serveConfig holds every `arbor serve` setting, one field per flag
// (SPEC §10). It is filled by parseServeConfig and never changed after.
type serveConfig struct {
	NodeID                 string
	DataDir                string
	HTTPAddr               string
	RaftAddr               string
	GossipAddr             string
	AdvertiseHost          string
	Join                   []string
	BootstrapExpect        int
	TLSCert                string
	TLSKey                 string
	TLSCA                  string
	GossipKeys             []string
	InsecureCluster        bool
	AdminSecrets           []string
	JWTHS256Secrets        []string
	JWTPublicKeys          []string
	JWTAudiences           []string
	JWTIssuers             []string
	FirebaseProject        string
	MaxTokenLifetime       time.Duration
	StrictIndexes          bool
	DatabaseName           string
	Dev                    bool
	DefaultReadConsistency string
	DefaultWriteSizeLimit  string
	WriteTimeout           time.Duration
	SnapshotThreshold      uint64
	TrailingLogs           uint64
	ReapAfter              time.Duration
	LogLevel               string
	LogFormat              string
	RaftTimeout            time.Duration
	SnapshotInterval       time.Duration
	VoterStabilization     time.Duration
	ShutdownTimeout        time.Duration
	MaxConnections         int
	MaxWritesInProgress    int
	StreamKeepAlive        time.Duration
	MemoryLimit            string

	// level is LogLevel parsed by validate.
	level slog.Level
	// memoryLimit is MemoryLimit in bytes, parsed by validate; 0 means
	// from the container (applyMemoryLimit).
	memoryLimit int64
}

// envPrefix starts the environment variable of every flag: --node-id is
// also ARBOR_NODE_ID. A flag given on the command line wins.
const envPrefix = "ARBOR_"

// defaultServeConfig returns the documented defaults; hostname becomes the
// default node id.
func defaultServeConfig(hostname string) serveConfig {
	return serveConfig{
		NodeID:                 hostname,
		DataDir:                "./arbor-data",
		HTTPAddr:               ":8443",
		RaftAddr:               ":8300",
		GossipAddr:             ":8301",
		BootstrapExpect:        1,
		DefaultReadConsistency: "linearizable",
		DefaultWriteSizeLimit:  "medium",
		WriteTimeout:           5 * time.Second,
		SnapshotThreshold:      8192,
		TrailingLogs:           10240,
		LogLevel:               "info",
		LogFormat:              "text",
		RaftTimeout:            cluster.DefaultRaftTimeout,
		SnapshotInterval:       cluster.DefaultTiming().SnapshotInterval,
		VoterStabilization:     cluster.DefaultTiming().Stabilization,
		ShutdownTimeout:        10 * time.Second,
		StreamKeepAlive:        30 * time.Second,
		MaxTokenLifetime:       time.Hour,
		MemoryLimit:            "0",
		MaxWritesInProgress:    httpapi.DefaultConfig().MaxWritesInProgress,
	}
}

// bindFlags registers one flag per field of c, with c's values as defaults.
func (c *serveConfig) bindFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.NodeID, "node-id", c.NodeID, "this node's unique, stable `id`")
	fs.StringVar(&c.DataDir, "data-dir", c.DataDir, "`directory` for the Raft log, snapshots and the generated TLS certificate")
	fs.StringVar(&c.HTTPAddr, "http-addr", c.HTTPAddr, "HTTPS client API listen `address` (port 0 picks a free port, written to <data-dir>/http.addr)")
	fs.StringVar(&c.RaftAddr, "raft-addr", c.RaftAddr, "Raft transport listen `address`; bound to one IP, connections to peers are also opened from it")
	fs.StringVar(&c.GossipAddr, "gossip-addr", c.GossipAddr, "gossip (membership) listen `address`")
	fs.StringVar(&c.AdvertiseHost, "advertise-host", c.AdvertiseHost, "`host` name or IP that peers use to reach this node; DNS names are kept, not resolved once")
	fs.Var((*commaList)(&c.Join), "join", "comma-separated gossip `addresses` of peers to join")
	fs.IntVar(&c.BootstrapExpect, "bootstrap-expect", c.BootstrapExpect, "wait for `N` voters before forming a new cluster (1: a lone node bootstraps itself)")
	fs.StringVar(&c.TLSCert, "tls-cert", c.TLSCert, "PEM certificate `file` for HTTPS (and mutual TLS between nodes); without it a self-signed one is generated")
	fs.StringVar(&c.TLSKey, "tls-key", c.TLSKey, "PEM private key `file` matching --tls-cert")
	fs.StringVar(&c.TLSCA, "tls-ca", c.TLSCA, "PEM CA `file`, one certificate or a bundle (during a CA rotation), re-read when it changes: nodes must present certificates one of them signed (mutual TLS between nodes)")
	fs.Var((*stringList)(&c.GossipKeys), "gossip-key", "gossip encryption `key`: base64 of 32 bytes, or a file holding one or more, one per line, re-read when it changes; repeatable. The first key seals gossip, every key opens it, so keys rotate without splitting the cluster")
	fs.BoolVar(&c.InsecureCluster, "insecure-cluster", c.InsecureCluster, "allow a multi-node cluster without --tls-ca and --gossip-key")
	fs.Var((*stringList)(&c.AdminSecrets), "admin-secret", "`secret` token that authenticates as admin (repeatable)")
	fs.Var((*stringList)(&c.JWTHS256Secrets), "jwt-hs256-secret", "`secret` that verifies HS256-signed ID tokens (repeatable, so secrets can rotate)")
	fs.Var((*stringList)(&c.JWTPublicKeys), "jwt-public-key", "`file` with keys that verify RS256/ES256-signed ID tokens: PEM public keys or certificates, a JWKS, or Google's x509 JSON; re-read when it changes (repeatable)")
	fs.Var((*stringList)(&c.JWTAudiences), "jwt-audience", "`aud` an ID token must name (repeatable; default: any)")
	fs.Var((*stringList)(&c.JWTIssuers), "jwt-issuer", "`iss` an ID token must have (repeatable; default: any)")
	fs.DurationVar(&c.MaxTokenLifetime, "max-token-lifetime", c.MaxTokenLifetime, "longest lifetime (exp - iat) of an ID token accepted (Firebase's live 1h); a token must carry exp and iat")
	fs.StringVar(&c.DatabaseName, "database-name", c.DatabaseName, "the database's `name`: Firebase SDKs must give it as ?ns= in their databaseURL (default: any name is accepted)")
	fs.BoolVar(&c.StrictIndexes, "strict-indexes", c.StrictIndexes, "refuse, like Firebase, an orderByChild/orderByValue query whose .indexOn the rules do not declare (400); by default such a query scans the children")
	fs.StringVar(&c.FirebaseProject, "firebase-project", c.FirebaseProject, "Firebase project `id` whose Authentication ID tokens are accepted: sets --jwt-audience to it and --jwt-issuer to https://securetoken.google.com/<id> (give Google's keys with --jwt-public-key)")
	fs.BoolVar(&c.Dev, "dev", c.Dev, "development mode: open security rules until rules are set, and \"Bearer owner\" as admin (never in production)")
	fs.StringVar(&c.DefaultReadConsistency, "default-read-consistency", c.DefaultReadConsistency, "`consistency` of reads that do not ask: linearizable or local")
	fs.StringVar(&c.DefaultWriteSizeLimit, "default-write-size-limit", c.DefaultWriteSizeLimit, "write size `limit` when a request does not ask: tiny, small, medium, large or unlimited")
	fs.DurationVar(&c.WriteTimeout, "write-timeout", c.WriteTimeout, "how long a write or linearizable read waits for a leader or quorum before 503")
	fs.Uint64Var(&c.SnapshotThreshold, "snapshot-threshold", c.SnapshotThreshold, "log `entries` between snapshots")
	fs.Uint64Var(&c.TrailingLogs, "trailing-logs", c.TrailingLogs, "log `entries` kept behind a snapshot; a follower further behind is sent the snapshot")
	fs.DurationVar(&c.ReapAfter, "reap-after", c.ReapAfter, "remove a member that has been failed or gone this long (0: never; use arbor members remove)")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "lowest `level` logged: debug, info, warn or error")
	fs.StringVar(&c.LogFormat, "log-format", c.LogFormat, "log `format`: text or json")
	fs.DurationVar(&c.RaftTimeout, "raft-timeout", c.RaftTimeout, "how long a follower waits without hearing from the leader before it calls an election (the leader's lease is half of it); raise it where hosts are overloaded or far apart, lower it for faster failover (100ms to 1m)")
	fs.DurationVar(&c.SnapshotInterval, "snapshot-interval", c.SnapshotInterval, "how often the node checks whether --snapshot-threshold entries call for a snapshot")
	fs.DurationVar(&c.VoterStabilization, "voter-stabilization", c.VoterStabilization, "how long a new member must be alive and caught up before it becomes a voter")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "time allowed for a graceful shutdown after SIGTERM")
	fs.DurationVar(&c.StreamKeepAlive, "stream-keepalive", c.StreamKeepAlive, "how long a quiet event stream waits before a keep-alive frame")
	fs.StringVar(&c.MemoryLimit, "memory-limit", c.MemoryLimit, fmt.Sprintf("soft limit on the memory the Go runtime uses, a `size` such as 512MiB or 2Gi; the garbage collector works harder to stay under it (0: %d%% of the container's cgroup memory limit, none without one; GOMEMLIMIT, when set, wins)", memoryLimitPercent))
	fs.IntVar(&c.MaxWritesInProgress, "max-writes-in-progress", c.MaxWritesInProgress, "client writes this node proposes at once; more wait, and waiting connections are admitted in turn, one write each, so that one client's burst cannot hold everyone else's writes behind it")
	fs.IntVar(&c.MaxConnections, "max-connections", c.MaxConnections, "client HTTPS connections served at once; more wait to be accepted (0: the descriptor limit, raised to its maximum at start, less 1024 kept for Raft, gossip and snapshots, at most 16384)")
}

// parseServeConfig reads the flags in args, then the ARBOR_* environment
// variables of the flags args did not set, and validates the result.
// Usage goes to usageOut; flag.ErrHelp is returned for -h. The warnings
// are for the logger, which does not exist yet.
func parseServeConfig(args []string, lookupEnv func(string) (string, bool), environ []string, usageOut io.Writer) (serveConfig, []string, error) {
	hostname, err := os.Hostname()
	if err != nil {
		hostname = ""
	}
	cfg := defaultServeConfig(hostname)
	fs := flag.NewFlagSet("arbor serve", flag.ContinueOnError)
	fs.SetOutput(usageOut)
	cfg.bindFlags(fs)
	fs.Usage = func() { printServeUsage(usageOut, fs) }
	if err := cliflags.Parse(fs, args); err != nil {
		return cfg, nil, err
	}
	if fs.NArg() > 0 {
		return cfg, nil, fmt.Errorf("unexpected argument %q (flags start with --)", fs.Arg(0))
	}
	warnings, err := applyEnv(fs, lookupEnv, environ)
	if err != nil {
		return cfg, warnings, err
	}
	cfg.applyDevDefaults(fs)
	return cfg, warnings, cfg.validate()
}

// envName is the environment variable that can set flag name.
func envName(name string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// applyEnv sets every flag not given on the command line from its
// environment variable, and warns about ARBOR_* variables that match no
// flag (a typo there would otherwise be silently ignored).
func applyEnv(fs *flag.FlagSet, lookupEnv func(string) (string, bool), environ []string) ([]string, error) {
	onCommandLine := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { onCommandLine[f.Name] = true })
	known := map[string]bool{}
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		env := envName(f.Name)
		known[env] = true
		if onCommandLine[f.Name] || err != nil {
			return
		}
		if v, ok := lookupEnv(env); ok {
			if setErr := fs.Set(f.Name, v); setErr != nil {
				err = fmt.Errorf("%s=%q (--%s): %s", env, v, f.Name, cliflags.Want(f.Value, setErr))
			}
		}
	})
	var warnings []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, envPrefix) && !known[name] {
			warnings = append(warnings, fmt.Sprintf("ignoring environment variable %s: no such flag", name))
		}
	}
	return warnings, err
}

// printServeUsage lists the flags GNU-style, each with its variable.
func printServeUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, "Usage: arbor serve [flags]\n\nRuns one Arbor node. Every flag can also be set from the environment\nvariable shown; a flag on the command line wins.\n\nFlags:\n")
	fs.VisitAll(func(f *flag.Flag) {
		arg, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if arg != "" {
			line += " " + arg
		}
		fmt.Fprintf(w, "%s\n      %s", line, usage)
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "[]" {
			fmt.Fprintf(w, " (default %s)", f.DefValue)
		}
		fmt.Fprintf(w, " [$%s]\n", envName(f.Name))
	})
}

// clusterConfig is the cluster.Node's share of the settings.
func (c *serveConfig) clusterConfig(logger *slog.Logger) cluster.Config {
	cc := cluster.DefaultConfig()
	cc.NodeID = c.NodeID
	cc.DataDir = c.DataDir
	cc.RaftAddr = c.RaftAddr
	cc.AdvertiseHost = c.AdvertiseHost
	cc.BootstrapExpect = c.BootstrapExpect
	if c.gossipEnabled() {
		cc.GossipAddr = c.GossipAddr
	}
	cc.Join = c.Join
	cc.GossipKeys, _ = pki.DecodeGossipKeys(c.GossipKeys) // validate has reported a bad key
	cc.InsecureCluster = c.InsecureCluster
	cc.ReapAfter = c.ReapAfter
	cc.TrailingLogs = c.TrailingLogs
	cc.SnapshotThreshold = c.SnapshotThreshold
	cc.WriteTimeout = c.WriteTimeout
	cc.Timing = cluster.DefaultTiming().WithRaftTimeout(c.RaftTimeout)
	cc.Timing.SnapshotInterval = c.SnapshotInterval
	cc.Timing.Stabilization = c.VoterStabilization
	// No component attribute here: the cluster tags its Raft logs with
	// "component" itself, and slog would print the key twice.
	cc.Logger = logger
	return cc
}

// multiNode reports whether the settings ask for more than one node.
func (c *serveConfig) multiNode() bool { return c.BootstrapExpect > 1 || len(c.Join) > 0 }

// gossipEnabled decides whether the node runs discovery. A lone node runs
// it only when others could join it safely (mutual TLS and a gossip key)
// or the operator allowed an insecure cluster; otherwise nothing listens
// on --gossip-addr.
func (c *serveConfig) gossipEnabled() bool {
	return c.multiNode() || c.InsecureCluster || (c.TLSCA != "" && len(c.GossipKeys) > 0)
}

// httpConfig is the HTTP API's share of the settings.
func (c *serveConfig) httpConfig(logger *slog.Logger, reg *prometheus.Registry) httpapi.Config {
	hc := httpapi.DefaultConfig()
	hc.AdminSecrets = c.AdminSecrets
	hc.Dev = c.Dev
	hc.StrictIndexes = c.StrictIndexes
	hc.DatabaseName = c.DatabaseName
	hc.DefaultConsistency = c.DefaultReadConsistency
	hc.DefaultWriteSizeLimit = c.DefaultWriteSizeLimit
	hc.WriteTimeout = c.WriteTimeout
	hc.StreamKeepAlive = c.StreamKeepAlive
	hc.MaxWritesInProgress = c.MaxWritesInProgress
	// A body over the largest replicated write is refused before it is
	// read (docs/RELIABILITY.md).
	hc.MaxBodyBytes = cluster.MaxWriteBytes
	hc.Logger = logger.With("component", "http")
	hc.Registerer = reg
	hc.Gatherer = reg
	return hc
}
