package testcluster

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Command is one run of a binary, for Start.
type Command struct {
	Binary string
	Args   []string
	// Env is the process's whole environment; nil passes the runner's on
	// as it is. Nodes get Environ().
	Env []string
	// Output receives the process's standard output and error; nil
	// discards them. Ignored when LogFile is set.
	Output io.Writer
	// LogFile, when set, receives the output instead: the file is created
	// or appended to, LogHeader (a line, if not empty) is written first,
	// and the file is closed once the process has exited.
	LogFile   string
	LogHeader string
	// OwnGroup starts the process in a process group of its own (see
	// SysProcAttr).
	OwnGroup bool
}

// Proc is a started process, waited for in the background. It is not
// bound to a context: it lives until it exits or is killed.
type Proc struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
	err  error         // cmd.Wait's result, set before done is closed
}

// Start starts c. On Linux the process dies with the runner (see
// SysProcAttr).
func Start(c Command) (*Proc, error) {
	cmd := exec.Command(c.Binary, c.Args...)
	cmd.Env = c.Env
	cmd.SysProcAttr = SysProcAttr(c.OwnGroup)
	var logf *os.File
	switch {
	case c.LogFile != "":
		f, err := os.OpenFile(c.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, err
		}
		if c.LogHeader != "" {
			fmt.Fprintln(f, c.LogHeader)
		}
		logf = f
		cmd.Stdout, cmd.Stderr = f, f
	case c.Output != nil:
		cmd.Stdout, cmd.Stderr = c.Output, c.Output
	}
	if err := cmd.Start(); err != nil {
		if logf != nil {
			logf.Close()
		}
		return nil, err
	}
	p := &Proc{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		if logf != nil {
			logf.Close()
		}
		close(p.done)
	}()
	return p, nil
}

// Environ is the runner's environment without its ARBOR_* variables,
// which would change the nodes' flags behind the runner's back, followed
// by extra (KEY=value).
func Environ(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ARBOR_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// Cmd is the process's command; its Process field is set, its
// ProcessState once the process has exited.
func (p *Proc) Cmd() *exec.Cmd { return p.cmd }

// Pid is the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Exited reports whether the process has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Err is how the process ended (exec.Cmd.Wait's result: nil for exit
// status 0); nil while it runs.
func (p *Proc) Err() error {
	if !p.Exited() {
		return nil
	}
	return p.err
}

// State is the exited process's state; nil while it runs.
func (p *Proc) State() *os.ProcessState {
	if !p.Exited() {
		return nil
	}
	return p.cmd.ProcessState
}

// ExitCode is the exited process's exit status; -1 while it runs or if
// a signal ended it.
func (p *Proc) ExitCode() int { return p.State().ExitCode() }

// Signal sends sig to the process (not to its group); an exited process
// gives os.ErrProcessDone.
func (p *Proc) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// WaitExit waits until the process has exited, at most timeout, and
// reports whether it has; it gives up early when ctx ends.
func (p *Proc) WaitExit(ctx context.Context, timeout time.Duration) bool {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.done:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return p.Exited()
}

// Kill ends the process with SIGKILL — resumed first, should it be
// stopped (SIGSTOP) — and waits up to timeout for it to exit. A process
// that has already exited is left alone.
func (p *Proc) Kill(timeout time.Duration) error {
	if p.Exited() {
		return nil
	}
	p.Signal(syscall.SIGCONT)
	p.Signal(syscall.SIGKILL)
	if !p.WaitExit(context.Background(), timeout) {
		return fmt.Errorf("pid %d did not exit within %s of SIGKILL", p.Pid(), timeout)
	}
	return nil
}

// Buffer collects a process's output: the process writes while the
// runner reads. The zero value is an empty buffer.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends b.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
