package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestWritesWhileRulesChange: users write their own nodes through every
// node while the admin replaces the rules every 25 ms with rules that
// allow the same writes. A user's write is prejudged (CmdAsPrejudged)
// under the rules its node had; one that reaches the log after they were
// replaced is refused there and judged and proposed again, so every write
// is answered 200 (or, should the rules change three times while one
// write waits, the documented 503) and every node ends with each user's
// last acknowledged value.
func TestWritesWhileRulesChange(t *testing.T) {
	c := StartCluster(t, 3, "--jwt-hs256-secret", ruleSecret)
	leader := c.WaitStable(t, c.Nodes...)
	rules := func(limit int) string {
		return fmt.Sprintf(`{"rules": {"users": {"$uid": {".read": "auth.uid == $uid", ".write": "auth.uid == $uid",
			"n": {".validate": "newData.isNumber() && newData.val() < %d"}}}}}`, limit)
	}
	mustStatus(t, "set rules", leader.Do(t, "PUT", "/.settings/rules.json", rules(1000)), 200)
	const users, run = 6, 3 * time.Second
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		last      = make([]int, users) // last acknowledged value per user (-1: none)
		writes    int
		busy      int // the rules-changed 503s
		refused   []string
		stop      = make(chan struct{})
		rulesSets int
	)
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(25 * time.Millisecond):
			}
			r, err := leader.TryDo("PUT", "/.settings/rules.json", rules(1000+i%2))
			if err != nil || r.Status != 200 {
				t.Errorf("replace rules: %v %d %s", err, r.Status, r.Body)
				return
			}
			mu.Lock()
			rulesSets++
			mu.Unlock()
		}
	})
	for u := range users {
		last[u] = -1
		n, token := c.Nodes[u%len(c.Nodes)], idToken(t, fmt.Sprintf("user%d", u), time.Hour)
		client := n.PooledClient(t, 1)
		wg.Go(func() {
			for v := 0; ; v++ {
				select {
				case <-stop:
					return
				default:
				}
				r, err := n.TryDoWith(client, token, "PUT", fmt.Sprintf("/users/user%d/n.json", u), strconv.Itoa(v))
				mu.Lock()
				writes++
				switch {
				case err == nil && r.Status == 200:
					last[u] = v
				case err == nil && r.Status == 503 && strings.Contains(r.Body, "security rules kept changing"):
					busy++ // documented; the write was not applied
				default:
					refused = append(refused, fmt.Sprintf("user%d via %s: %v %d %s", u, n.Name, err, r.Status, strings.TrimSpace(r.Body)))
				}
				mu.Unlock()
			}
		})
	}
	time.Sleep(run) // the length of the run, not a wait for a state
	close(stop)
	wg.Wait()
	if len(refused) > 0 {
		t.Fatalf("%d of %d writes answered otherwise than 200 (or the rules-changed 503): %v", len(refused), writes, refused[:min(5, len(refused))])
	}
	rejudged := 0
	for _, n := range c.Nodes {
		rejudged += int(counterValue(t, n, "arbor_http_writes_rejudged_total"))
	}
	t.Logf("%d writes by %d users while the rules were replaced %d times: %d judged again after a rules change, %d answered the rules-changed 503",
		writes, users, rulesSets, rejudged, busy)
	for u := range users {
		want := "null"
		if last[u] >= 0 {
			want = strconv.Itoa(last[u])
		}
		for _, n := range c.Nodes {
			wantResponse(t, fmt.Sprintf("user%d's last value on %s", u, n.Name),
				n.Do(t, "GET", fmt.Sprintf("/users/user%d/n.json?consistency=linearizable", u), ""), 200, want)
		}
	}
}

// counterValue reads a counter without labels from n's /metrics.
func counterValue(t testing.TB, n *Node, name string) float64 {
	t.Helper()
	r := n.Do(t, "GET", "/metrics", "")
	for _, line := range strings.Split(r.Body, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("%s: %q: %v", n.Name, line, err)
			}
			return f
		}
	}
	t.Fatalf("%s: /metrics has no %s", n.Name, name)
	return 0
}
