//go:build abuse

package e2e

import (
	"context"
	"encoding/csv"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Third-party attack tools in the abuse suite (issue 19): slowhttptest
// (Debian package slowhttptest) and h2load (nghttp2-client), run against
// the three-node cluster on 127.0.0.1 with connection counts and lengths
// sized for two cores. A probe skips when its tool is missing, except on
// CI (CI=true), where .ci/run installs both and a missing tool fails.

// lookTool returns the path of the tool name from Debian package pkg.
func lookTool(t *testing.T, name, pkg string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is not installed on CI (Debian package %s; .ci/run installs it): %v", name, pkg, err)
	}
	t.Skipf("%s is not installed: apt-get install %s to run this probe", name, pkg)
	return ""
}

// ansi matches the terminal colour and screen codes slowhttptest prints.
var ansi = regexp.MustCompile(`\x1b\[[0-9;]*[A-Za-z]`)

// runTool runs a tool, killed if it outlives limit, and returns its
// output without terminal codes.
func runTool(t *testing.T, limit time.Duration, path string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s did not finish within %s:\n%s", filepath.Base(path), limit, tail(ansi.ReplaceAllString(string(out), ""), 2000))
	}
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", filepath.Base(path), args, err, tail(ansi.ReplaceAllString(string(out), ""), 2000))
	}
	return ansi.ReplaceAllString(string(out), "")
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// slowResult is slowhttptest's summary: its exit status ("No open
// connections left" when the server closed every slow connection, "Hit
// test time limit" when some were still open at the end), the second the
// test ended, and from its per-second statistics the most connections
// open at once and the seconds during which its probe connection found
// the server unavailable.
type slowResult struct {
	exit        string
	ended       int
	peakOpen    int
	unavailable int
}

var (
	slowExit  = regexp.MustCompile(`Exit status: *(.+)`)
	slowEnded = regexp.MustCompile(`Test ended on (\d+)`)
)

// runSlowHTTPTest runs slowhttptest with args (a mode, counts and times;
// -l, its length, must be among them) against url and parses its summary.
func runSlowHTTPTest(t *testing.T, length time.Duration, url string, args ...string) slowResult {
	t.Helper()
	path := lookTool(t, "slowhttptest", "slowhttptest")
	prefix := filepath.Join(t.TempDir(), "stats")
	args = append(args, "-l", strconv.Itoa(int(length.Seconds())), "-p", "3", "-g", "-o", prefix, "-u", url)
	out := runTool(t, length+time.Minute, path, args...)
	var r slowResult
	if m := slowExit.FindStringSubmatch(out); m != nil {
		r.exit = strings.TrimSpace(m[1])
	}
	if m := slowEnded.FindStringSubmatch(out); m != nil {
		r.ended, _ = strconv.Atoi(m[1])
	}
	f, err := os.Open(prefix + ".csv")
	if err != nil {
		t.Fatalf("slowhttptest wrote no statistics: %v\n%s", err, tail(out, 2000))
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) < 2 {
		t.Fatalf("slowhttptest statistics: %v %v", err, rows)
	}
	for _, row := range rows[1:] { // Seconds,Closed,Pending,Connected,Service Available
		if len(row) < 5 {
			continue
		}
		open, _ := strconv.Atoi(row[3])
		avail, _ := strconv.Atoi(row[4])
		r.peakOpen = max(r.peakOpen, open)
		if avail == 0 {
			r.unavailable++
		}
	}
	if r.exit == "" || r.ended == 0 {
		t.Fatalf("no summary from slowhttptest:\n%s", tail(out, 2000))
	}
	return r
}

// h2Result is h2load's summary.
type h2Result struct {
	seconds                                     float64
	reqPerSec                                   float64
	total, succeeded, failed, errored, timedOut int
	statuses                                    string
}

var (
	h2Finished = regexp.MustCompile(`finished in ([0-9.]+)(ms|s), ([0-9.]+) req/s`)
	h2Requests = regexp.MustCompile(`requests: (\d+) total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout`)
	h2Statuses = regexp.MustCompile(`status codes: (.+)`)
)

// runH2Load runs h2load with args against url and parses its summary.
func runH2Load(t *testing.T, limit time.Duration, url string, args ...string) h2Result {
	t.Helper()
	path := lookTool(t, "h2load", "nghttp2-client")
	out := runTool(t, limit, path, append(args, url)...)
	var r h2Result
	m := h2Finished.FindStringSubmatch(out)
	q := h2Requests.FindStringSubmatch(out)
	s := h2Statuses.FindStringSubmatch(out)
	if m == nil || q == nil || s == nil {
		t.Fatalf("no summary from h2load:\n%s", tail(out, 2000))
	}
	r.seconds, _ = strconv.ParseFloat(m[1], 64)
	if m[2] == "ms" {
		r.seconds /= 1000
	}
	r.reqPerSec, _ = strconv.ParseFloat(m[3], 64)
	r.total, _ = strconv.Atoi(q[1])
	r.succeeded, _ = strconv.Atoi(q[2])
	r.failed, _ = strconv.Atoi(q[3])
	r.errored, _ = strconv.Atoi(q[4])
	r.timedOut, _ = strconv.Atoi(q[5])
	r.statuses = s[1]
	return r
}

// rssSampler records a node's resident memory every 50 ms until stopped.
type rssSampler struct {
	before, peak int // KiB
	stop         chan struct{}
	wg           sync.WaitGroup
}

func sampleRSS(t *testing.T, n *Node) *rssSampler {
	pid := n.current().cmd.Process.Pid
	s := &rssSampler{stop: make(chan struct{})}
	s.before = rssKB(t, pid)
	s.peak = s.before
	s.wg.Go(func() {
		deadline := time.Now().Add(5 * time.Minute) // bounded whatever happens
		for time.Now().Before(deadline) {
			select {
			case <-s.stop:
				return
			case <-time.After(50 * time.Millisecond):
				s.peak = max(s.peak, vmRSS(pid))
			}
		}
	})
	return s
}

// vmRSS is a process's resident memory in KiB (0 if unknown): rssKB for
// a goroutine that must not stop the test.
func vmRSS(pid int) int {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			v, _ := strconv.Atoi(f[1])
			return v
		}
	}
	return 0
}

// done stops sampling and returns the RSS before and at its peak, in MB.
func (s *rssSampler) done() (before, peak int) {
	close(s.stop)
	s.wg.Wait()
	return s.before >> 10, s.peak >> 10
}

// authURL is the URL of path on n with the admin secret as ?auth=.
func authURL(n *Node, path, query string) string {
	u := "https://" + n.Addr() + path + "?auth=" + AdminSecret
	if query != "" {
		u += "&" + query
	}
	return u
}
