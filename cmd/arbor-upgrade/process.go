package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// processes runs the nodes as local `arbor serve` processes on 127.0.0.1,
// each keeping its ports and data directory across the upgrade.
type processes struct {
	oldBin, newBin string
	dir            string // pki/, nodes/<id>, logs/<id>.log
	secret         string

	mu    sync.Mutex
	procs map[string]*proc
}

type proc struct {
	args  []string // after the binary, without newReleaseFlags
	http  int
	bin   string // the binary of the current process
	cmd   *exec.Cmd
	done  chan struct{} // closed when cmd has exited
	state *os.ProcessState
}

func (p *processes) name() string             { return "process" }
func (p *processes) caFile() string           { return filepath.Join(p.dir, "pki", "ca.pem") }
func (p *processes) dataDir(id string) string { return filepath.Join(p.dir, "nodes", id) }

func (p *processes) addrs() map[string]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]string{}
	for id, n := range p.procs {
		out[id] = "127.0.0.1:" + strconv.Itoa(n.http)
	}
	return out
}

func (p *processes) setup(ctx context.Context) error {
	pki := filepath.Join(p.dir, "pki")
	out, err := exec.CommandContext(ctx, p.oldBin, "certs", "init", "--dir", pki, "--hosts", strings.Join(nodes, ",")).CombinedOutput()
	if err != nil {
		return fmt.Errorf("old release's arbor certs init: %w\n%s", err, out)
	}
	ports, err := freePorts(3 * len(nodes))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(p.dir, "logs"), 0o755); err != nil {
		return err
	}
	p.mu.Lock()
	p.procs = map[string]*proc{}
	for i, id := range nodes {
		var join []string
		for j := range nodes {
			if j != i {
				join = append(join, "127.0.0.1:"+strconv.Itoa(ports[3*j+2]))
			}
		}
		args := append(serveFlags(id, p.dataDir(id), pki, join, p.secret),
			"--http-addr", "127.0.0.1:"+strconv.Itoa(ports[3*i]),
			"--raft-addr", "127.0.0.1:"+strconv.Itoa(ports[3*i+1]),
			"--gossip-addr", "127.0.0.1:"+strconv.Itoa(ports[3*i+2]))
		p.procs[id] = &proc{args: args, http: ports[3*i]}
	}
	p.mu.Unlock()
	for _, id := range nodes {
		if err := p.start(id, false); err != nil {
			return err
		}
	}
	return nil
}

// start starts node's process from the new or the old binary, its output
// appended to its log.
func (p *processes) start(id string, newRelease bool) error {
	bin := p.oldBin
	if newRelease {
		bin = p.newBin
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.procs[id]
	if n.cmd != nil && !closed(n.done) {
		return fmt.Errorf("%s is already running", id)
	}
	logf, err := os.OpenFile(filepath.Join(p.dir, "logs", id+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(logf, "=== arbor-upgrade: starting %s from %s at %s\n", id, bin, time.Now().UTC().Format(time.RFC3339Nano))
	// Not bound to a context: the node lives until stop or cleanup.
	cmd := exec.Command(bin, releaseArgs(n.args, newRelease)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = procAttr()
	// The caller's ARBOR_* variables would change the nodes' flags.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ARBOR_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", id, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(done)
	}()
	n.cmd, n.done, n.bin = cmd, done, bin
	return nil
}

func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func (p *processes) stop(ctx context.Context, id string) error {
	p.mu.Lock()
	n := p.procs[id]
	cmd, done := n.cmd, n.done
	p.mu.Unlock()
	if cmd == nil || closed(done) {
		return fmt.Errorf("%s is not running", id)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("SIGTERM to %s: %w", id, err)
	}
	t := time.NewTimer(stopWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	case <-ctx.Done():
	}
	if !closed(done) {
		_ = cmd.Process.Kill()
		<-done // SIGKILL cannot be ignored
		return fmt.Errorf("%s still running %s after SIGTERM; killed", id, stopWait)
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		return fmt.Errorf("%s exited with status %d after SIGTERM (see logs/%s.log)", id, code, id)
	}
	return nil
}

func (p *processes) startNew(_ context.Context, id string) error { return p.start(id, true) }

// release runs `version` of the running process's own executable
// (/proc/<pid>/exe on Linux), so it reports what really runs.
func (p *processes) release(ctx context.Context, id string) (string, error) {
	p.mu.Lock()
	n := p.procs[id]
	cmd, done, bin := n.cmd, n.done, n.bin
	p.mu.Unlock()
	if cmd == nil || closed(done) {
		return "", fmt.Errorf("%s is not running", id)
	}
	if runtime.GOOS == "linux" {
		bin = "/proc/" + strconv.Itoa(cmd.Process.Pid) + "/exe"
	}
	out, err := exec.CommandContext(ctx, bin, "version").Output()
	if err != nil {
		return "", fmt.Errorf("%s version: %w", id, err)
	}
	return parseRelease(string(out))
}

func (p *processes) cleanup(context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for id, n := range p.procs {
		if n.cmd == nil || closed(n.done) {
			continue
		}
		_ = n.cmd.Process.Kill()
		select {
		case <-n.done:
		case <-time.After(stopWait):
			errs = append(errs, fmt.Errorf("%s (pid %d) did not exit after SIGKILL", id, n.cmd.Process.Pid))
		}
	}
	return errors.Join(errs...)
}
