package nemesis

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/arbordb/arbor/cmd/internal/testcluster"
)

// stopWait bounds how long a node may take to exit after SIGKILL (or
// after the goroutine dump), and how long Docker waits before it kills a
// container it was asked to stop.
const stopWait = 30 * time.Second

// stopGrace is how long a graceful stop may take before the node is made
// to dump its goroutines (SIGQUIT) — SPEC §10's 10 s plus a margin for a
// loaded machine. Only a stop that exceeds it shows where it hung.
const stopGrace = GracefulStopLimit + 5*time.Second

// dumpWait is how long a node gets to write its goroutine dump and exit
// after SIGQUIT before it is killed.
const dumpWait = 10 * time.Second

// Process runs the nodes as local `arbor serve` processes on 127.0.0.1
// with mutual TLS and gossip encryption, as in production. Each node
// keeps its ports across restarts. It cannot partition the network
// without root; pauses (SIGSTOP) stand in for an unreachable node.
type Process struct {
	Binary string // the arbor binary
	Dir    string // working directory: pki/, nodes/nX, logs/
	Opts   NodeOptions

	addrBook

	mu    sync.Mutex
	nodes map[string]*procNode
}

type procNode struct {
	*testcluster.LocalNode
	args []string // after the binary
}

// Name implements Backend.
func (p *Process) Name() string { return "process" }

// Nodes implements Backend.
func (p *Process) Nodes() []string { return NodeNames }

// CAFile implements Backend.
func (p *Process) CAFile() string { return testcluster.Layout(p.Dir).CAFile() }

// Partitions implements Backend.
func (p *Process) Partitions() bool { return false }

// Setup implements Backend.
func (p *Process) Setup(ctx context.Context) error {
	l := testcluster.Layout(p.Dir)
	if err := testcluster.CertsInit(ctx, p.Binary, l.PKI(), NodeNames); err != nil {
		return err
	}
	serves, err := testcluster.LocalServes(l, NodeNames)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(l.LogDir(), 0o755); err != nil {
		return fmt.Errorf("nemesis: %w", err)
	}
	nodes, addrs := map[string]*procNode{}, map[string]string{}
	for _, s := range serves {
		if err := os.MkdirAll(s.DataDir, 0o700); err != nil {
			return fmt.Errorf("nemesis: %w", err)
		}
		nodes[s.Node] = &procNode{
			LocalNode: &testcluster.LocalNode{Name: s.Node, LogFile: l.LogFile(s.Node), Tool: "arbor-chaos"},
			args:      append(s.Args(), p.Opts.flags()...),
		}
		addrs[s.Node] = s.HTTPAddr
	}
	p.setAddrs(addrs)
	p.mu.Lock()
	p.nodes = nodes
	p.mu.Unlock()
	for _, name := range NodeNames {
		if err := p.Start(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

func (p *Process) node(name string) (*procNode, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n, ok := p.nodes[name]
	if !ok {
		return nil, fmt.Errorf("nemesis: unknown node %q", name)
	}
	return n, nil
}

// Start implements Backend. The process outlives the request to start it
// (ctx) and is ended by Kill, Stop or Cleanup. It has its own process
// group (a ^C meant for the runner does not reach the nodes before the
// runner can record it) and, on Linux, dies with the runner.
func (p *Process) Start(_ context.Context, name string) error {
	n, err := p.node(name)
	if err != nil {
		return err
	}
	if err := n.Start(p.Binary, n.args...); err != nil {
		return fmt.Errorf("nemesis: %w", err)
	}
	return nil
}

// signal sends sig to the node's current process.
func (p *Process) signal(ctx context.Context, name string, sig syscall.Signal) (*procNode, error) {
	n, err := p.node(name)
	if err != nil {
		return nil, err
	}
	if err := n.Signal(ctx, sig); err != nil {
		return n, fmt.Errorf("nemesis: %w", err)
	}
	return n, nil
}

// Kill implements Backend. A paused process dies of SIGKILL too.
func (p *Process) Kill(ctx context.Context, name string) error {
	n, err := p.signal(ctx, name, syscall.SIGKILL)
	if err != nil {
		return err
	}
	if !n.WaitExit(ctx, stopWait) {
		return fmt.Errorf("nemesis: %s did not exit after SIGKILL", name)
	}
	return nil
}

// Wipe implements Backend.
func (p *Process) Wipe(_ context.Context, name string) error {
	return wipe(testcluster.Layout(p.Dir).NodeDir(name))
}

// Stop implements Backend. A node still running stopGrace after SIGTERM
// gets SIGQUIT, which makes the Go runtime write every goroutine's stack
// to its log and exit: the dump shows what the shutdown waited for.
func (p *Process) Stop(ctx context.Context, name string) (time.Duration, error) {
	n, err := p.node(name)
	if err != nil {
		return 0, err
	}
	took, graceful, err := testcluster.StopWithDump(ctx, n, stopGrace, dumpWait, stopWait)
	switch {
	case err != nil:
		return 0, fmt.Errorf("nemesis: %w", err)
	case !graceful:
		return took, stillRunning(name)
	}
	return took, nil
}

// stillRunning is the failure of a graceful stop.
func stillRunning(node string) error {
	return fmt.Errorf("nemesis: %s still running %s after SIGTERM; goroutine dump (SIGQUIT) in its log", node, stopGrace)
}

// Pause implements Backend.
func (p *Process) Pause(ctx context.Context, name string) error {
	_, err := p.signal(ctx, name, syscall.SIGSTOP)
	return err
}

// Resume implements Backend.
func (p *Process) Resume(ctx context.Context, name string) error {
	_, err := p.signal(ctx, name, syscall.SIGCONT)
	return err
}

// Cut implements Backend: local processes share the loopback interface,
// which cannot be split without root (iptables); use the docker backend.
func (p *Process) Cut(context.Context, [][2]string) error { return ErrUnsupported }

// Heal implements Backend; there is nothing to heal.
func (p *Process) Heal(context.Context) error { return nil }

// CollectLogs implements Backend: the logs are already in Dir/logs.
func (p *Process) CollectLogs(_ context.Context, dir string) error {
	if filepath.Clean(dir) == testcluster.Layout(p.Dir).LogDir() {
		return nil
	}
	var errs []error
	for _, name := range NodeNames {
		n, err := p.node(name)
		if err != nil {
			continue
		}
		b, err := os.ReadFile(n.LogFile)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name+".log"), b, 0o644)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Cleanup implements Backend: every node process is resumed (a stopped
// process does not die of SIGTERM) and killed. Data stays in Dir.
func (p *Process) Cleanup(context.Context) error {
	p.mu.Lock()
	var nodes []*procNode
	for _, n := range p.nodes {
		nodes = append(nodes, n)
	}
	p.mu.Unlock()
	var errs []error
	for _, n := range nodes {
		if err := n.Kill(stopWait); err != nil {
			errs = append(errs, fmt.Errorf("nemesis: %w", err))
		}
	}
	return errors.Join(errs...)
}
