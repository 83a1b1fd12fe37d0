package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// progressStatus is the part of /status that shows each member's
// replication progress as the leader sees it.
type progressStatus struct {
	ProgressFrom string `json:"progress_from"`
	Members      []struct {
		ID       string `json:"id"`
		Leader   bool   `json:"leader"`
		Health   string `json:"health"`
		Versions *struct {
			EntryFormat int `json:"entry_format"`
		} `json:"versions"`
		Progress *struct {
			AppliedIndex  *uint64 `json:"applied_index"`
			Lag           *uint64 `json:"lag"`
			LastContactMS *int64  `json:"last_contact_ms"`
			Stale         bool    `json:"stale"`
		} `json:"progress"`
	} `json:"members"`
}

// progressOf reads n's /status (a 503 or a refused connection is "not
// yet", as a client would retry it).
func progressOf(n *Node) (progressStatus, string) {
	var st progressStatus
	r, err := n.TryDo("GET", "/status", "")
	if err != nil || r.Status != 200 {
		return st, fmt.Sprintf("%s: /status: %v %d %s", n.Name, err, r.Status, r.Body)
	}
	if err := json.Unmarshal([]byte(r.Body), &st); err != nil {
		return st, fmt.Sprintf("%s: /status %s: %v", n.Name, r.Body, err)
	}
	return st, r.Body
}

// membersUp says why st does not show the members of want up to date as
// leader sees them, with down (if not "") stale; "" when it does.
func membersUp(st progressStatus, leader string, want []string, down string) string {
	if st.ProgressFrom != leader {
		return fmt.Sprintf("progress from %q, want %q", st.ProgressFrom, leader)
	}
	var got []string
	for _, m := range st.Members {
		got = append(got, m.ID)
	}
	if !slices.Equal(slices.Sorted(slices.Values(got)), want) {
		return fmt.Sprintf("members %v, want %v", got, want)
	}
	for _, m := range st.Members {
		p := m.Progress
		switch {
		case m.Versions == nil || m.Versions.EntryFormat < 1:
			return m.ID + ": no formats"
		case p == nil || p.AppliedIndex == nil || *p.AppliedIndex == 0 || p.Lag == nil:
			return m.ID + ": no applied index or lag"
		case m.ID == down && !p.Stale:
			return m.ID + ": not stale yet"
		case m.ID == down:
		case p.Stale || m.Health != "alive":
			return fmt.Sprintf("%s: stale %v, health %s", m.ID, p.Stale, m.Health)
		case m.Leader != (m.ID == leader):
			return m.ID + ": leader flag wrong"
		case !m.Leader && p.LastContactMS == nil:
			return m.ID + ": no last contact"
		case m.Leader && p.LastContactMS != nil:
			return m.ID + ": the leader shows a last contact with itself"
		}
	}
	return ""
}

// testStatusProgress: /status on the leader and on a follower shows every
// member's applied index, lag and last contact as the leader sees them,
// and the same member stale once it is killed; it recovers on restart.
func testStatusProgress(t *testing.T, c *Cluster) {
	leader := c.WaitStable(t, c.Nodes...)
	others := c.Others(leader)
	follower, victim := others[0], others[1]
	var ids []string
	for _, n := range c.Nodes {
		ids = append(ids, n.Name)
	}
	slices.Sort(ids)
	wantResponse(t, "a write through a follower", follower.Do(t, "PUT", "/progress.json", `1`), 200, `1`)
	waitView := func(what, down string, on ...*Node) {
		t.Helper()
		for _, n := range on {
			last := ""
			poll(t, 30*time.Second, n.Name+"'s /status to show "+what, func() bool {
				st, body := progressOf(n)
				last = membersUp(st, leader.Name, ids, down)
				if last != "" {
					last += " in " + body
				}
				return last == ""
			}, func() string { return last })
		}
	}
	waitView("three members up", "", leader, follower)

	victim.Kill(t)
	waitView(victim.Name+" stale", victim.Name, leader, follower)
	// arbor members list through the follower says so too.
	code, out := Run(t, "members", "list", "--addr", follower.Addr(), "--ca", c.PKI+"/ca.pem", "--auth", AdminSecret)
	if line := lineOf(out, victim.Name+" "); code != 0 || !strings.Contains(line, "stale") || strings.Count(out, " ago") != 2 {
		t.Errorf("arbor members list with %s killed: exit %d\n%s", victim.Name, code, out)
	}
	t.Logf("arbor members list through %s with %s killed:\n%s", follower.Name, victim.Name, out)
	victim.Restart(t)
	victim.WaitReady(t)
	// Whoever leads now (normally still the same node), every node shows
	// its view with three members up.
	leader = c.WaitStable(t, c.Nodes...)
	waitView("three members up again", "", c.Nodes...)
}

// lineOf is the first line of out that starts with prefix ("" if none).
func lineOf(out, prefix string) string {
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, prefix) {
			return line
		}
	}
	return ""
}
