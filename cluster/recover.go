package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/arbordb/arbor/fsm"
)

// Files of an explicit recovery in the data directory.
const (
	// PeersFile, placed in a stopped node's data directory, is applied at
	// its next start as a recovery (hashicorp/raft's peers.json format)
	// and then renamed to PeersFile+".applied".
	PeersFile = "peers.json"
	// RecoveryLog keeps one JSON line per recovery ever applied to the
	// data directory.
	RecoveryLog = "recovery.log"
)

// Errors of a recovery; each is wrapped with the details.
var (
	// ErrBadVoters says the new voter list is unusable.
	ErrBadVoters = errors.New("bad voter list")
	// ErrNoRaftState says the data directory holds no Raft state to recover.
	ErrNoRaftState = errors.New("no Raft state in the data directory")
)

// Recovery is an offline view of a stopped node's Raft state, for the
// last-resort recovery from the loss of a quorum: replacing the
// configuration with the surviving voters (docs/OPERATIONS.md). Open it
// with OpenRecovery, look at Current, LastIndex and LastTerm, then Apply
// and Close.
type Recovery struct {
	// Current is the newest configuration in the node's snapshot and log.
	Current raft.Configuration
	// LastIndex and LastTerm are those of the node's last log entry (or
	// snapshot, if the log is empty).
	LastIndex, LastTerm uint64

	dataDir string
	id      raft.ServerID
	log     *slog.Logger
	bolt    *raftboltdb.BoltStore
	logs    raft.LogStore
	snaps   raft.SnapshotStore
}

// OpenRecovery opens the Raft state of the node nodeID in dataDir, which
// must not be running (its raft.db lock tells).
func OpenRecovery(dataDir, nodeID string, logger *slog.Logger) (*Recovery, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if nodeID == "" {
		return nil, fmt.Errorf("recover: %w: the node id is empty", ErrBadVoters)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "raft.db")); err != nil {
		return nil, fmt.Errorf("recover: %s: %w (%v)", dataDir, ErrNoRaftState, err)
	}
	r := &Recovery{dataDir: dataDir, id: raft.ServerID(nodeID), log: logger.With("node_id", nodeID)}
	if err := r.open(); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

func (r *Recovery) open() error {
	bolt, err := raftboltdb.New(boltStoreOptions(r.dataDir))
	if err != nil {
		return fmt.Errorf("recover: open raft.db (stop the node first: is it running on %s?): %w", r.dataDir, err)
	}
	r.bolt, r.logs = bolt, bolt
	fss, err := raft.NewFileSnapshotStoreWithLogger(r.dataDir, snapshotsRetained, newHCLogger(r.log, "snapshots"))
	if err != nil {
		return fmt.Errorf("recover: snapshot store: %w", err)
	}
	r.snaps = fss
	return r.inspect()
}

// inspect reads the current configuration and the last index and term.
func (r *Recovery) inspect() error {
	has, err := raft.HasExistingState(r.logs, r.bolt, r.snaps)
	if err != nil {
		return fmt.Errorf("recover: inspect raft state: %w", err)
	}
	if !has {
		return fmt.Errorf("recover: %s: %w", r.dataDir, ErrNoRaftState)
	}
	_, trans := raft.NewInmemTransport("")
	defer trans.Close()
	if r.Current, err = raft.GetConfiguration(r.raftConfig(), &fsmForRecovery{fsm.New()}, r.logs, r.bolt, r.snaps, trans); err != nil {
		return fmt.Errorf("recover: read the configuration: %w", err)
	}
	last, err := r.logs.LastIndex()
	if err != nil {
		return fmt.Errorf("recover: last log index: %w", err)
	}
	if last > 0 {
		var l raft.Log
		if err := r.logs.GetLog(last, &l); err != nil {
			return fmt.Errorf("recover: read log entry %d: %w", last, err)
		}
		r.LastIndex, r.LastTerm = l.Index, l.Term
		return nil
	}
	if snaps, err := r.snaps.List(); err == nil && len(snaps) > 0 {
		r.LastIndex, r.LastTerm = snaps[0].Index, snaps[0].Term
	}
	return nil
}

// raftConfig is the minimal valid configuration the offline raft
// functions need.
func (r *Recovery) raftConfig() *raft.Config {
	c := raft.DefaultConfig()
	c.LocalID = r.id
	c.Logger = newHCLogger(r.log, "raft")
	return c
}

// Apply makes voters the node's whole configuration with raft's
// RecoverCluster: it replays the snapshot and the log, takes a snapshot
// carrying the new configuration and compacts the log. Every entry in
// this node's log counts as committed afterwards. source says who asked
// (the command, or a peers.json) for the record appended to RecoveryLog
// and logged at WARN.
func (r *Recovery) Apply(voters raft.Configuration, source string) error {
	if err := r.checkVoters(voters); err != nil {
		return err
	}
	_, trans := raft.NewInmemTransport("")
	defer trans.Close()
	if err := raft.RecoverCluster(r.raftConfig(), &fsmForRecovery{fsm.New()}, r.logs, r.bolt, r.snaps, trans, voters); err != nil {
		return fmt.Errorf("recover: %w", err)
	}
	rec := recoveryRecord{
		Time:      time.Now().UTC().Format(time.RFC3339),
		Source:    source,
		NodeID:    string(r.id),
		LastIndex: r.LastIndex,
		LastTerm:  r.LastTerm,
		Old:       describeServers(r.Current.Servers),
		New:       describeServers(voters.Servers),
	}
	rec.Host, _ = os.Hostname()
	r.log.Warn("RECOVERY: the Raft configuration was replaced by an operator; acknowledged writes the lost members held may be gone",
		"source", source, "old", rec.Old, "new", rec.New, "last_index", r.LastIndex, "last_term", r.LastTerm)
	if err := appendRecoveryRecord(r.dataDir, rec); err != nil {
		return fmt.Errorf("recover: the configuration was replaced, but the record was not written: %w", err)
	}
	r.Current = voters
	return nil
}

// checkVoters refuses lists that would leave a node unable to start or a
// cluster unable to elect.
func (r *Recovery) checkVoters(c raft.Configuration) error {
	if len(c.Servers) == 0 {
		return fmt.Errorf("recover: %w: no voters", ErrBadVoters)
	}
	seen := map[raft.ServerID]bool{}
	self := false
	for _, s := range c.Servers {
		if s.ID == "" || s.Address == "" {
			return fmt.Errorf("recover: %w: a server without an id or address", ErrBadVoters)
		}
		if seen[s.ID] {
			return fmt.Errorf("recover: %w: %s is listed twice", ErrBadVoters, s.ID)
		}
		seen[s.ID] = true
		if s.ID == r.id {
			self = true
			if s.Suffrage != raft.Voter {
				return fmt.Errorf("recover: %w: this node (%s) must be a voter", ErrBadVoters, r.id)
			}
		}
	}
	if !self {
		return fmt.Errorf("recover: %w: this node (%s) is not in the list; run the recovery on each kept survivor with the same list", ErrBadVoters, r.id)
	}
	return nil
}

// Close releases the stores.
func (r *Recovery) Close() error {
	if r.bolt == nil {
		return nil
	}
	err := r.bolt.Close()
	r.bolt = nil
	return err
}

// ParseVoters parses "id=host:port,id=host:port" into a configuration of
// voters.
func ParseVoters(s string) (raft.Configuration, error) {
	var c raft.Configuration
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		id, addr, ok := strings.Cut(item, "=")
		if !ok || id == "" || addr == "" {
			return c, fmt.Errorf("%w: %q is not id=host:port", ErrBadVoters, item)
		}
		if host, port, err := splitRaftAddr(addr); err != nil || host == "" || port == 0 {
			return c, fmt.Errorf("%w: %s: %q is not a host:port peers can dial", ErrBadVoters, id, addr)
		}
		c.Servers = append(c.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(id), Address: raft.ServerAddress(addr)})
	}
	if len(c.Servers) == 0 {
		return c, fmt.Errorf("%w: empty", ErrBadVoters)
	}
	return c, nil
}

// applyPeersFile applies DataDir/peers.json, if there is one, before the
// node starts, and renames it so that it is applied once. A malformed
// file stops the start: ignoring it would start the node in the very
// configuration the operator meant to replace.
func applyPeersFile(dataDir, nodeID string, logger *slog.Logger) error {
	path := filepath.Join(dataDir, PeersFile)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	voters, err := raft.ReadConfigJSON(path)
	if err != nil {
		return fmt.Errorf("cluster: %s: %w (fix or remove it)", path, err)
	}
	r, err := OpenRecovery(dataDir, nodeID, logger)
	if err != nil {
		return fmt.Errorf("cluster: %s: %w", path, err)
	}
	err = r.Apply(voters, PeersFile)
	if cerr := r.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("recover: close raft.db: %w", cerr)
	}
	if err != nil {
		return fmt.Errorf("cluster: %s: %w", path, err)
	}
	if err := os.Rename(path, path+".applied"); err != nil {
		return fmt.Errorf("cluster: %s was applied but not renamed (remove it before the next start): %w", path, err)
	}
	return nil
}

// recoveryRecord is one line of RecoveryLog.
type recoveryRecord struct {
	Time      string   `json:"time"`
	Host      string   `json:"host"`
	Source    string   `json:"source"`
	NodeID    string   `json:"node_id"`
	LastIndex uint64   `json:"last_index"`
	LastTerm  uint64   `json:"last_term"`
	Old       []string `json:"old_configuration"`
	New       []string `json:"new_configuration"`
}

func appendRecoveryRecord(dataDir string, rec recoveryRecord) error {
	line, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dataDir, RecoveryLog), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// describeServers renders servers as "id=address (suffrage)", sorted.
func describeServers(servers []raft.Server) []string {
	out := make([]string, 0, len(servers))
	for _, s := range servers {
		out = append(out, fmt.Sprintf("%s=%s (%s)", s.ID, s.Address, strings.ToLower(s.Suffrage.String())))
	}
	slices.Sort(out)
	return out
}

// DescribeServers renders a configuration for people, one server per
// element, sorted.
func DescribeServers(c raft.Configuration) []string { return describeServers(c.Servers) }

// fsmForRecovery hides fsm.FSM's batching from the offline replay, which
// does not need it, and gives the replay a throwaway state.
type fsmForRecovery struct{ f *fsm.FSM }

func (r *fsmForRecovery) Apply(l *raft.Log) any               { return raftFSM{r.f}.Apply(l) }
func (r *fsmForRecovery) Snapshot() (raft.FSMSnapshot, error) { return raftFSM{r.f}.Snapshot() }
func (r *fsmForRecovery) Restore(rc io.ReadCloser) error      { return raftFSM{r.f}.Restore(rc) }
