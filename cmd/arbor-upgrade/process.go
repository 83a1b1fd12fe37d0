package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"syscall"

	"github.com/arbordb/arbor/cmd/internal/testcluster"
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
	*testcluster.LocalNode
	args []string // after the binary, without newReleaseFlags
	http string   // host:port
}

func (p *processes) layout() testcluster.Layout { return testcluster.Layout(p.dir) }
func (p *processes) name() string               { return "process" }
func (p *processes) caFile() string             { return p.layout().CAFile() }
func (p *processes) dataDir(id string) string   { return p.layout().NodeDir(id) }

func (p *processes) addrs() map[string]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]string{}
	for id, n := range p.procs {
		out[id] = n.http
	}
	return out
}

func (p *processes) node(id string) *proc {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.procs[id]
}

func (p *processes) setup(ctx context.Context) error {
	l := p.layout()
	if err := testcluster.CertsInit(ctx, p.oldBin, l.PKI(), nodes); err != nil {
		return fmt.Errorf("the old release's %w", err)
	}
	serves, err := testcluster.LocalServes(l, nodes)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(l.LogDir(), 0o755); err != nil {
		return err
	}
	p.mu.Lock()
	p.procs = map[string]*proc{}
	for _, s := range serves {
		p.procs[s.Node] = &proc{
			LocalNode: &testcluster.LocalNode{Name: s.Node, LogFile: l.LogFile(s.Node), Tool: "arbor-upgrade"},
			args:      serveFlags(s, p.secret),
			http:      s.HTTPAddr,
		}
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
// appended to its log. It lives until stop or cleanup.
func (p *processes) start(id string, newRelease bool) error {
	bin := p.oldBin
	if newRelease {
		bin = p.newBin
	}
	n := p.node(id)
	return n.Start(bin, releaseArgs(n.args, newRelease)...)
}

func (p *processes) stop(ctx context.Context, id string) error {
	n := p.node(id)
	if err := n.Signal(ctx, syscall.SIGTERM); err != nil {
		return err
	}
	if !n.WaitExit(ctx, stopWait) {
		_ = n.Kill(stopWait)
		return fmt.Errorf("%s still running %s after SIGTERM; killed", id, stopWait)
	}
	if code := n.Last().ExitCode(); code != 0 {
		return fmt.Errorf("%s exited with status %d after SIGTERM (see logs/%s.log)", id, code, id)
	}
	return nil
}

func (p *processes) startNew(_ context.Context, id string) error { return p.start(id, true) }

// release runs `version` of the running process's own executable
// (/proc/<pid>/exe on Linux), so it reports what really runs.
func (p *processes) release(ctx context.Context, id string) (string, error) {
	n := p.node(id)
	running, err := n.Running()
	if err != nil {
		return "", err
	}
	bin := n.Binary()
	if runtime.GOOS == "linux" {
		bin = "/proc/" + strconv.Itoa(running.Pid()) + "/exe"
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
	for _, n := range p.procs {
		errs = append(errs, n.Kill(stopWait))
	}
	return errors.Join(errs...)
}
