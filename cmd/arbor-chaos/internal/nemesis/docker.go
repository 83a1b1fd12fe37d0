package nemesis

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/arbordb/arbor/cmd/internal/testcluster"
)

// Label marks every container and network a run creates, with the run id
// as value, so Cleanup finds them even after a partial Setup, and never
// touches anything else.
const Label = "arbor-chaos"

// Docker runs the nodes as containers of the arbor image and partitions
// them with Docker networks alone (testcluster.PairNetworks):
//
//   - each pair of nodes shares its own internal network ("pair network"),
//     where each node has its node id as network alias, so Raft (which
//     dials names, SPEC §10) uses the pair link. Cutting a link is
//     `docker network disconnect` of one node from the pair's network;
//     healing reconnects it with its alias.
//   - each node also has a private network of its own, never cut, which
//     carries its published HTTPS port on 127.0.0.1 — so clients keep
//     reaching a partitioned node, and see what it answers.
//
// Gossip (memberlist) assumes every node reaches every other's advertised
// address, which is on one pair network only; it still finds every node
// through indirect probes, but its health view flaps. Raft, reads and
// writes are unaffected: gossip is for discovery only (cluster/DESIGN.md).
type Docker struct {
	Image string // e.g. arbor:0.0.0-dev
	Dir   string // run directory: pki/, nodes/nX (mounted as /data)
	Opts  NodeOptions
	RunID string
	// GossipPort is the container's --gossip-addr port (default 8301).
	GossipPort int

	addrBook // the published HTTPS addresses

	mu    sync.Mutex
	pairs *testcluster.PairNetworks
}

// Name implements Backend.
func (d *Docker) Name() string { return "docker" }

// Nodes implements Backend.
func (d *Docker) Nodes() []string { return NodeNames }

// CAFile implements Backend.
func (d *Docker) CAFile() string { return testcluster.Layout(d.Dir).CAFile() }

// Partitions implements Backend.
func (d *Docker) Partitions() bool { return true }

// prefix starts the name of every container and network of the run.
func (d *Docker) prefix() string { return "arbor-chaos-" + d.RunID }

func (d *Docker) container(node string) testcluster.Container {
	return testcluster.Container{Name: d.prefix() + "-" + node}
}

func (d *Docker) ownNetwork(node string) string { return d.prefix() + "-" + node }

// links are the pair networks.
func (d *Docker) links() *testcluster.PairNetworks {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pairs == nil {
		d.pairs = &testcluster.PairNetworks{Prefix: d.prefix(), Nodes: NodeNames, Container: d.container}
	}
	return d.pairs
}

// Setup implements Backend.
func (d *Docker) Setup(ctx context.Context) error {
	if d.GossipPort == 0 {
		d.GossipPort = testcluster.ContainerGossipPort
	}
	if err := testcluster.ImageExists(ctx, d.Image); err != nil {
		return fmt.Errorf("nemesis: image %s not found (make image builds it): %w", d.Image, err)
	}
	user := testcluster.HostUser()
	label := Label + "=" + d.RunID
	l := testcluster.Layout(d.Dir)
	if err := os.MkdirAll(l.PKI(), 0o700); err != nil {
		return fmt.Errorf("nemesis: %w", err)
	}
	// As the caller's user, so the nodes (same user) can read the 0600 keys.
	if err := testcluster.CertsInitImage(ctx, d.Image, l.PKI(), label, user, NodeNames); err != nil {
		return err
	}
	addrs, err := testcluster.FreeAddrs(NodeNames)
	if err != nil {
		return err
	}
	d.setAddrs(addrs)

	for _, n := range NodeNames {
		if err := testcluster.CreateNetwork(ctx, d.ownNetwork(n), label, false); err != nil {
			return err
		}
	}
	if err := d.links().Create(ctx, label); err != nil {
		return err
	}
	for _, n := range NodeNames {
		if err := os.MkdirAll(l.NodeDir(n), 0o700); err != nil {
			return fmt.Errorf("nemesis: %w", err)
		}
		serve := testcluster.ContainerServe(n, NodeNames, d.GossipPort)
		_, err := testcluster.CreateContainer(ctx, testcluster.ContainerSpec{
			Name:    d.container(n).Name,
			Image:   d.Image,
			Label:   label,
			Network: d.ownNetwork(n),
			// Not the node id: the node must resolve its own id through
			// Docker's DNS (its pair-network address), not /etc/hosts.
			Hostname:    n + "-host",
			User:        user,
			StopTimeout: stopWait,
			HTTPAddr:    addrs[n],
			DataDir:     l.NodeDir(n),
			CertDir:     l.PKI(),
			Args:        append(serve.Args(), d.Opts.flags()...),
		})
		if err != nil {
			return err
		}
	}
	if err := d.links().Connect(ctx); err != nil {
		return err
	}
	for _, n := range NodeNames {
		if err := d.container(n).Start(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Kill implements Backend.
func (d *Docker) Kill(ctx context.Context, node string) error {
	return d.container(node).Kill(ctx)
}

// Wipe implements Backend: the node's directory is a bind mount.
func (d *Docker) Wipe(_ context.Context, node string) error {
	return wipe(testcluster.Layout(d.Dir).NodeDir(node))
}

// Stop implements Backend: SIGTERM, and like Process.Stop a goroutine
// dump (SIGQUIT) for a node still running stopGrace later. (docker stop
// would only SIGKILL it, hiding where it hung.)
func (d *Docker) Stop(ctx context.Context, node string) (time.Duration, error) {
	c := d.container(node)
	took, graceful, err := testcluster.StopWithDump(ctx, c, stopGrace, dumpWait, stopWait)
	switch {
	case err != nil:
		return 0, err
	case !graceful:
		return took, stillRunning(node)
	}
	// 0 is a clean exit; anything else (137: killed) is not.
	if code, err := c.ExitCode(ctx); err == nil && code != 0 {
		return took, fmt.Errorf("nemesis: %s exited with code %d after SIGTERM", node, code)
	}
	return took, nil
}

// Start implements Backend.
func (d *Docker) Start(ctx context.Context, node string) error {
	return d.container(node).Start(ctx)
}

// Pause implements Backend, with the cgroup freezer.
func (d *Docker) Pause(ctx context.Context, node string) error {
	return d.container(node).Pause(ctx)
}

// Resume implements Backend.
func (d *Docker) Resume(ctx context.Context, node string) error {
	return d.container(node).Resume(ctx)
}

// Cut implements Backend: each pair's link is cut by disconnecting its
// first node from the pair's network.
func (d *Docker) Cut(ctx context.Context, ps [][2]string) error {
	return d.links().Cut(ctx, ps)
}

// Heal implements Backend.
func (d *Docker) Heal(ctx context.Context) error {
	return d.links().Heal(ctx)
}

// CollectLogs implements Backend.
func (d *Docker) CollectLogs(ctx context.Context, dir string) error {
	var errs []error
	for _, n := range NodeNames {
		out, err := d.container(n).Logs(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("docker logs %s: %w", n, err))
			continue
		}
		errs = append(errs, os.WriteFile(filepath.Join(dir, n+".log"), out, 0o644))
	}
	return errors.Join(errs...)
}

// Cleanup implements Backend: removes every container and network with
// this run's label (so also those of a Setup that failed half-way).
func (d *Docker) Cleanup(ctx context.Context) error {
	return testcluster.RemoveLabeled(ctx, Label+"="+d.RunID, nil)
}
