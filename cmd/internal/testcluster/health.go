package testcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/arbordb/arbor/cmd/internal/client"
)

// Status is the part of a node's /status the test tools read. The
// reference release of the upgrade test has every field but the last
// log index, the snapshots installed, the last snapshot, the Raft
// figures and the releases.
type Status struct {
	NodeID             string `json:"node_id"`
	Role               string `json:"role"`
	Leader             string `json:"leader"`
	Term               uint64 `json:"term"`
	CommitIndex        uint64 `json:"commit_index"`
	AppliedIndex       uint64 `json:"applied_index"`
	LastLogIndex       uint64 `json:"last_log_index"`
	Ready              bool   `json:"ready"`
	Health             string `json:"health"`
	SnapshotsInstalled uint64 `json:"snapshots_installed"`
	// Versions are the formats and release this node runs.
	Versions Versions `json:"versions"`
	// LastSnapshot is the newest snapshot the node knows of (nil: none).
	LastSnapshot *SnapshotRef `json:"last_snapshot"`
	Members      []Member     `json:"members"`
	// Raft holds raft.Stats figures, e.g. last_snapshot_index: the
	// snapshot restored at start-up until a newer one is taken.
	Raft map[string]string `json:"raft"`
}

// SnapshotRef names a snapshot in /status.
type SnapshotRef struct {
	Index uint64 `json:"index"`
}

// Member is a member of the Raft configuration as /status shows it.
type Member struct {
	ID         string    `json:"id"`
	Suffrage   string    `json:"suffrage"`
	Health     string    `json:"health"`
	Self       bool      `json:"self"`
	CatchingUp bool      `json:"catching_up"`
	Versions   *Versions `json:"versions"` // nil: not advertised
}

// Versions are the formats a node applies and its release.
type Versions struct {
	EntryFormat    int    `json:"entry_format"`
	SnapshotFormat int    `json:"snapshot_format"`
	Release        string `json:"release"`
}

// Requester sends an HTTPS request to a node, as admin (*client.Client
// does).
type Requester interface {
	Do(ctx context.Context, node, method, path, body string, headers ...string) (client.Response, error)
}

// requestBound bounds one health request.
const requestBound = 3 * time.Second

// ParseStatus decodes a /status body.
func ParseStatus(body []byte) (Status, error) {
	var st Status
	err := json.Unmarshal(body, &st)
	return st, err
}

// GetStatus reads node's /status.
func GetStatus(ctx context.Context, r Requester, node string) (Status, error) {
	ctx, cancel := context.WithTimeout(ctx, requestBound)
	defer cancel()
	resp, err := r.Do(ctx, node, http.MethodGet, "/status", "")
	if err != nil {
		return Status{}, err
	}
	if resp.Status != http.StatusOK {
		return Status{}, fmt.Errorf("/status on %s: %d %s", node, resp.Status, strings.TrimSpace(string(resp.Body)))
	}
	st, err := ParseStatus(resp.Body)
	if err != nil {
		return Status{}, fmt.Errorf("/status on %s: %w", node, err)
	}
	return st, nil
}

// CheckReady returns nil if node's /readyz answers 200, else what it
// said.
func CheckReady(ctx context.Context, r Requester, node string) error {
	ctx, cancel := context.WithTimeout(ctx, requestBound)
	defer cancel()
	resp, err := r.Do(ctx, node, http.MethodGet, "/readyz", "")
	switch {
	case err != nil:
		return fmt.Errorf("/readyz on %s: %w", node, err)
	case resp.Status != http.StatusOK:
		return fmt.Errorf("/readyz on %s: %d %s", node, resp.Status, strings.TrimSpace(string(resp.Body)))
	}
	return nil
}

// OneLeader checks that every one of nodes is ready and names the same
// leader, and returns that leader; status reads a node's /status.
func OneLeader(nodes []string, status func(node string) (Status, error)) (string, error) {
	leader := ""
	for _, node := range nodes {
		st, err := status(node)
		switch {
		case err != nil:
			return "", err
		case !st.Ready:
			return "", fmt.Errorf("%s not ready: %s", node, st.Health)
		case st.Leader == "":
			return "", fmt.Errorf("%s knows no leader", node)
		case leader != "" && st.Leader != leader:
			return "", fmt.Errorf("%s says the leader is %s, another node %s", node, st.Leader, leader)
		}
		leader = st.Leader
	}
	return leader, nil
}

// Poll calls cond every interval until it returns nil, for at most
// timeout (cond's ctx ends then too), and returns nil once cond has.
// Otherwise it returns cond's last complaint: not one the deadline cut
// short, unless there is no other.
func Poll(ctx context.Context, timeout, interval time.Duration, cond func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var last error
	for {
		err := cond(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() == nil || last == nil {
			last = err
		}
		select {
		case <-ctx.Done():
			return last
		case <-tick.C:
		}
	}
}

// Sleep waits d unless ctx ends first; it reports whether d passed.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
