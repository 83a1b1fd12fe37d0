//go:build abuse

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Helpers of the stream probes (abuse_streams_test.go,
// abuse_streamload_test.go): event streams read frame by frame with their
// ids, the rules and tokens the probes act under, and the checks every
// stream probe ends with.

// streamRules make a document readable while it is public (a read that
// depends on the data) and writable by its owner; the users' rules are
// ManyKeys' own, kept for a run that repeats it.
const streamRules = `{"rules": {
  "docs": {"$d": {".read": "data.child('public').val() === true", ".write": "auth.uid === 'owner'"}},
  "users": {"$uid": {".write": "auth.uid === $uid", "n": {".validate": "newData.isNumber()"}}}
}}`

// setStreamRules puts streamRules in force through the leader.
func setStreamRules(t *testing.T, c *Cluster) {
	t.Helper()
	leader := c.WaitStable(t, c.Nodes...)
	mustStatus(t, "stream probes' rules", leader.Do(t, "PUT", "/.settings/rules.json", streamRules), 200)
}

// sseFrame is one server-sent event with its id (0: none).
type sseFrame struct {
	ID    uint64
	Event string
	Data  string
}

// readSSE reads the next frame (its lines up to a blank one).
func readSSE(r *bufio.Reader) (sseFrame, error) {
	var f sseFrame
	seen := false
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return f, err
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if seen {
				return f, nil
			}
		case strings.HasPrefix(line, "id: "):
			f.ID, err = strconv.ParseUint(line[4:], 10, 64)
			if err != nil {
				return f, fmt.Errorf("id line %q: %w", line, err)
			}
		case strings.HasPrefix(line, "event: "):
			f.Event = line[7:]
		case strings.HasPrefix(line, "data: "):
			f.Data = line[6:]
		default:
			return f, fmt.Errorf("unexpected line %.200q", line)
		}
		seen = true
	}
}

// sseStream is an open event stream.
type sseStream struct {
	resp *http.Response
	r    *bufio.Reader
}

func (s *sseStream) next() (sseFrame, error) { return readSSE(s.r) }
func (s *sseStream) close()                  { s.resp.Body.Close() }

// openSSE opens a stream at path on n through client with the credential
// auth (noAuth for none) and extra headers (name, value pairs). A status
// other than 200 is returned as the error, with the response closed.
func openSSE(ctx context.Context, client *http.Client, n *Node, auth, path string, headers ...string) (*sseStream, int, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", n.URL(path), nil)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Accept", "text/event-stream")
	if auth != noAuth {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, 0, err
	}
	if resp.StatusCode != 200 {
		resp.Body.Close()
		return nil, resp.StatusCode, fmt.Errorf("stream %s on %s: status %d", path, n.Name, resp.StatusCode)
	}
	return &sseStream{resp: resp, r: bufio.NewReaderSize(resp.Body, 64<<10)}, 200, nil
}

// smallWindowClient is an HTTP/1.1 client for n whose connections have a
// receive buffer of about rcvbuf bytes: a stream it stops reading blocks
// the node's writes after little more than the node's own send buffer.
func smallWindowClient(t *testing.T, n *Node, rcvbuf int) *http.Client {
	t.Helper()
	c := streamClient(t, n, protoHTTP1)
	tr := c.Transport.(*http.Transport)
	d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, rcvbuf)
		}); err != nil {
			return err
		}
		return serr
	}}
	tr.DialContext = d.DialContext
	return c
}

// appliedIndex is n's applied log index.
func appliedIndex(t *testing.T, n *Node) uint64 {
	t.Helper()
	st, ok := n.Status()
	if !ok {
		t.Fatalf("no /status from %s", n.Name)
	}
	return st.AppliedIndex
}

// waitApplied waits until n has applied index.
func waitApplied(t *testing.T, n *Node, index uint64) {
	t.Helper()
	poll(t, 30*time.Second, fmt.Sprintf("%s to apply index %d", n.Name, index), func() bool {
		st, ok := n.Status()
		return ok && st.AppliedIndex >= index
	})
}

// streamsClosedEverywhere waits until no node counts an open stream
// (arbor_stream_open 0): whatever the probe opened or had refused left
// nothing behind.
func streamsClosedEverywhere(t *testing.T, c *Cluster) {
	t.Helper()
	for _, n := range c.Nodes {
		waitStreamsOpen(t, n, 0)
	}
}

// noPanics fails the probe if a node recovered from a panic (the suite
// checks again at the end; this says which probe it was).
func noPanics(t *testing.T, c *Cluster, probe string) {
	t.Helper()
	for _, n := range c.Nodes {
		if v := counterValue(t, n, "arbor_panics_recovered_total"); v != 0 {
			t.Errorf("%s: %s recovered from %v panic(s)", probe, n.Name, v)
		}
	}
}

// rssMB is n's resident memory in MB.
func rssMB(t *testing.T, n *Node) int { return rssKB(t, n.current().cmd.Process.Pid) >> 10 }
