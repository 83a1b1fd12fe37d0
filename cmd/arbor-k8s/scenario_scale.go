package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/arbordb/arbor/cmd/internal/testcluster"
)

func scale(ctx context.Context, t *test, r *result) {
	l := startLoad(ctx, t.ccfg, t.w, "scale", 2, 3, maxWrites)
	pause(ctx, 2*time.Second)
	tUp := time.Now()
	if _, err := t.k.run(ctx, "scale", "statefulset", "arbor", "--replicas=5"); err != nil {
		l.finish()
		r.fail("%v", err)
		return
	}
	// Watch the newcomers in the leader's view until both are alive
	// voters: a newcomer must never be seen voting while it catches up.
	seen := map[string][]string{}
	err := testcluster.Poll(ctx, podTimeout, 100*time.Millisecond, func(ctx context.Context) error {
		leader, err := t.leader(ctx, 3)
		if err != nil {
			return err
		}
		st, err := t.status(ctx, leader)
		if err != nil {
			return err
		}
		var pending []string
		for _, id := range []string{"arbor-3", "arbor-4"} {
			var m *testcluster.Member
			for i := range st.Members {
				if st.Members[i].ID == id {
					m = &st.Members[i]
				}
			}
			state := "absent"
			if m != nil {
				state = fmt.Sprintf("%s/%s catching_up=%v", m.Suffrage, m.Health, m.CatchingUp)
			}
			if s := seen[id]; len(s) == 0 || s[len(s)-1] != state {
				seen[id] = append(seen[id], state)
			}
			p, _ := t.w.get(id)
			if m == nil || m.Suffrage != "Voter" || m.CatchingUp || m.Health != "alive" || !p.Ready {
				pending = append(pending, id+" "+state)
			}
		}
		if len(pending) > 0 {
			return fmt.Errorf("not yet voters: %v", pending)
		}
		return nil
	})
	if err != nil {
		l.finish()
		r.fail("scaling to 5: %v (seen: %v)", err, seen)
		t.diagnose(ctx, r.Name)
		return
	}
	r.figure("scaled to 5 in %s", time.Since(tUp).Round(100*time.Millisecond))
	for _, id := range []string{"arbor-3", "arbor-4"} {
		r.figure("%s as a member: %s", id, strings.Join(seen[id], " → "))
		for _, s := range seen[id] {
			if strings.HasPrefix(s, "Voter") && strings.Contains(s, "catching_up=true") {
				r.fail("%s voted while catching up (%s)", id, s)
			}
			if strings.HasPrefix(s, "Voter") {
				break
			}
		}
		if !slices.ContainsFunc(seen[id], func(s string) bool { return strings.HasPrefix(s, "Nonvoter") }) {
			r.fail("%s was never seen as a non-voter before it voted", id)
		}
	}
	gap, at := l.stats.gap(tUp, time.Now())
	r.figure("longest write gap while scaling up %s (at +%s)", gap.Round(10*time.Millisecond), at.Sub(tUp).Round(100*time.Millisecond))

	// Back to three, one at a time, as docs/OPERATIONS.md says.
	tDown := time.Now()
	for _, n := range []int{4, 3} {
		gone := podName(n)
		p, _ := t.w.get(gone)
		if _, err := t.k.run(ctx, "scale", "statefulset", "arbor", fmt.Sprintf("--replicas=%d", n)); err != nil {
			r.fail("%v", err)
			break
		}
		if err := testcluster.Poll(ctx, podTimeout, 200*time.Millisecond, func(context.Context) error {
			if q, ok := t.w.byID(p.UID); ok && q.SeenGone.IsZero() {
				return fmt.Errorf("%s still there", gone)
			}
			return nil
		}); err != nil {
			r.fail("%v", err)
			break
		}
		// Only a stopped member may be removed: an alive one is added
		// back (docs/OPERATIONS.md). Wait until the others see it gone.
		if err := testcluster.Poll(ctx, 60*time.Second, 200*time.Millisecond, func(ctx context.Context) error {
			leader, err := t.leader(ctx, 3)
			if err != nil {
				return err
			}
			st, err := t.status(ctx, leader)
			if err != nil {
				return err
			}
			for _, m := range st.Members {
				if m.ID == gone && m.Health == "alive" {
					return fmt.Errorf("%s still alive in %s's view", gone, leader)
				}
			}
			return nil
		}); err != nil {
			r.fail("%v", err)
			break
		}
		if err := t.removeMember(ctx, gone); err != nil {
			r.fail("removing %s: %v", gone, err)
			break
		}
	}
	finalMembers := ""
	err = testcluster.Poll(ctx, 60*time.Second, 200*time.Millisecond, func(ctx context.Context) error {
		leader, err := t.leader(ctx, 3)
		if err != nil {
			return err
		}
		st, err := t.status(ctx, leader)
		if err != nil {
			return err
		}
		// The Raft configuration (voters and non-voters); gossip may
		// remember the removed members a while longer (suffrage none).
		var raft, others []string
		for _, m := range st.Members {
			state := fmt.Sprintf("%s %s/%s catching_up=%v", m.ID, m.Suffrage, m.Health, m.CatchingUp)
			if m.Suffrage != "Voter" && m.Suffrage != "Nonvoter" {
				others = append(others, state)
				continue
			}
			raft = append(raft, state)
			if m.Suffrage != "Voter" || m.Health != "alive" || m.CatchingUp {
				return fmt.Errorf("%s", state)
			}
		}
		if len(raft) != 3 {
			return fmt.Errorf("%d members in the Raft configuration: %v", len(raft), raft)
		}
		finalMembers = fmt.Sprintf("%v (outside the configuration: %v)", raft, others)
		return nil
	})
	if err != nil {
		r.fail("back to three healthy voters: %v", err)
	} else {
		r.figure("back to three alive voters in %s: %s", time.Since(tDown).Round(100*time.Millisecond), finalMembers)
	}
	gap, at = l.stats.gap(tDown, time.Now())
	r.figure("longest write gap while scaling down %s (at +%s)", gap.Round(10*time.Millisecond), at.Sub(tDown).Round(100*time.Millisecond))
	if _, err := t.k.run(ctx, "delete", "pvc", "data-arbor-3", "data-arbor-4", "--wait=false"); err != nil {
		r.figure("deleting the claims of arbor-3 and arbor-4: %v", err)
	}
	t.settle(ctx, r, l, 3)
	if len(r.Fails) > 0 {
		t.diagnose(ctx, r.Name)
	}
}

// removeMember is `arbor members remove id` through a ready pod.
func (t *test) removeMember(ctx context.Context, id string) error {
	return testcluster.Poll(ctx, 30*time.Second, 500*time.Millisecond, func(ctx context.Context) error {
		ready := t.w.ready()
		if len(ready) == 0 {
			return errors.New("no ready pod")
		}
		rctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		resp, err := t.admin.Do(rctx, podHost(ready[0]), http.MethodDelete, "/members?id="+id, "")
		switch {
		case err != nil:
			return err
		case resp.Status >= 300:
			return fmt.Errorf("DELETE /members?id=%s: %d %s", id, resp.Status, strings.TrimSpace(string(resp.Body)))
		}
		return nil
	})
}
