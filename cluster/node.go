package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/arbordb/arbor/fsm"
)

// Storage tuning.
const (
	// logCacheSize is how many recent entries are kept in memory: followers
	// being replicated to and the read barrier read them back often.
	logCacheSize = 512
	// snapshotsRetained is how many snapshots stay on disk; one spare
	// survives a crash in the middle of writing the newest.
	snapshotsRetained = 2
)

// Node is one member of the cluster: the Raft instance around an fsm.FSM,
// with the write path (Propose), the read barrier (Read), readiness,
// discovery and membership, and status. Its methods are safe for
// concurrent use.
type Node struct {
	cfg   Config
	log   *slog.Logger
	fsm   *fsm.FSM
	rfsm  *countingFSM // fsm as given to Raft
	raft  *raft.Raft
	logs  raft.LogStore // the cached log store; read by the read barrier
	bolt  *raftboltdb.BoltStore
	net   network
	snaps *meteredSnapshots
	id    raft.ServerID
	addr  raft.ServerAddress
	// disco is nil when discovery is off (a lone node).
	disco discovery
	// runID is this process's run id (presence.go).
	runID string
	// ledAt is when LeaderContact last saw this node lead, in Unix
	// nanoseconds.
	ledAt atomic.Int64
	// roundTrips are this node's requests to its leader (contact.go).
	roundTrips roundTrips
	// formats is what this build applies and writes (thisBuild outside
	// tests): advertised to peers, and the rule of CanPropose.
	formats buildFormats

	// changes wakes waiters whenever the leader or the Raft state changes.
	changes notifier
	// memberEvents wakes the membership loop when gossip sees a change
	// or leadership moves.
	memberEvents notifier
	// gate runs one Barrier per leadership term (see read.go).
	gate termGate
	// verify batches VerifyLeader rounds across concurrent reads.
	verify roundBatcher
	// remoteReads batches a follower's read-index requests to the leader.
	remoteReads roundBatcher
	// progress is the leader's record of its members' applied indexes
	// and last contact (progress.go).
	progress progressBook

	// readyIndex is the commit index this node must apply before it
	// reports ready; 0 while it has not (re)started becoming ready.
	// catchingUp: this node started without Raft state and has not yet
	// applied what the cluster had committed (catchup.go): it neither
	// votes nor campaigns.
	catchingUp atomic.Bool
	catchUpMu  sync.Mutex // serialises finishCatchUp
	// tooLarge counts the writes refused for their size (writelimit.go).
	tooLarge atomic.Uint64

	readyIndex    atomic.Uint64
	leaderChanges atomic.Uint64
	forwarded     atomic.Uint64
	reconciles    atomic.Uint64 // reconciliation rounds run as leader
	closing       atomic.Bool

	// missingSince remembers, on the leader, since when each configured
	// server has been absent from gossip (for ReapAfter).
	memberMu     sync.Mutex
	missingSince map[raft.ServerID]time.Time
	stableSince  map[raft.ServerID]time.Time // non-voters caught up since (leader)

	observer *raft.Observer
	obsCh    chan raft.Observation
	stop     chan struct{}
	wg       sync.WaitGroup

	shutdownOnce sync.Once
	shutdownErr  error
}

// deps are the parts of a node that tests replace: the network (in-memory
// with partitions instead of TCP), discovery (a fake instead of
// memberlist) and the build's formats (a newer or older release, for
// mixed-version clusters; zero means thisBuild).
type deps struct {
	network   func(Config, *slog.Logger) (network, error)
	discovery func(cfg Config, meta nodeMeta, logger *slog.Logger, notify func()) (discovery, error)
	formats   buildFormats
}

// productionDeps are TCP (with mutual TLS when configured) and memberlist.
var productionDeps = deps{network: newTCPNetwork, discovery: newGossip}

// New opens the Raft stores in cfg.DataDir, binds the cluster port, starts
// Raft around f and discovery (when cfg.GossipAddr is set). A lone node
// with no Raft state bootstraps a one-node cluster at once; with
// BootstrapExpect > 1 the cluster forms once gossip has found that many
// new nodes; a node with state rejoins with it. Use Ready to know when the
// node serves.
func New(cfg Config, f *fsm.FSM) (*Node, error) { return newNode(cfg, f, productionDeps) }

func newNode(cfg Config, f *fsm.FSM, d deps) (*Node, error) {
	if f == nil {
		return nil, errors.New("cluster: New needs an FSM")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	n := &Node{
		cfg:          cfg,
		log:          cfg.Logger.With("node_id", cfg.NodeID),
		fsm:          f,
		rfsm:         &countingFSM{raftFSM: raftFSM{f}},
		id:           raft.ServerID(cfg.NodeID),
		obsCh:        make(chan raft.Observation, 64),
		stop:         make(chan struct{}),
		missingSince: map[raft.ServerID]time.Time{},
		stableSince:  map[raft.ServerID]time.Time{},
		formats:      d.formats,
	}
	if n.formats.kinds == nil {
		n.formats = thisBuild()
	}
	runID, err := newRunID()
	if err != nil {
		return nil, err
	}
	n.runID = runID
	n.verify.run = func() (uint64, error) { return 0, n.raft.VerifyLeader().Error() }
	n.remoteReads.run = n.remoteReadIndexRound
	hasState, err := n.open(d)
	if err != nil {
		n.closeStores()
		return nil, err
	}
	n.observer = raft.NewObserver(n.obsCh, false, func(o *raft.Observation) bool {
		switch o.Data.(type) {
		case raft.LeaderObservation, raft.RaftState:
			return true
		}
		return false
	})
	n.raft.RegisterObserver(n.observer)
	n.wg.Add(4)
	go n.watch()
	go n.indexLoop()
	go n.progressLoop()
	go n.contactLoop()
	n.net.Serve(n.handleRPC)

	bootstrapped := false
	if !hasState && cfg.BootstrapExpect == 1 && len(cfg.Join) == 0 {
		if bootstrapped, err = n.bootstrapSelf(); err != nil {
			_ = n.Shutdown(context.Background())
			return nil, err
		}
	}
	if n.catchingUp.Load() {
		n.log.Info("started without Raft state: not voting until caught up with the cluster")
		n.wg.Add(1)
		go n.catchUpLoop()
	}
	if cfg.GossipAddr != "" {
		if n.disco, err = d.discovery(cfg, n.localMeta(), n.log, n.memberEvents.notify); err != nil {
			_ = n.Shutdown(context.Background())
			return nil, fmt.Errorf("cluster: %w", err)
		}
		if r, ok := n.net.(interface {
			resolvePeersWith(func(raft.ServerAddress) (string, bool))
		}); ok {
			r.resolvePeersWith(n.gossipHost)
		}
		if p, ok := n.net.(interface {
			piecesWith(func(raft.ServerID) bool)
		}); ok {
			p.piecesWith(n.takesPieces)
		}
		n.wg.Add(1)
		go n.membershipLoop()
	}
	n.wg.Add(1)
	go n.orphanLoop()
	n.log.Info("raft started", "raft_addr", string(n.addr), "data_dir", cfg.DataDir,
		"existing_state", hasState, "bootstrapped", bootstrapped, "bootstrap_expect", cfg.BootstrapExpect,
		"mutual_tls", cfg.TLS != nil, "gossip", cfg.GossipAddr)
	return n, nil
}

// open creates the data directory, the stores and the transport, and starts
// Raft. It reports whether Raft state already existed.
func (n *Node) open(d deps) (bool, error) {
	cfg := n.cfg
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return false, fmt.Errorf("cluster: data dir: %w", err)
	}
	// An operator's peers.json (quorum-loss recovery) applies before Raft
	// opens its stores.
	if err := applyPeersFile(cfg.DataDir, cfg.NodeID, n.log); err != nil {
		return false, err
	}
	installRaftMetrics()
	bolt, err := raftboltdb.New(boltStoreOptions(cfg.DataDir))
	if err != nil {
		return false, fmt.Errorf("cluster: open raft.db (is another node using %s?): %w", cfg.DataDir, err)
	}
	n.bolt = bolt
	if n.logs, err = raft.NewLogCache(logCacheSize, bolt); err != nil {
		return false, fmt.Errorf("cluster: log cache: %w", err)
	}
	// The file store keeps its snapshots in DataDir/snapshots.
	fss, err := raft.NewFileSnapshotStoreWithLogger(cfg.DataDir, snapshotsRetained, newHCLogger(n.log, "snapshots"))
	if err != nil {
		return false, fmt.Errorf("cluster: snapshot store: %w", err)
	}
	n.snaps = &meteredSnapshots{SnapshotStore: fss, dir: filepath.Join(cfg.DataDir, "snapshots")}
	if n.net, err = d.network(cfg, n.log); err != nil {
		return false, fmt.Errorf("cluster: %w", err)
	}
	n.addr = n.net.Addr()
	hasState, err := raft.HasExistingState(n.logs, bolt, n.snaps)
	if err != nil {
		return false, fmt.Errorf("cluster: inspect raft state: %w", err)
	}
	if err := n.openCatchUp(hasState); err != nil {
		return false, err
	}
	trans := n.net.Transport()
	if n.catchingUp.Load() {
		trans = guardVotes(trans, n.id, n.catchingUp.Load)
	}
	if n.raft, err = raft.NewRaft(cfg.raftConfig(n.log), n.rfsm, n.logs, bolt, n.snaps, trans); err != nil {
		return false, fmt.Errorf("cluster: start raft: %w", err)
	}
	// NewRaft restored this node's own snapshot; later restores are
	// installs from the leader.
	n.rfsm.started.Store(true)
	return hasState, nil
}

// bootstrapSelf makes a new one-node cluster when this node is expected
// to be alone. It reports whether it did.
func (n *Node) bootstrapSelf() (bool, error) {
	conf := raft.Configuration{Servers: []raft.Server{{Suffrage: raft.Voter, ID: n.id, Address: n.addr}}}
	err := n.raft.BootstrapCluster(conf).Error()
	if errors.Is(err, raft.ErrCantBootstrap) {
		return false, nil // state appeared meanwhile; nothing to do
	}
	if err != nil {
		return false, fmt.Errorf("cluster: bootstrap: %w", err)
	}
	n.finishCatchUp("bootstrapped a new cluster")
	return true, nil
}

// closeStores releases whatever open() managed to open; used when New
// fails before Raft runs.
func (n *Node) closeStores() {
	if n.raft != nil {
		_ = n.raft.Shutdown().Error()
	}
	if n.net != nil {
		_ = n.net.Close()
	}
	if n.bolt != nil {
		_ = n.bolt.Close()
	}
}

// bound limits ctx to the configured write timeout.
func (n *Node) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, n.cfg.WriteTimeout)
}
