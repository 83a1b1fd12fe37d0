package nemesis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/arbordb/arbor/cmd/internal/client"
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

	mu    sync.Mutex
	nodes map[string]*procNode
}

type procNode struct {
	name             string
	args             []string
	log              string // log file, appended to by every run
	http, raft, goss int
	cmd              *exec.Cmd
	done             chan struct{} // closed when cmd exited
}

// Name implements Backend.
func (p *Process) Name() string { return "process" }

// Nodes implements Backend.
func (p *Process) Nodes() []string { return NodeNames }

// CAFile implements Backend.
func (p *Process) CAFile() string { return filepath.Join(p.Dir, "pki", "ca.pem") }

// Partitions implements Backend.
func (p *Process) Partitions() bool { return false }

// Setup implements Backend.
func (p *Process) Setup(ctx context.Context) error {
	pki := filepath.Join(p.Dir, "pki")
	out, err := exec.CommandContext(ctx, p.Binary, "certs", "init", "--dir", pki, "--hosts", strings.Join(NodeNames, ",")).CombinedOutput()
	if err != nil {
		return fmt.Errorf("arbor certs init: %w\n%s", err, out)
	}
	ports, err := freePorts(3 * len(NodeNames))
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.nodes = map[string]*procNode{}
	for i, name := range NodeNames {
		p.nodes[name] = &procNode{name: name, http: ports[3*i], raft: ports[3*i+1], goss: ports[3*i+2]}
	}
	for _, n := range p.nodes {
		var join []string
		for _, m := range p.nodes {
			if m != n {
				join = append(join, "127.0.0.1:"+strconv.Itoa(m.goss))
			}
		}
		dataDir := filepath.Join(p.Dir, "nodes", n.name)
		if err := os.MkdirAll(dataDir, 0o700); err != nil {
			p.mu.Unlock()
			return fmt.Errorf("nemesis: %w", err)
		}
		n.log = filepath.Join(p.Dir, "logs", n.name+".log")
		n.args = append([]string{"serve",
			"--node-id", n.name,
			"--data-dir", dataDir,
			"--http-addr", "127.0.0.1:" + strconv.Itoa(n.http),
			"--raft-addr", "127.0.0.1:" + strconv.Itoa(n.raft),
			"--gossip-addr", "127.0.0.1:" + strconv.Itoa(n.goss),
			"--join", strings.Join(join, ","),
			"--bootstrap-expect", strconv.Itoa(len(NodeNames)),
			"--tls-ca", filepath.Join(pki, "ca.pem"),
			"--tls-cert", filepath.Join(pki, n.name+".pem"),
			"--tls-key", filepath.Join(pki, n.name+"-key.pem"),
			"--gossip-key", filepath.Join(pki, "gossip.key"),
		}, p.Opts.flags()...)
	}
	p.mu.Unlock()
	if err := os.MkdirAll(filepath.Join(p.Dir, "logs"), 0o755); err != nil {
		return fmt.Errorf("nemesis: %w", err)
	}
	for _, name := range NodeNames {
		if err := p.Start(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

// freePorts returns n distinct ports free for TCP and UDP on 127.0.0.1
// (gossip uses both). They are released before use; on loopback another
// process taking one meanwhile is rare, and would show as a failed start.
func freePorts(n int) ([]int, error) {
	var ports []int
	var held []interface{ Close() error }
	defer func() {
		for _, h := range held {
			h.Close()
		}
	}()
	for attempt := 0; len(ports) < n && attempt < 100; attempt++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("nemesis: free port: %w", err)
		}
		held = append(held, ln)
		port := ln.Addr().(*net.TCPAddr).Port
		pc, err := net.ListenPacket("udp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		held = append(held, pc)
		ports = append(ports, port)
	}
	if len(ports) < n {
		return nil, fmt.Errorf("nemesis: found %d free ports of %d", len(ports), n)
	}
	return ports, nil
}

// Endpoints implements Backend.
func (p *Process) Endpoints() []client.Endpoint {
	p.mu.Lock()
	defer p.mu.Unlock()
	var eps []client.Endpoint
	for _, name := range NodeNames {
		if n, ok := p.nodes[name]; ok {
			eps = append(eps, client.Endpoint{Node: name, Addr: "127.0.0.1:" + strconv.Itoa(n.http)})
		}
	}
	return eps
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

// Start implements Backend.
func (p *Process) Start(_ context.Context, name string) error {
	n, err := p.node(name)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if n.cmd != nil && !exited(n.done) {
		return fmt.Errorf("nemesis: %s is already running", name)
	}
	logf, err := os.OpenFile(n.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("nemesis: %w", err)
	}
	fmt.Fprintf(logf, "=== arbor-chaos: starting %s at %s\n", name, time.Now().UTC().Format(time.RFC3339Nano))
	// Not bound to ctx: the process outlives the request to start it and
	// is ended by Kill, Stop or Cleanup.
	cmd := exec.Command(p.Binary, n.args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Own process group (a ^C meant for the runner does not reach the
	// nodes before the runner can record it) and killed with the runner
	// if the runner dies first, so no node outlives a run.
	cmd.SysProcAttr = procAttr()
	// ARBOR_* variables of the caller's environment would change the
	// nodes' flags behind the runner's back.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ARBOR_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("nemesis: start %s: %w", name, err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		logf.Close()
		close(done)
	}()
	n.cmd, n.done = cmd, done
	return nil
}

func exited(done chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// signal sends sig to the node's current process.
func (p *Process) signal(name string, sig syscall.Signal) (*procNode, error) {
	n, err := p.node(name)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	cmd, done := n.cmd, n.done
	p.mu.Unlock()
	if cmd == nil || exited(done) {
		return n, fmt.Errorf("nemesis: %s is not running", name)
	}
	if err := cmd.Process.Signal(sig); err != nil {
		return n, fmt.Errorf("nemesis: %s to %s: %w", sig, name, err)
	}
	return n, nil
}

// wait waits for the node's current process to exit, at most d.
func (p *Process) wait(ctx context.Context, n *procNode, d time.Duration) bool {
	p.mu.Lock()
	done := n.done
	p.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
}

// Kill implements Backend. A paused process dies of SIGKILL too.
func (p *Process) Kill(ctx context.Context, name string) error {
	n, err := p.signal(name, syscall.SIGKILL)
	if err != nil {
		return err
	}
	if !p.wait(ctx, n, stopWait) {
		return fmt.Errorf("nemesis: %s did not exit after SIGKILL", name)
	}
	return nil
}

// Wipe implements Backend.
func (p *Process) Wipe(_ context.Context, name string) error {
	return wipeDir(filepath.Join(p.Dir, "nodes", name))
}

// Stop implements Backend. A node still running stopGrace after SIGTERM
// gets SIGQUIT, which makes the Go runtime write every goroutine's stack
// to its log and exit: the dump shows what the shutdown waited for.
func (p *Process) Stop(ctx context.Context, name string) (time.Duration, error) {
	start := time.Now()
	n, err := p.signal(name, syscall.SIGTERM)
	if err != nil {
		return 0, err
	}
	if p.wait(ctx, n, stopGrace) {
		return time.Since(start), nil
	}
	p.signal(name, syscall.SIGQUIT)
	if !p.wait(context.Background(), n, dumpWait) {
		p.signal(name, syscall.SIGKILL)
		p.wait(context.Background(), n, stopWait)
	}
	took := time.Since(start)
	return took, fmt.Errorf("nemesis: %s still running %s after SIGTERM; goroutine dump (SIGQUIT) in its log", name, stopGrace)
}

// Pause implements Backend.
func (p *Process) Pause(_ context.Context, name string) error {
	_, err := p.signal(name, syscall.SIGSTOP)
	return err
}

// Resume implements Backend.
func (p *Process) Resume(_ context.Context, name string) error {
	_, err := p.signal(name, syscall.SIGCONT)
	return err
}

// Cut implements Backend: local processes share the loopback interface,
// which cannot be split without root (iptables); use the docker backend.
func (p *Process) Cut(context.Context, [][2]string) error { return ErrUnsupported }

// Heal implements Backend; there is nothing to heal.
func (p *Process) Heal(context.Context) error { return nil }

// CollectLogs implements Backend: the logs are already in Dir/logs.
func (p *Process) CollectLogs(_ context.Context, dir string) error {
	if filepath.Clean(dir) == filepath.Join(p.Dir, "logs") {
		return nil
	}
	var errs []error
	for _, name := range NodeNames {
		n, err := p.node(name)
		if err != nil {
			continue
		}
		b, err := os.ReadFile(n.log)
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
		p.mu.Lock()
		cmd, done := n.cmd, n.done
		p.mu.Unlock()
		if cmd == nil || exited(done) {
			continue
		}
		cmd.Process.Signal(syscall.SIGCONT)
		cmd.Process.Signal(syscall.SIGKILL)
		if !p.wait(context.Background(), n, stopWait) {
			errs = append(errs, fmt.Errorf("nemesis: %s (pid %d) did not exit", n.name, cmd.Process.Pid))
		}
	}
	return errors.Join(errs...)
}

func itoa(i int) string { return strconv.Itoa(i) }
