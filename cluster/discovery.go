package cluster

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/hashicorp/raft"
)

// discovery tells a node which other nodes exist and whether they are
// alive. It is advisory: the Raft configuration is the truth about
// membership, and discovery only feeds bootstrap (BootstrapExpect), the
// leader's reconciliation (new voters, changed addresses, reaping) and
// /status. Production uses memberlist (gossip.go); tests use a fake.
type discovery interface {
	io.Closer
	// Peers returns every node seen, this one included, with its status
	// and the metadata it advertises.
	Peers() []peer
	// Joined reports whether this node has met another node (its Join
	// succeeded once, or someone joined it).
	Joined() bool
	// Advertise publishes new metadata for this node.
	Advertise(meta nodeMeta)
	// Leave tells the others this node is going away (a graceful stop);
	// they see it as left rather than failed.
	Leave(timeout time.Duration) error
}

// peerStatus is what gossip knows of a node's liveness.
type peerStatus uint8

// Peer statuses.
const (
	peerAlive peerStatus = iota
	peerDead             // failed: stopped answering probes
	peerLeft             // announced its departure (graceful stop)
)

// String names the status for /status.
func (s peerStatus) String() string {
	switch s {
	case peerAlive:
		return "alive"
	case peerDead:
		return "failed"
	case peerLeft:
		return "left"
	default:
		return "unknown"
	}
}

// peer is one node as discovery sees it.
type peer struct {
	ID         raft.ServerID
	GossipAddr string
	Status     peerStatus
	// Since is when Status last changed.
	Since time.Time
	Meta  nodeMeta
}

// nodeMeta is what a node advertises through gossip. It travels in
// memberlist's node metadata (at most 512 bytes), hence the short names.
type nodeMeta struct {
	// RaftAddr is the address in the Raft configuration (and for RPCs).
	RaftAddr raft.ServerAddress `json:"r"`
	// EntryFormat and SnapshotFormat are the newest formats the node's
	// build applies (fsm.CommandVersion, fsm.SnapshotVersion).
	EntryFormat    int `json:"e"`
	SnapshotFormat int `json:"s"`
	// Release and Commit name the node's build (Config.Release, Commit);
	// absent from releases before they were advertised.
	Release string `json:"v,omitempty"`
	Commit  string `json:"c,omitempty"`
	// Expect is the node's BootstrapExpect.
	Expect int `json:"x"`
	// HasState says the node has Raft state (it belongs to a cluster), so
	// nobody may bootstrap a new one with it.
	HasState bool `json:"h,omitempty"`
	// Formed says the node's log holds more than a bootstrap
	// configuration: the cluster it belongs to has elected a leader and
	// may have acknowledged writes. A node with state that is not formed
	// is a founding member that bootstrapped a moment before the others.
	Formed bool `json:"f,omitempty"`
	// CatchingUp says the node started without Raft state (new, or its
	// disk was wiped) and has not caught up yet: it does not vote, and
	// the leader keeps it a non-voter. Absent from older releases.
	CatchingUp bool `json:"u,omitempty"`
	// RunID is the node process's run id (Node.RunID): the onDisconnect
	// operations of its other runs are orphans. Absent from older
	// releases.
	RunID string `json:"n,omitempty"`
}

// maxMetaSize is memberlist's limit on node metadata.
const maxMetaSize = 512

// encode renders m for gossip.
func (m nodeMeta) encode() ([]byte, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	if len(b) > maxMetaSize {
		return nil, fmt.Errorf("node metadata is %d bytes, more than gossip's %d (is the advertise host very long?)", len(b), maxMetaSize)
	}
	return b, nil
}

// decodeMeta parses a peer's metadata; a peer we cannot understand (a much
// newer release, another program on the port) gets zero metadata, which
// bootstrap and reconciliation ignore.
func decodeMeta(b []byte) nodeMeta {
	var m nodeMeta
	if err := json.Unmarshal(b, &m); err != nil {
		return nodeMeta{}
	}
	return m
}

// gossipHost is the host gossip last saw the live peer whose Raft address
// is addr at (tcpNetwork dials it when addr's name does not resolve).
func (n *Node) gossipHost(addr raft.ServerAddress) (string, bool) {
	for _, p := range n.disco.Peers() {
		if p.Meta.RaftAddr != addr || p.ID == n.id || p.Status != peerAlive || p.GossipAddr == "" {
			continue
		}
		host, _, err := net.SplitHostPort(p.GossipAddr)
		return host, err == nil && host != ""
	}
	return "", false
}
