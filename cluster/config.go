package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
)

// Config is everything New needs to start a node. It is read once by New and
// never mutated afterwards; zero fields take the DefaultConfig values.
type Config struct {
	// NodeID is this node's Raft server ID; default: the host name.
	NodeID string
	// DataDir holds raft.db (the log and stable store, fsynced) and
	// snapshots/.
	DataDir string
	// RaftAddr is the address the Raft transport binds, default ":8300".
	// Port 0 picks a free port (tests).
	RaftAddr string
	// AdvertiseHost is the host peers use to reach RaftAddr. Default: the
	// bound host, or 127.0.0.1 when that is empty or unspecified (0.0.0.0).
	// DNS names are kept as names, never resolved once.
	AdvertiseHost string
	// BootstrapExpect is how many nodes form a new cluster. 1: a lone node
	// with empty Raft state bootstraps itself. N > 1: once gossip shows N
	// members without Raft state (and none with), each of them bootstraps
	// the same N-voter configuration, so exactly one cluster forms. Needs
	// GossipAddr.
	BootstrapExpect int
	// GossipAddr is the memberlist (discovery and liveness) bind address.
	// Empty disables discovery: the node can neither join nor be joined.
	// Port 0 picks a free port (tests).
	GossipAddr string
	// Join lists peers' gossip addresses. They are tried (DNS names
	// resolved again on every attempt) until one answers.
	Join []string
	// GossipKeys encrypt gossip (AES-256, 32 bytes each); none sends it in
	// clear. The first encrypts what this node sends; every one of them is
	// tried on what it receives, so a key can be rotated without splitting
	// gossip (SetGossipKeys, and docs/OPERATIONS.md).
	GossipKeys [][]byte
	// TLS secures Raft and forwarding with mutual TLS; nil is plain TCP.
	TLS *TLSConfig
	// InsecureCluster allows discovery without TLS and a gossip key.
	InsecureCluster bool
	// ReapAfter removes a member from the Raft configuration once gossip
	// has reported it dead (or gone) for this long; 0 never does, leaving
	// removal to an operator (RemoveMember).
	ReapAfter time.Duration
	// SnapshotThreshold is how many entries since the last snapshot trigger
	// a new one (default 8192).
	SnapshotThreshold uint64
	// TrailingLogs is how many entries are kept behind a snapshot so slow
	// followers can catch up from the log (default 10240).
	TrailingLogs uint64
	// WriteTimeout bounds how long Propose and linearizable Read wait for a
	// leader or a quorum (default 5s).
	WriteTimeout time.Duration
	// Timing holds the Raft timers; zero fields take DefaultTiming values.
	Timing Timing
	// Logger receives the node's and Raft's logs; default slog.Default().
	Logger *slog.Logger
	// Release and Commit name this build (e.g. "1.4.0", "a1b2c3d4e5f6").
	// They are advertised to the other members and shown in /status for
	// every member, so an operator can follow a rolling upgrade; empty
	// hides them. Longer than MaxBuildNameLen bytes, they are cut.
	Release string
	Commit  string
}

// MaxBuildNameLen bounds Config.Release and Config.Commit: they travel in
// gossip metadata, which holds at most 512 bytes in all. A longer name is
// cut rather than refused: a node must not fail to start over a label.
const MaxBuildNameLen = 64

// Timing holds the Raft timers. The arbor binary uses DefaultTiming with
// the operator's --raft-timeout, --snapshot-interval and
// --voter-stabilization; this package's in-process tests use FastTiming.
type Timing struct {
	// HeartbeatTimeout is how long a follower waits without contact before
	// it starts an election.
	HeartbeatTimeout time.Duration
	// ElectionTimeout is how long a candidate waits before a new election.
	ElectionTimeout time.Duration
	// LeaderLeaseTimeout is how long a leader stays leader without
	// reaching a quorum; it bounds how stale a deposed leader can be.
	LeaderLeaseTimeout time.Duration
	// CommitTimeout is the longest a follower may wait to learn a commit.
	CommitTimeout time.Duration
	// SnapshotInterval is how often Raft checks SnapshotThreshold.
	SnapshotInterval time.Duration
	// ReconcileInterval is how often the leader compares the gossip
	// members with the Raft configuration (it also does on every gossip
	// event), adding voters, updating addresses and reaping.
	ReconcileInterval time.Duration
	// JoinRetry is the pause between attempts to reach the Join peers.
	JoinRetry time.Duration
	// GossipProbeInterval, GossipProbeTimeout and GossipInterval tune
	// memberlist's failure detector and dissemination.
	GossipProbeInterval time.Duration
	GossipProbeTimeout  time.Duration
	GossipInterval      time.Duration
	// GossipReclaim is how long a dead member's name stays bound to its
	// old address; after it, a node restarted with the same id on a new
	// address is accepted.
	GossipReclaim time.Duration
	// Stabilization is how long a non-voter must have been alive and
	// caught up before the leader makes it a voter (staged voters: a
	// flapping newcomer never weakens the quorum).
	Stabilization time.Duration
}

// TLSConfig secures the traffic between nodes (Raft and forwarding) with
// mutual TLS: each side presents its certificate and accepts the other's
// only if one of the Roots signed it. Host names are not checked: peers
// are dialled at their Raft address, which certificates need not name, and
// a certificate from the cluster's private CA is what makes a member.
type TLSConfig struct {
	// Roots returns the CA (or CAs) that sign every node's certificate.
	// It is called at every handshake, on both sides, so a CA bundle
	// rotated on disk is trusted (and a dropped CA refused) at once.
	Roots func() *x509.CertPool
	// Certificate returns this node's current certificate. It is called at
	// every handshake, so a certificate rotated on disk is used at once.
	Certificate func() (*tls.Certificate, error)
}

// StaticRoots is a TLSConfig.Roots that always returns pool.
func StaticRoots(pool *x509.CertPool) func() *x509.CertPool {
	return func() *x509.CertPool { return pool }
}

// DefaultRaftTimeout is the failure detector's default (Timing.RaftTimeout):
// a follower calls an election once it has not heard from the leader for
// this long. It is the hashicorp/raft default, and the one operators can
// change with --raft-timeout.
//
// A follower checks at random intervals of one to two times it (the
// leader heartbeats every tenth of it), and the other follower votes only
// once it, too, has given up on the old leader, so a leader's kill -9
// pauses writes for about 1.1–3.2 s (measured: docs/PERFORMANCE.md).
// 400 ms halved that pause, but two race-instrumented test clusters
// sharing two busy cores, a 40 MiB write under CPU contention and
// throttled Kubernetes pods (CFS quota periods of 100 ms) all missed it
// often enough to call elections without a failure: a leader that moves
// for nothing pauses writes as surely as one that dies. Safety never
// depends on the timers: linearizable reads confirm leadership with a
// quorum.
const DefaultRaftTimeout = time.Second

// DefaultTiming returns the production timers: a DefaultRaftTimeout
// failure detector, the library's 50 ms commit timeout and a 30 s
// snapshot check.
func DefaultTiming() Timing {
	d := raft.DefaultConfig()
	return Timing{
		CommitTimeout:    d.CommitTimeout,
		SnapshotInterval: 30 * time.Second,
		// memberlist's LAN profile: a dead node is declared in a few
		// seconds; dissemination every 200 ms.
		ReconcileInterval:   2 * time.Second,
		JoinRetry:           2 * time.Second,
		GossipProbeInterval: time.Second,
		GossipProbeTimeout:  500 * time.Millisecond,
		GossipInterval:      200 * time.Millisecond,
		GossipReclaim:       10 * time.Second,
		Stabilization:       10 * time.Second,
	}.WithRaftTimeout(DefaultRaftTimeout)
}

// WithRaftTimeout returns t with the failure detector set from one
// duration: HeartbeatTimeout and ElectionTimeout are d, the leader lease
// half of it (a deposed leader stops acting as one well before a new one
// can be elected).
func (t Timing) WithRaftTimeout(d time.Duration) Timing {
	t.HeartbeatTimeout = d
	t.ElectionTimeout = d
	t.LeaderLeaseTimeout = d / 2
	return t
}

// Bounds of the Raft timeout: below MinRaftTimeout a busy host calls
// elections all the time; above MaxRaftTimeout a failed leader goes
// unnoticed for minutes.
const (
	MinRaftTimeout = 100 * time.Millisecond
	MaxRaftTimeout = time.Minute
)

// DefaultConfig returns the production defaults.
func DefaultConfig() Config {
	host, _ := os.Hostname() // an empty NodeID is caught by Validate
	return Config{
		NodeID:            host,
		DataDir:           "arbor-data",
		RaftAddr:          ":8300",
		BootstrapExpect:   1,
		SnapshotThreshold: 8192,
		TrailingLogs:      10240,
		WriteTimeout:      5 * time.Second,
		Timing:            DefaultTiming(),
		Logger:            slog.Default(),
	}
}

// withDefaults returns c with every zero field replaced by its default, so
// callers can set only what they care about.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.NodeID == "" {
		c.NodeID = d.NodeID
	}
	if c.DataDir == "" {
		c.DataDir = d.DataDir
	}
	if c.RaftAddr == "" {
		c.RaftAddr = d.RaftAddr
	}
	if c.BootstrapExpect == 0 {
		c.BootstrapExpect = d.BootstrapExpect
	}
	if c.SnapshotThreshold == 0 {
		c.SnapshotThreshold = d.SnapshotThreshold
	}
	if c.TrailingLogs == 0 {
		c.TrailingLogs = d.TrailingLogs
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = d.WriteTimeout
	}
	dt := d.Timing
	t := &c.Timing
	for _, f := range []struct{ v, d *time.Duration }{
		{&t.HeartbeatTimeout, &dt.HeartbeatTimeout},
		{&t.ElectionTimeout, &dt.ElectionTimeout},
		{&t.LeaderLeaseTimeout, &dt.LeaderLeaseTimeout},
		{&t.CommitTimeout, &dt.CommitTimeout},
		{&t.SnapshotInterval, &dt.SnapshotInterval},
		{&t.ReconcileInterval, &dt.ReconcileInterval},
		{&t.JoinRetry, &dt.JoinRetry},
		{&t.GossipProbeInterval, &dt.GossipProbeInterval},
		{&t.GossipProbeTimeout, &dt.GossipProbeTimeout},
		{&t.GossipInterval, &dt.GossipInterval},
		{&t.GossipReclaim, &dt.GossipReclaim},
		{&t.Stabilization, &dt.Stabilization},
	} {
		if *f.v == 0 {
			*f.v = *f.d
		}
	}
	if c.Logger == nil {
		c.Logger = d.Logger
	}
	c.Release, c.Commit = clip(c.Release, MaxBuildNameLen), clip(c.Commit, MaxBuildNameLen)
	return c
}

// clip cuts s to at most n bytes.
func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// Validate reports the first problem with c (after defaults are applied).
func (c Config) Validate() error {
	c = c.withDefaults()
	if c.NodeID == "" {
		return errors.New("cluster config: node id is empty and the host name is unknown")
	}
	if _, _, err := splitRaftAddr(c.RaftAddr); err != nil {
		return fmt.Errorf("cluster config: %w", err)
	}
	if c.BootstrapExpect < 1 {
		return fmt.Errorf("cluster config: bootstrap-expect must be at least 1, got %d", c.BootstrapExpect)
	}
	if err := c.validateCluster(); err != nil {
		return fmt.Errorf("cluster config: %w", err)
	}
	if c.WriteTimeout < 0 {
		return fmt.Errorf("cluster config: write timeout %s is negative", c.WriteTimeout)
	}
	if err := raft.ValidateConfig(c.raftConfig(nil)); err != nil {
		return fmt.Errorf("cluster config: raft: %w", err)
	}
	return nil
}

// validateCluster checks the multi-node settings: discovery is needed to
// meet other nodes, and, unless InsecureCluster, it must be encrypted and
// Raft must use mutual TLS (SPEC §7).
func (c Config) validateCluster() error {
	multi := c.BootstrapExpect > 1 || len(c.Join) > 0
	if multi && c.GossipAddr == "" {
		return errors.New("bootstrap-expect > 1 and join need a gossip address (discovery)")
	}
	if c.GossipAddr != "" {
		if _, _, err := net.SplitHostPort(c.GossipAddr); err != nil {
			return fmt.Errorf("gossip address %q: %w", c.GossipAddr, err)
		}
		if !c.InsecureCluster && (c.TLS == nil || len(c.GossipKeys) == 0) {
			return errors.New("a multi-node cluster needs mutual TLS and a gossip key (or InsecureCluster)")
		}
	}
	if err := validateGossipKeys(c.GossipKeys); err != nil {
		return err
	}
	if c.TLS != nil && (c.TLS.Roots == nil || c.TLS.Certificate == nil) {
		return errors.New("TLS needs both Roots and Certificate")
	}
	if c.ReapAfter < 0 {
		return fmt.Errorf("reap-after %s is negative", c.ReapAfter)
	}
	return nil
}

// raftConfig translates c (with defaults applied) into a raft.Config.
func (c Config) raftConfig(logger *slog.Logger) *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(c.NodeID)
	rc.SnapshotThreshold = c.SnapshotThreshold
	rc.TrailingLogs = c.TrailingLogs
	rc.SnapshotInterval = c.Timing.SnapshotInterval
	rc.HeartbeatTimeout = c.Timing.HeartbeatTimeout
	rc.ElectionTimeout = c.Timing.ElectionTimeout
	rc.LeaderLeaseTimeout = c.Timing.LeaderLeaseTimeout
	rc.CommitTimeout = c.Timing.CommitTimeout
	// A removed node keeps running so an operator can inspect it and it
	// can be re-added; membership is managed explicitly (SPEC §10).
	rc.ShutdownOnRemove = false
	// Per-peer duplicates of the labelled timings (installRaftMetrics).
	rc.NoLegacyTelemetry = true
	if logger != nil {
		rc.Logger = newHCLogger(logger, "raft")
	}
	return rc
}

// splitRaftAddr parses a host:port bind address; the host may be empty.
func splitRaftAddr(addr string) (host string, port int, err error) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("raft address %q: %w", addr, err)
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 0 || n > 65535 {
		return "", 0, fmt.Errorf("raft address %q: bad port %q", addr, p)
	}
	return h, n, nil
}
