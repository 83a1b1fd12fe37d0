package testcluster

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"time"
)

// Signaller is a node that can be signalled and waited for: a *LocalNode
// or a Container.
type Signaller interface {
	// Signal sends sig to the node's process.
	Signal(ctx context.Context, sig syscall.Signal) error
	// WaitExit waits until the node's process has exited, at most
	// timeout, and reports whether it has.
	WaitExit(ctx context.Context, timeout time.Duration) bool
}

// LocalNode is a node run as local processes, one at a time: started,
// signalled (SIGSTOP pauses it, SIGCONT resumes it), stopped or killed,
// and started again (on the same
// data directory, from the same or another binary), every run's output
// appended to LogFile. Set the exported fields before the first Start;
// the methods are safe for concurrent use.
type LocalNode struct {
	Name    string
	LogFile string
	// Tool names the runner in the line every start writes to the log:
	// "=== <Tool>: starting <Name> from <binary> at <time>".
	Tool string

	mu   sync.Mutex
	proc *Proc  // the current or last process
	bin  string // its binary
}

// Start starts the node from binary with args, in a process group of its
// own and with Environ(); it is an error if the node is running.
func (n *LocalNode) Start(binary string, args ...string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc != nil && !n.proc.Exited() {
		return fmt.Errorf("%s is already running", n.Name)
	}
	header := fmt.Sprintf("=== %s: starting %s from %s at %s", n.Tool, n.Name, binary, time.Now().UTC().Format(time.RFC3339Nano))
	p, err := Start(Command{Binary: binary, Args: args, Env: Environ(), LogFile: n.LogFile, LogHeader: header, OwnGroup: true})
	if err != nil {
		return fmt.Errorf("start %s: %w", n.Name, err)
	}
	n.proc, n.bin = p, binary
	return nil
}

// Last is the current or last process; nil before the first Start.
func (n *LocalNode) Last() *Proc {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.proc
}

// Binary is the binary of the current or last process.
func (n *LocalNode) Binary() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.bin
}

// Running returns the current process, or an error if the node is not
// running.
func (n *LocalNode) Running() (*Proc, error) {
	p := n.Last()
	if p == nil || p.Exited() {
		return nil, fmt.Errorf("%s is not running", n.Name)
	}
	return p, nil
}

// Signal sends sig to the running process; it implements Signaller.
func (n *LocalNode) Signal(_ context.Context, sig syscall.Signal) error {
	p, err := n.Running()
	if err != nil {
		return err
	}
	if err := p.Signal(sig); err != nil {
		return fmt.Errorf("SIG%s to %s: %w", signalName(sig), n.Name, err)
	}
	return nil
}

// WaitExit waits until the current process has exited, at most timeout,
// and reports whether it has (true if there is none); it implements
// Signaller.
func (n *LocalNode) WaitExit(ctx context.Context, timeout time.Duration) bool {
	p := n.Last()
	return p == nil || p.WaitExit(ctx, timeout)
}

// Kill ends the running process, if any, as Proc.Kill does.
func (n *LocalNode) Kill(timeout time.Duration) error {
	p := n.Last()
	if p == nil {
		return nil
	}
	if err := p.Kill(timeout); err != nil {
		return fmt.Errorf("%s: %w", n.Name, err)
	}
	return nil
}
