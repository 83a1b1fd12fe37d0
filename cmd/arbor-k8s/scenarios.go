package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/arbordb/arbor/cmd/internal/checks"
	"github.com/arbordb/arbor/cmd/internal/testcluster"
)

type scenario struct {
	title string
	run   func(ctx context.Context, t *test, r *result)
}

var scenarios = map[string]scenario{
	"upgrade":     {"rolling upgrade from the previous release to HEAD under writes", upgrade},
	"leader-kill": {"the leader's pod force-deleted under writes", leaderKill},
	"pdb":         {"the disruption budget: no second eviction while a pod is down", pdb},
	"volume-lost": {"a pod deleted with its claim comes back empty", volumeLost},
	"scale":       {"kubectl scale 3 → 5 → 3", scale},
}

const (
	maxWrites   = 20000 // per writer and scenario
	maxGap      = time.Second
	maxResume   = 2 * time.Second
	podTimeout  = 3 * time.Minute
	convergeFor = 90 * time.Second
)

// settle stops the load, waits until the pods' replicas agree, then
// checks that every acknowledged write is on each of them and that no
// write failed.
func (t *test) settle(ctx context.Context, r *result, l *load, n int) {
	l.finish()
	r.figure("writes: %s", l.stats.summary())
	for _, f := range l.stats.failed() {
		r.fail("%s", f)
	}
	c := checks.Converge(ctx, t.admin, podHosts(n), t.o.work, convergeFor)
	if !c.OK {
		r.fail("%s", strings.TrimSpace(c.String()))
	}
	var pods []string
	for i := range n {
		pods = append(pods, podName(i))
	}
	missing := l.missing(ctx, t.admin, pods)
	for _, m := range missing {
		r.fail("%s", m)
	}
	if len(missing) == 0 {
		r.figure("all %d acknowledged writes present on each of the %d pods (local reads)", l.stats.ackedCount(), n)
	}
}

func upgrade(ctx context.Context, t *test, r *result) {
	old := t.uids(3)
	l := startLoad(ctx, t.ccfg, t.w, "upgrade", 2, 3, maxWrites)
	pause(ctx, 3*time.Second)
	t0 := time.Now()
	if err := t.apply(ctx, t.o.newManifests, t.o.newTag); err != nil {
		l.finish()
		r.fail("apply: %v", err)
		return
	}
	if err := t.waitPods(ctx, 3, t.o.newTag, old, 10*time.Minute); err != nil {
		l.finish()
		r.fail("the rollout: %v", err)
		t.diagnose(ctx, r.Name)
		return
	}
	t1 := time.Now()
	pause(ctx, 2*time.Second)
	r.figure("rollout of arbor:%s → arbor:%s: %s", t.o.oldTag, t.o.newTag, t1.Sub(t0).Round(100*time.Millisecond))

	// Each replaced pod, in the order the rollout replaced them.
	var news []pod
	for i := range 3 {
		if p, ok := t.w.get(podName(i)); ok {
			news = append(news, p)
		}
	}
	slices.SortFunc(news, func(a, b pod) int { return a.SeenReady.Compare(b.SeenReady) })
	from := t0
	for _, p := range news {
		start, err := t.firstLog(ctx, p.Name)
		if err != nil || start.IsZero() {
			start = p.StartedAt
		}
		toReady := p.SeenReady.Sub(start)
		gap, at := l.stats.gap(from, p.SeenReady)
		r.figure("%s: container start → Ready %s; longest write gap of the step %s (at +%s)",
			p.Name, toReady.Round(10*time.Millisecond), gap.Round(10*time.Millisecond), at.Sub(t0).Round(100*time.Millisecond))
		if toReady > t.o.maxReady {
			r.fail("%s took %s from its container's start to Ready, limit %s", p.Name, toReady.Round(10*time.Millisecond), t.o.maxReady)
		}
		from = p.SeenReady
	}
	gap, at := l.stats.gap(t0, t1)
	r.figure("longest gap between acknowledged writes during the rollout: %s (at +%s)", gap.Round(10*time.Millisecond), at.Sub(t0).Round(100*time.Millisecond))
	if gap > maxGap {
		r.fail("no write acknowledged for %s during the rollout, limit %s", gap.Round(10*time.Millisecond), maxGap)
	}
	t.settle(ctx, r, l, 3)
	for i := range 3 {
		st, err := t.status(ctx, podName(i))
		if err != nil {
			r.fail("%v", err)
			continue
		}
		r.figure("%s runs release %s", podName(i), st.Versions.Release)
	}
	if len(r.Fails) > 0 {
		t.diagnose(ctx, r.Name)
	}
}

func leaderKill(ctx context.Context, t *test, r *result) {
	leader, err := t.leader(ctx, 3)
	if err != nil {
		r.fail("no leader: %v", err)
		return
	}
	before, _ := t.w.get(leader)
	volBefore, err := t.claimVolume(ctx, "data-"+leader)
	if err != nil {
		r.fail("%v", err)
		return
	}
	l := startLoad(ctx, t.ccfg, t.w, "leaderkill", 2, 3, maxWrites)
	pause(ctx, 3*time.Second)
	tKill := time.Now()
	if _, err := t.k.run(ctx, "delete", "pod", leader, "--grace-period=0", "--force"); err != nil {
		l.finish()
		r.fail("%v", err)
		return
	}
	if err := t.waitPods(ctx, 3, t.o.newTag, map[string]bool{before.UID: true}, podTimeout); err != nil {
		l.finish()
		r.fail("%s did not come back: %v", leader, err)
		t.diagnose(ctx, r.Name)
		return
	}
	back, _ := t.w.get(leader)
	tBack := time.Now()
	pause(ctx, 2*time.Second)
	gap, at := l.stats.gap(tKill, tBack)
	first := firstAckAfter(&l.stats, tKill)
	r.figure("leader %s force-deleted; longest write gap afterwards %s (at +%s); %s back Ready after %s",
		leader, gap.Round(10*time.Millisecond), at.Sub(tKill).Round(10*time.Millisecond), leader, back.SeenReady.Sub(tKill).Round(100*time.Millisecond))
	if !first.IsZero() {
		r.figure("first write acknowledged after the kill at +%s", first.Sub(tKill).Round(10*time.Millisecond))
	}
	if gap > maxResume {
		r.fail("writes resumed only after %s, limit %s", gap.Round(10*time.Millisecond), maxResume)
	}
	volAfter, err := t.claimVolume(ctx, "data-"+leader)
	switch {
	case err != nil:
		r.fail("%v", err)
	case volAfter != volBefore:
		r.fail("%s came back on volume %s, not its own %s", leader, volAfter, volBefore)
	default:
		r.figure("%s came back on its volume %s", leader, volAfter)
	}
	if now, err := t.leader(ctx, 3); err == nil {
		r.figure("leader now %s", now)
	}
	t.settle(ctx, r, l, 3)
	if len(r.Fails) > 0 {
		t.diagnose(ctx, r.Name)
	}
}

// firstAckAfter is the first acknowledgement after at (zero: none).
func firstAckAfter(s *loadStats, at time.Time) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	var first time.Time
	for _, a := range s.acked {
		if a.After(at) && (first.IsZero() || a.Before(first)) {
			first = a
		}
	}
	return first
}

// followers are the pods of arbor-0..2 that do not lead.
func (t *test) followers(ctx context.Context) ([]string, error) {
	leader, err := t.leader(ctx, 3)
	if err != nil {
		return nil, err
	}
	var out []string
	for i := range 3 {
		if podName(i) != leader {
			out = append(out, podName(i))
		}
	}
	return out, nil
}

// disruptionsAllowed is the PodDisruptionBudget's current allowance.
func (t *test) disruptionsAllowed(ctx context.Context) (string, error) {
	out, err := t.k.run(ctx, "get", "pdb", "arbor", "-o", "jsonpath={.status.disruptionsAllowed}")
	return strings.TrimSpace(string(out)), err
}

// evict asks the eviction API to evict pod.
func (t *test) evict(ctx context.Context, name string) error {
	body := fmt.Sprintf(`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":%q,"namespace":%q}}`, name, namespace)
	_, err := t.k.runIn(ctx, []byte(body), "create", "--raw", "/api/v1/namespaces/"+namespace+"/pods/"+name+"/eviction", "-f", "-")
	return err
}

func pdb(ctx context.Context, t *test, r *result) {
	f, err := t.followers(ctx)
	if err != nil {
		r.fail("%v", err)
		return
	}
	down, second := f[0], f[1]
	before, _ := t.w.get(down)
	if _, err := t.k.run(ctx, "delete", "pod", down, "--wait=false"); err != nil {
		r.fail("%v", err)
		return
	}
	if err := testcluster.Poll(ctx, 30*time.Second, 100*time.Millisecond, func(ctx context.Context) error {
		n, err := t.disruptionsAllowed(ctx)
		if err == nil && n != "0" {
			err = fmt.Errorf("disruptionsAllowed %s", n)
		}
		return err
	}); err != nil {
		r.fail("the budget did not drop to 0 with %s down: %v", down, err)
		return
	}
	err = t.evict(ctx, second)
	switch {
	case err == nil:
		r.fail("evicting %s while %s is down was allowed", second, down)
		return
	case strings.Contains(err.Error(), "disruption budget"):
		r.figure("%s down: evicting %s refused (%s)", down, second, lastLine(err.Error()))
	default:
		r.fail("evicting %s: %v", second, err)
		return
	}
	if err := t.waitPods(ctx, 3, t.o.newTag, map[string]bool{before.UID: true}, podTimeout); err != nil {
		r.fail("%s did not come back: %v", down, err)
		t.diagnose(ctx, r.Name)
		return
	}
	if err := testcluster.Poll(ctx, 30*time.Second, 100*time.Millisecond, func(ctx context.Context) error {
		n, err := t.disruptionsAllowed(ctx)
		if err == nil && n != "1" {
			err = fmt.Errorf("disruptionsAllowed %s", n)
		}
		return err
	}); err != nil {
		r.fail("the budget did not return to 1: %v", err)
		return
	}
	sec, _ := t.w.get(second)
	if err := t.evict(ctx, second); err != nil {
		r.fail("evicting %s once %s was Ready again: %v", second, down, err)
		return
	}
	r.figure("%s Ready again: evicting %s went through", down, second)
	if err := t.waitPods(ctx, 3, t.o.newTag, map[string]bool{sec.UID: true}, podTimeout); err != nil {
		r.fail("%s did not come back: %v", second, err)
		t.diagnose(ctx, r.Name)
		return
	}
	if _, err := t.leader(ctx, 3); err != nil {
		r.fail("%v", err)
	}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndex(s, ": "); i >= 0 && i+2 < len(s) {
		return s[i+2:]
	}
	return s
}

func volumeLost(ctx context.Context, t *test, r *result) {
	f, err := t.followers(ctx)
	if err != nil {
		r.fail("%v", err)
		return
	}
	x := f[len(f)-1]
	before, _ := t.w.get(x)
	volBefore, err := t.claimVolume(ctx, "data-"+x)
	if err != nil {
		r.fail("%v", err)
		return
	}
	l := startLoad(ctx, t.ccfg, t.w, "volumelost", 2, 3, maxWrites)
	pause(ctx, 3*time.Second)
	tDel := time.Now()
	if _, err := t.k.run(ctx, "delete", "pvc", "data-"+x, "--wait=false"); err != nil {
		l.finish()
		r.fail("%v", err)
		return
	}
	if _, err := t.k.run(ctx, "delete", "pod", x, "--wait=false"); err != nil {
		l.finish()
		r.fail("%v", err)
		return
	}
	// Follow x in the other members' view until it is an ordinary voter
	// again: it must be seen catching up (not a full voter) first.
	var seen []string
	caughtUp := false
	err = testcluster.Poll(ctx, podTimeout, 100*time.Millisecond, func(ctx context.Context) error {
		for _, other := range f[:len(f)-1] {
			st, err := t.status(ctx, other)
			if err != nil {
				return err
			}
			st2 := st
			if st.Leader != "" && st.Leader != other && st.Leader != x {
				if ls, err := t.status(ctx, st.Leader); err == nil {
					st2 = ls
				}
			}
			for _, m := range st2.Members {
				if m.ID != x {
					continue
				}
				p, _ := t.w.get(x)
				state := fmt.Sprintf("%s/%s catching_up=%v", m.Suffrage, m.Health, m.CatchingUp)
				if p.UID != before.UID && (len(seen) == 0 || seen[len(seen)-1] != state) {
					seen = append(seen, state)
				}
				if p.UID != before.UID && p.Ready && m.Suffrage == "Voter" && !m.CatchingUp && m.Health == "alive" {
					caughtUp = true
					return nil
				}
				return fmt.Errorf("%s is %s, pod ready %v", x, state, p.Ready)
			}
			return fmt.Errorf("%s is not a member", x)
		}
		return errors.New("no other member")
	})
	back, _ := t.w.get(x)
	if err != nil || !caughtUp {
		l.finish()
		r.fail("%s did not rejoin: %v (seen: %v)", x, err, seen)
		t.diagnose(ctx, r.Name)
		return
	}
	r.figure("%s deleted with its claim at +0; back Ready at +%s; as a member it was seen %s",
		x, back.SeenReady.Sub(tDel).Round(100*time.Millisecond), strings.Join(seen, " → "))
	if !slices.ContainsFunc(seen, func(s string) bool {
		return strings.Contains(s, "catching_up=true") || strings.HasPrefix(s, "Nonvoter")
	}) {
		r.fail("%s was never seen catching up or as a non-voter before voting again", x)
	}
	volAfter, err := t.claimVolume(ctx, "data-"+x)
	switch {
	case err != nil:
		r.fail("%v", err)
	case volAfter == volBefore:
		r.fail("%s came back on its old volume %s", x, volAfter)
	default:
		r.figure("%s came back on a new, empty volume %s (was %s)", x, volAfter, volBefore)
	}
	gap, at := l.stats.gap(tDel, back.SeenReady)
	r.figure("longest write gap meanwhile %s (at +%s)", gap.Round(10*time.Millisecond), at.Sub(tDel).Round(100*time.Millisecond))
	t.settle(ctx, r, l, 3)
	if len(r.Fails) > 0 {
		t.diagnose(ctx, r.Name)
	}
}
