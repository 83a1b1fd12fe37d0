// Package nemesis starts a three-node arbor cluster on a backend (local
// processes or Docker containers) and injects faults into it: kill -9,
// pause, graceful stop, restart and — on Docker — network partitions.
package nemesis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/arbordb/arbor/cmd/internal/client"
	"github.com/arbordb/arbor/cmd/internal/testcluster"
)

// ErrUnsupported is returned for a fault the backend cannot inject.
var ErrUnsupported = errors.New("nemesis: not supported by this backend")

// Backend runs the nodes and injects faults into them. Every method is
// bounded: by ctx, and by the backend's own timeouts.
type Backend interface {
	// Name is "process" or "docker".
	Name() string
	// Nodes are the node ids, n1…n3.
	Nodes() []string
	// Setup prepares everything (certificates, data directories,
	// networks, containers) and starts every node.
	Setup(ctx context.Context) error
	// Endpoints are the nodes' HTTPS APIs, reachable from this host.
	Endpoints() []client.Endpoint
	// CAFile is the CA certificate clients trust.
	CAFile() string

	// Kill stops a node with SIGKILL: no shutdown, no flush.
	Kill(ctx context.Context, node string) error
	// Stop stops a node gracefully (SIGTERM) and reports how long it took
	// to exit.
	Stop(ctx context.Context, node string) (time.Duration, error)
	// Wipe deletes everything in a stopped or killed node's data
	// directory; its next Start begins with no state.
	Wipe(ctx context.Context, node string) error
	// Start starts a stopped or killed node again, on the same data.
	Start(ctx context.Context, node string) error
	// Pause freezes a node (SIGSTOP, or the cgroup freezer): its sockets
	// stay open and nothing answers.
	Pause(ctx context.Context, node string) error
	// Resume unfreezes a paused node.
	Resume(ctx context.Context, node string) error
	// Cut severs the network links between each pair (both directions);
	// Heal restores every link. ErrUnsupported without partitions.
	Cut(ctx context.Context, pairs [][2]string) error
	Heal(ctx context.Context) error
	// Partitions reports whether Cut works.
	Partitions() bool

	// CollectLogs copies every node's log into dir.
	CollectLogs(ctx context.Context, dir string) error
	// Cleanup stops and removes everything Setup created, except the
	// report directory. It is safe to call more than once, and after a
	// failed Setup.
	Cleanup(ctx context.Context) error
}

// NodeNames are the ids of the three nodes.
var NodeNames = []string{"n1", "n2", "n3"}

// NodeOptions are the arbor flags every node gets, whatever the backend.
type NodeOptions struct {
	AdminSecret       string
	RaftTimeout       time.Duration // 0: the node's default
	WriteTimeout      time.Duration
	SnapshotThreshold int
	TrailingLogs      int
	// Extra are more `arbor serve` flags, appended last.
	Extra []string
}

// flags renders the options as serve flags.
func (o NodeOptions) flags() []string {
	f := []string{"--admin-secret", o.AdminSecret}
	if o.RaftTimeout != 0 {
		f = append(f, "--raft-timeout", o.RaftTimeout.String())
	}
	if o.WriteTimeout > 0 {
		f = append(f, "--write-timeout", o.WriteTimeout.String())
	}
	if o.SnapshotThreshold > 0 {
		f = append(f, "--snapshot-threshold", strconv.Itoa(o.SnapshotThreshold))
	}
	if o.TrailingLogs > 0 {
		f = append(f, "--trailing-logs", strconv.Itoa(o.TrailingLogs))
	}
	return append(f, o.Extra...)
}

// addrBook holds the nodes' HTTPS addresses for a backend.
type addrBook struct {
	mu    sync.Mutex
	addrs map[string]string // node → host:port on 127.0.0.1
}

func (b *addrBook) setAddrs(addrs map[string]string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.addrs = addrs
}

// Endpoints implements Backend.
func (b *addrBook) Endpoints() []client.Endpoint {
	b.mu.Lock()
	defer b.mu.Unlock()
	var eps []client.Endpoint
	for _, n := range NodeNames {
		if a, ok := b.addrs[n]; ok {
			eps = append(eps, client.Endpoint{Node: n, Addr: a})
		}
	}
	return eps
}

// wipe empties a node's data directory, keeping the directory itself (a
// container has it mounted).
func wipe(dir string) error {
	if err := testcluster.WipeDir(dir); err != nil {
		return fmt.Errorf("nemesis: wipe: %w", err)
	}
	return nil
}
