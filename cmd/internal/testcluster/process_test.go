package testcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperEnv names what the test binary does when started as a helper
// process instead of running the tests.
const helperEnv = "TESTCLUSTER_HELPER"

// TestMain turns the test binary into a stand-in node when helperEnv is
// set: "echo" prints and exits 3, "serve" runs until SIGTERM and exits
// 0, "hang" ignores SIGTERM (SIGQUIT then dumps its goroutines, exit 2).
func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "echo":
		fmt.Printf("hello ARBOR_X=%q EXTRA=%q\n", os.Getenv("ARBOR_X"), os.Getenv("EXTRA"))
		os.Exit(3)
	case "serve":
		term := make(chan os.Signal, 1)
		signal.Notify(term, syscall.SIGTERM)
		fmt.Println("up")
		<-term
		fmt.Println("terminating")
		os.Exit(0)
	case "hang":
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("up")
		for {
			time.Sleep(time.Hour)
		}
	}
}

// helper is the Command of a helper process.
func helper(t *testing.T, mode string, extraEnv ...string) Command {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Command{Binary: self, Env: Environ(append([]string{helperEnv + "=" + mode}, extraEnv...)...)}
}

// waitFor polls until cond holds, failing the test after 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := Poll(context.Background(), 30*time.Second, 10*time.Millisecond, func(context.Context) error {
		if cond() {
			return nil
		}
		return errors.New("not yet")
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// TestStartCapturesOutputAndExit: the output reaches Output, the exit
// status is kept, and ARBOR_* variables of the runner stay behind.
func TestStartCapturesOutputAndExit(t *testing.T) {
	t.Setenv("ARBOR_X", "leaked")
	var out Buffer
	c := helper(t, "echo", "EXTRA=given")
	c.Output = &out
	p, err := Start(c)
	if err != nil {
		t.Fatal(err)
	}
	if !p.WaitExit(context.Background(), 30*time.Second) {
		t.Fatal("the helper did not exit")
	}
	if !p.Exited() || p.ExitCode() != 3 || p.Err() == nil || p.State() == nil {
		t.Errorf("exited %v, code %d, err %v, state %v", p.Exited(), p.ExitCode(), p.Err(), p.State())
	}
	if got, want := out.String(), "hello ARBOR_X=\"\" EXTRA=\"given\"\n"; got != want {
		t.Errorf("output %q, want %q", got, want)
	}
	if err := p.Kill(time.Second); err != nil {
		t.Errorf("Kill of an exited process: %v", err)
	}
}

// TestStartAppendsToTheLogFile: each run appends its header line and its
// output to the one log file.
func TestStartAppendsToTheLogFile(t *testing.T) {
	log := filepath.Join(t.TempDir(), "n1.log")
	for i := range 2 {
		c := helper(t, "echo")
		c.LogFile, c.LogHeader = log, fmt.Sprintf("=== run %d", i)
		p, err := Start(c)
		if err != nil {
			t.Fatal(err)
		}
		if !p.WaitExit(context.Background(), 30*time.Second) {
			t.Fatal("the helper did not exit")
		}
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b); strings.Count(got, "hello") != 2 || !strings.HasPrefix(got, "=== run 0\nhello") || !strings.Contains(got, "=== run 1\nhello") {
		t.Errorf("log:\n%s", got)
	}
}

// TestStartFailure: a binary that does not exist is an error, not a
// process.
func TestStartFailure(t *testing.T) {
	if _, err := Start(Command{Binary: filepath.Join(t.TempDir(), "missing")}); err == nil {
		t.Fatal("started a missing binary")
	}
	if _, err := Start(Command{Binary: "true", LogFile: filepath.Join(t.TempDir(), "no", "such", "dir.log")}); err == nil {
		t.Fatal("started with a log file that cannot be created")
	}
}

// TestKillEndsAStoppedProcess: Kill resumes and kills a process frozen
// with SIGSTOP.
func TestKillEndsAStoppedProcess(t *testing.T) {
	var out Buffer
	c := helper(t, "serve")
	c.Output = &out
	p, err := Start(c)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the helper to start", func() bool { return strings.Contains(out.String(), "up") })
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if p.WaitExit(context.Background(), 100*time.Millisecond) {
		t.Fatal("a stopped process exited")
	}
	if err := p.Kill(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if p.ExitCode() != -1 {
		t.Errorf("exit code %d after SIGKILL, want -1", p.ExitCode())
	}
	if err := p.Signal(syscall.SIGTERM); !errors.Is(err, os.ErrProcessDone) {
		t.Errorf("signal to an exited process: %v", err)
	}
}

// TestWaitExitGivesUpWithTheContext: a cancelled ctx ends the wait.
func TestWaitExitGivesUpWithTheContext(t *testing.T) {
	p, err := Start(helper(t, "serve"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill(30 * time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if p.WaitExit(ctx, time.Minute) || time.Since(start) > 10*time.Second {
		t.Fatalf("WaitExit with a cancelled ctx: took %s", time.Since(start))
	}
}
