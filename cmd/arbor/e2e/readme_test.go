package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/arbordb/arbor/cmd/internal/testcluster"
)

// TestReadmeSessions runs every ```console block of README.md against a
// real node, command by command, and compares what each prints with what
// the README shows (the convention is in doctest_test.go), so that the
// README cannot go stale.
func TestReadmeSessions(t *testing.T) {
	runDocument(t, filepath.Join("..", "..", "..", "README.md"))
}

// TestSpecExamples does the same for the examples of docs/SPEC.md.
func TestSpecExamples(t *testing.T) {
	runDocument(t, filepath.Join("..", "..", "..", "docs", "SPEC.md"))
}

// docAddr is the node address the documents use.
const docAddr = "localhost:8443"

// Deadlines of a document session.
const (
	docCommandTimeout = 30 * time.Second // one foreground command
	docStreamTimeout  = 15 * time.Second // a background command's expected output to appear
)

// docSession runs one document's commands in a scratch directory, where
// bin/arbor is the binary under test, against the node the document
// started last.
type docSession struct {
	t     *testing.T
	doc   string
	work  string // the commands' working directory and $HOME
	env   []string
	node  *Node
	bind  bindings
	jobs  []*docJob
	nodes int // nodes started so far
}

// docJob is a background command: its output so far, and how many of its
// lines the document has accounted for.
type docJob struct {
	cmd  docCommand
	proc *testcluster.Proc
	out  testcluster.Buffer
	used int
}

func runDocument(t *testing.T, path string) {
	// The documents show shell sessions; they run as such.
	for _, tool := range []string{"bash", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the document tests run %s: %v", tool, err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := parseConsoleBlocks(string(data))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(cmds) == 0 {
		t.Fatalf("%s has no console blocks", path)
	}
	s := newDocSession(t, filepath.Base(path))
	defer s.stopJobs()
	for _, c := range cmds {
		if !s.step(c) {
			return
		}
	}
	s.checkJobsDone()
}

func newDocSession(t *testing.T, doc string) *docSession {
	work := t.TempDir()
	if err := os.Mkdir(filepath.Join(work, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	bin, err := filepath.Abs(arborBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bin, filepath.Join(work, "bin", "arbor")); err != nil {
		t.Fatal(err)
	}
	// curl prints a progress meter when its output is not a terminal; in
	// a terminal, which the documents show, it does not.
	if err := os.WriteFile(filepath.Join(work, ".curlrc"), []byte("silent\nshow-error\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return &docSession{
		t: t, doc: doc, work: work, bind: bindings{},
		env: testcluster.Environ("HOME="+work, "CURL_HOME="+work, "LC_ALL=C"),
	}
}

// step runs one command and checks its output; false stops the document
// (a later command would only fail for the same reason).
func (s *docSession) step(c docCommand) bool {
	s.t.Helper()
	where := fmt.Sprintf("%s:%d: $ %s", s.doc, c.Line, c.Text)
	if flags, ok := serveFlags(c.Text); ok {
		args, err := s.expand(s.bind.apply(flags))
		if err != nil {
			s.t.Errorf("%s: %v", where, err)
			return false
		}
		s.startNode(where, dropListenFlags(args))
		return true
	}
	if s.node == nil {
		s.startNode(where+" (the make run node)", makeRunArgs(s.t))
	}
	text := s.bind.apply(strings.ReplaceAll(c.Text, docAddr, s.node.Addr()))
	want := make([]string, len(c.Want))
	for i, w := range c.Want {
		want[i] = strings.ReplaceAll(w, docAddr, s.node.Addr())
	}
	if c.Background {
		return s.startJob(where, c, text, want)
	}
	out, err := s.shell(text)
	if err != nil {
		s.t.Errorf("%s\nfailed: %v\noutput:\n%s", where, err, out)
		return false
	}
	return s.check(where, want, outputLines(out))
}

// check matches want against a foreground command's output followed by
// what the background jobs printed meanwhile, waiting for the latter.
func (s *docSession) check(where string, want, got []string) bool {
	deadline := time.Now().Add(docStreamTimeout)
	for {
		if s.matchWithJobs(want, got) {
			return true
		}
		if len(s.jobs) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(pollInterval)
	}
	s.t.Errorf("%s\nwant:\n  %s\ngot:\n  %s%s", where, strings.Join(want, "\n  "), strings.Join(got, "\n  "), s.jobsPending())
	return false
}

// matchWithJobs tries every split of want into the foreground's part and
// the background jobs' part (in the order the jobs were started).
func (s *docSession) matchWithJobs(want, got []string) bool {
	for k := len(want); k >= 0; k-- {
		b, ok := matchAll(want[:k], got, s.bind)
		if !ok {
			continue
		}
		rest, used := want[k:], make([]int, len(s.jobs))
		for i, j := range s.jobs {
			lines := outputLines(j.out.String())[j.used:]
			var n int
			// A job takes the longest part of the rest its new lines match.
			for cut := len(rest); cut >= 0; cut-- {
				if nb, m, ok := matchPrefix(rest[:cut], lines, b, false); ok {
					b, n, rest = nb, m, rest[cut:]
					break
				}
			}
			used[i] = n
		}
		if len(rest) > 0 {
			continue
		}
		s.bind = b
		for i, j := range s.jobs {
			j.used += used[i]
		}
		return true
	}
	return false
}

// jobsPending describes what the background jobs printed that the
// document has not shown yet.
func (s *docSession) jobsPending() string {
	var b strings.Builder
	for _, j := range s.jobs {
		if lines := outputLines(j.out.String())[j.used:]; len(lines) > 0 {
			fmt.Fprintf(&b, "\nnot yet shown from line %d (%s):\n  %s", j.cmd.Line, j.cmd.Text, strings.Join(lines, "\n  "))
		}
	}
	return b.String()
}

// startJob starts a background command and waits until it has printed
// what the document shows right after it.
func (s *docSession) startJob(where string, c docCommand, text string, want []string) bool {
	j := &docJob{cmd: c}
	p, err := testcluster.Start(testcluster.Command{Binary: "bash", Args: []string{"-c", s.script(text, false)}, Env: s.env, Output: &j.out, OwnGroup: true})
	if err != nil {
		s.t.Fatalf("%s: %v", where, err)
	}
	j.proc = p
	s.jobs = append(s.jobs, j)
	return s.check(where, want, nil)
}

// stopJobs kills the background jobs (and their children).
func (s *docSession) stopJobs() {
	for _, j := range s.jobs {
		_ = syscall.Kill(-j.proc.Pid(), syscall.SIGKILL)
		if err := j.proc.Kill(stopTimeout); err != nil {
			s.t.Error(err)
		}
	}
	s.jobs = nil
}

// checkJobsDone fails if a background job printed lines the document does
// not show.
func (s *docSession) checkJobsDone() {
	if p := s.jobsPending(); p != "" {
		s.t.Errorf("%s: the document does not show all that its background commands printed:%s", s.doc, p)
	}
}

// script wraps a command so that it runs in the work directory with the
// variables earlier commands set (persist: and keeps the ones it sets).
func (s *docSession) script(text string, persist bool) string {
	vars := filepath.Join(s.work, ".session")
	pre := fmt.Sprintf("set -a\n[ ! -f %[1]q ] || . %[1]q\ncd %[2]q\n", vars, s.work)
	if !persist {
		return pre + text + "\n"
	}
	return pre + text + fmt.Sprintf("\n__rc=$?\nexport -p > %q\nexit $__rc\n", vars)
}

// shell runs a foreground command and returns its output (stdout and
// stderr as a terminal interleaves them).
func (s *docSession) shell(text string) (string, error) {
	var out testcluster.Buffer
	p, err := testcluster.Start(testcluster.Command{Binary: "bash", Args: []string{"-c", s.script(text, true)}, Env: s.env, Output: &out, OwnGroup: true})
	if err != nil {
		return "", err
	}
	if !p.WaitExit(s.t.Context(), docCommandTimeout) {
		_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
		_ = p.Kill(stopTimeout)
		return out.String(), fmt.Errorf("still running after %s", docCommandTimeout)
	}
	if code := p.ExitCode(); code != 0 {
		return out.String(), fmt.Errorf("exit status %d", code)
	}
	return out.String(), nil
}

// startNode stops the jobs and the node of the previous part of the
// document and starts a node with args (the document's serve flags,
// expanded by the shell), waiting until it is ready.
func (s *docSession) startNode(where string, args []string) {
	s.t.Helper()
	s.checkJobsDone()
	s.stopJobs()
	if s.node != nil {
		s.node.Stop(s.t)
	}
	s.t.Logf("%s: starting arbor serve %q", where, args)
	s.nodes++
	// A keep-alive frame on a slow run would be output the document
	// cannot show.
	args = append([]string{"--stream-keepalive", "1h"}, args...)
	s.node = StartReadyNode(s.t, Options{Name: fmt.Sprintf("doc%d", s.nodes), Args: args})
}

// expand returns the words of flags as the shell passes them to a
// command, in the session's directory and variables.
func (s *docSession) expand(flags string) ([]string, error) {
	var out testcluster.Buffer
	p, err := testcluster.Start(testcluster.Command{Binary: "bash", Args: []string{"-c", s.script("printf '%s\\0' "+flags, false)}, Env: s.env, Output: &out})
	if err != nil {
		return nil, err
	}
	if !p.WaitExit(s.t.Context(), docCommandTimeout) || p.ExitCode() != 0 {
		_ = p.Kill(stopTimeout)
		return nil, fmt.Errorf("expanding the flags: %s", out.String())
	}
	return strings.Split(strings.TrimSuffix(out.String(), "\x00"), "\x00"), nil
}

// serveLine matches a document's command that starts a node.
var serveLine = regexp.MustCompile(`^bin/arbor serve(\s|$)`)

// listenFlags are the serve flags the harness chooses itself (fresh data,
// free ports), dropped from a document's serve command.
var listenFlags = map[string]bool{"--data-dir": true, "--http-addr": true, "--raft-addr": true, "--gossip-addr": true}

// serveFlags recognizes "bin/arbor serve FLAGS" and returns FLAGS, as
// written.
func serveFlags(cmd string) (string, bool) {
	if !serveLine.MatchString(cmd) {
		return "", false
	}
	return strings.TrimPrefix(cmd, "bin/arbor serve"), true
}

// dropListenFlags removes listenFlags (as --flag value or --flag=value).
func dropListenFlags(args []string) []string {
	var kept []string
	for i := 0; i < len(args); i++ {
		name, _, hasValue := strings.Cut(args[i], "=")
		if listenFlags[name] {
			if !hasValue {
				i++
			}
			continue
		}
		kept = append(kept, args[i])
	}
	return kept
}

// makeRunArgs are the serve flags of the Makefile's run target, less the
// ones make fills in and the listen flags.
func makeRunArgs(t *testing.T) []string {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	recipe := regexp.MustCompile(`(?m)^run:.*\n((?:\t.*\n)+)`).FindSubmatch(data)
	if recipe == nil {
		t.Fatal("Makefile: no run target")
	}
	for _, line := range strings.Split(string(recipe[1]), "\n") {
		_, flags, ok := strings.Cut(line, " serve ")
		if !ok || strings.Contains(line, "echo") {
			continue
		}
		var args []string
		for _, f := range dropListenFlags(strings.Fields(flags)) {
			if !strings.Contains(f, "$(") {
				args = append(args, f)
			}
		}
		return args
	}
	t.Fatal("Makefile: the run target runs no serve")
	return nil
}
