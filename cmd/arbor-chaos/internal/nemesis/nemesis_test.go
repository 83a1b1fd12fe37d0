package nemesis

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arbordb/arbor/cmd/internal/client"
)

// fakeBackend records the faults and keeps the state a real cluster
// would report: which node leads, which are down, paused or cut off.
type fakeBackend struct {
	mu      sync.Mutex
	calls   []string
	leader  string
	down    map[string]bool
	paused  map[string]bool
	cut     map[string]bool
	stopFor time.Duration
	// readyzTurns: a node with a cut link answers /readyz 503.
	readyzTurns bool
}

func newFake() *fakeBackend {
	return &fakeBackend{leader: "n2", readyzTurns: true, down: map[string]bool{}, paused: map[string]bool{}, cut: map[string]bool{}}
}

func (f *fakeBackend) record(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

func (f *fakeBackend) Name() string                              { return "fake" }
func (f *fakeBackend) Nodes() []string                           { return NodeNames }
func (f *fakeBackend) Setup(context.Context) error               { return nil }
func (f *fakeBackend) Endpoints() []client.Endpoint              { return nil }
func (f *fakeBackend) CAFile() string                            { return "" }
func (f *fakeBackend) Partitions() bool                          { return true }
func (f *fakeBackend) CollectLogs(context.Context, string) error { return nil }
func (f *fakeBackend) Cleanup(context.Context) error             { return nil }

func (f *fakeBackend) Kill(_ context.Context, n string) error {
	f.record("kill %s", n)
	f.set(f.down, n, true)
	return nil
}

func (f *fakeBackend) Wipe(_ context.Context, n string) error {
	f.record("wipe %s", n)
	return nil
}

func (f *fakeBackend) Stop(_ context.Context, n string) (time.Duration, error) {
	f.record("stop %s", n)
	f.set(f.down, n, true)
	return f.stopFor, nil
}

func (f *fakeBackend) Start(_ context.Context, n string) error {
	f.record("start %s", n)
	f.set(f.down, n, false)
	return nil
}

func (f *fakeBackend) Pause(_ context.Context, n string) error {
	f.record("pause %s", n)
	f.set(f.paused, n, true)
	return nil
}

func (f *fakeBackend) Resume(_ context.Context, n string) error {
	f.record("resume %s", n)
	f.set(f.paused, n, false)
	return nil
}

func (f *fakeBackend) Cut(_ context.Context, ps [][2]string) error {
	for _, p := range ps {
		f.record("cut %s-%s", p[0], p[1])
		f.set(f.cut, p[0]+"-"+p[1], true)
	}
	return nil
}

func (f *fakeBackend) Heal(context.Context) error {
	f.mu.Lock()
	n := len(f.cut)
	f.cut = map[string]bool{}
	f.mu.Unlock()
	if n > 0 {
		f.record("heal")
	}
	return nil
}

func (f *fakeBackend) set(m map[string]bool, k string, on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if on {
		m[k] = true
	} else {
		delete(m, k)
	}
}

// Do answers /status as a healthy node would, unless the node is down,
// paused or the cluster has a fault in place.
func (f *fakeBackend) Do(_ context.Context, node, method, path, _ string, _ ...string) (client.Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down[node] || f.paused[node] {
		return client.Response{}, fmt.Errorf("%s does not answer", node)
	}
	if method == "GET" && path == "/readyz" {
		for link := range f.cut {
			if strings.Contains(link, node) && f.readyzTurns {
				return client.Response{Status: 503}, nil
			}
		}
		return client.Response{Status: 200}, nil
	}
	if method != "GET" || path != "/status" {
		return client.Response{Status: 404}, nil
	}
	role := "follower"
	if node == f.leader {
		role = "leader"
	}
	body := fmt.Sprintf(`{"node_id":%q,"role":%q,"leader":%q,"term":3,"ready":true,"health":"ok"}`, node, role, f.leader)
	return client.Response{Status: 200, Body: []byte(body)}, nil
}

func (f *fakeBackend) faultsInPlace() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.down)+len(f.paused)+len(f.cut) > 0
}

func newNemesis(f *fakeBackend) *Nemesis {
	start := time.Now()
	return &Nemesis{
		B:              f,
		Admin:          f,
		Clock:          func() time.Duration { return time.Since(start) },
		RecoverTimeout: 5 * time.Second,
		Seed:           7,
	}
}

// TestNemesisInjectsAndHealsEveryFault runs one short step of each fault
// and checks that it hit the intended nodes and was healed.
func TestNemesisInjectsAndHealsEveryFault(t *testing.T) {
	cases := []struct {
		step Step
		want []string // the calls, in order
	}{
		{Step{Fault: Kill, Target: Leader}, []string{"kill n2", "start n2"}},
		{Step{Fault: Wipe, Target: Leader}, []string{"kill n2", "wipe n2", "start n2"}},
		{Step{Fault: Stop, Target: Leader}, []string{"stop n2", "start n2"}},
		{Step{Fault: Pause, Target: Leader}, []string{"pause n2", "resume n2"}},
		{Step{Fault: PartitionLeader}, []string{"cut n2-n1", "cut n2-n3", "heal"}},
		{Step{Fault: KillAll}, []string{"kill n1", "kill n2", "kill n3", "start n1", "start n2", "start n3"}},
	}
	for _, c := range cases {
		t.Run(string(c.step.Fault), func(t *testing.T) {
			f := newFake()
			n := newNemesis(f)
			c.step.Hold = time.Millisecond
			c.step.Quiet = time.Millisecond
			ctx := context.Background()
			n.Run(ctx, ctx, []Step{c.step})
			got := slices.Clone(f.calls)
			if c.step.Fault == KillAll {
				// The kills run concurrently.
				slices.Sort(got[:3])
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("calls %v, want %v", got, c.want)
			}
			if f.faultsInPlace() {
				t.Error("a fault is still in place after the run")
			}
			ev := n.Events()
			if len(ev) != 1 || len(ev[0].Problems) != 0 || ev[0].Leader != "n2" || ev[0].RecoverFailed {
				t.Errorf("events %+v", ev)
			}
		})
	}
}

// TestNemesisFollowerTargets: a follower target never hits the leader,
// and a minority partition isolates a follower.
func TestNemesisFollowerTargets(t *testing.T) {
	f := newFake()
	n := newNemesis(f)
	var plan []Step
	for range 10 {
		plan = append(plan, Step{Fault: Pause, Target: Follower, Hold: time.Millisecond, Quiet: time.Millisecond})
	}
	plan = append(plan, Step{Fault: PartitionMinority, Hold: time.Millisecond, Quiet: time.Millisecond})
	ctx := context.Background()
	n.Run(ctx, ctx, plan)
	for _, c := range f.calls {
		if strings.HasSuffix(c, " n2") || strings.HasPrefix(c, "cut n2") {
			t.Errorf("a follower fault hit the leader: %v", f.calls)
			break
		}
	}
	if got := len(n.Events()); got != len(plan) {
		t.Errorf("%d events for %d steps", got, len(plan))
	}
}

// TestNemesisReportsSlowStopAndNoRecovery: a graceful stop slower than
// SPEC's 10 s, and a cluster that never becomes ready again, are
// problems in the event.
func TestNemesisReportsSlowStopAndNoRecovery(t *testing.T) {
	f := newFake()
	f.stopFor = 11 * time.Second
	n := newNemesis(f)
	n.RecoverTimeout = 300 * time.Millisecond
	ctx := context.Background()
	n.Run(ctx, ctx, []Step{{Fault: Stop, Target: Follower, Hold: time.Millisecond, Quiet: time.Millisecond}})
	ev := n.Events()[0]
	if len(ev.Problems) != 1 || !strings.Contains(ev.Problems[0], "graceful stop") {
		t.Errorf("problems %v", ev.Problems)
	}

	f = newFake()
	f.leader = "" // nobody leads: never stable
	n = newNemesis(f)
	n.RecoverTimeout = 300 * time.Millisecond
	n.Run(ctx, ctx, []Step{{Fault: Kill, Target: Follower, Hold: time.Millisecond, Quiet: time.Millisecond}})
	ev = n.Events()[0]
	if !ev.RecoverFailed || len(ev.Problems) == 0 {
		t.Errorf("event %+v: want a recovery failure", ev)
	}
}

// TestRunStopsAtTheDeadline: the run's end interrupts a hold, and the
// fault is still healed.
func TestRunStopsAtTheDeadline(t *testing.T) {
	f := newFake()
	n := newNemesis(f)
	run, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	n.Run(run, context.Background(), []Step{{Fault: Pause, Target: Leader, Hold: time.Hour, Quiet: time.Millisecond}})
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("Run took %s after its deadline", took)
	}
	if f.faultsInPlace() {
		t.Error("the pause was not healed at the deadline")
	}
}

func TestPlanIsReproducible(t *testing.T) {
	a := Plan(42, AllFaults, 10*time.Minute)
	b := Plan(42, AllFaults, 10*time.Minute)
	c := Plan(43, AllFaults, 10*time.Minute)
	if !slices.Equal(a, b) {
		t.Error("the same seed planned two schedules")
	}
	if slices.Equal(a, c) {
		t.Error("two seeds planned the same schedule")
	}
	used := map[Fault]bool{}
	var total time.Duration
	for _, s := range a {
		used[s.Fault] = true
		total += s.Quiet + s.Hold
		if s.Hold <= 0 || s.Quiet < 2*time.Second {
			t.Errorf("step %+v", s)
		}
	}
	if len(used) != len(AllFaults) {
		t.Errorf("a 10-minute plan used %d of %d faults", len(used), len(AllFaults))
	}
	if total < 10*time.Minute {
		t.Errorf("the plan covers %s of 10m", total)
	}
}

func TestParseFaults(t *testing.T) {
	all, err := ParseFaults("all", false)
	if err != nil || slices.ContainsFunc(all, Fault.NeedsPartitions) || len(all) != 5 {
		t.Errorf("all without partitions: %v %v", all, err)
	}
	all, err = ParseFaults("all", true)
	if err != nil || len(all) != len(AllFaults) {
		t.Errorf("all with partitions: %v %v", all, err)
	}
	if fs, err := ParseFaults("kill, pause,kill", false); err != nil || !slices.Equal(fs, []Fault{Kill, Pause}) {
		t.Errorf("kill, pause,kill: %v %v", fs, err)
	}
	for _, bad := range []string{"", "nap", "partition-leader"} {
		if _, err := ParseFaults(bad, false); err == nil {
			t.Errorf("%q accepted without partitions", bad)
		}
	}
}

// TestNemesisWatchesTheIsolatedNodesReadiness: during a partition that
// isolates a node, its /readyz must turn 503 (SPEC §10: within 10 s).
func TestNemesisWatchesTheIsolatedNodesReadiness(t *testing.T) {
	f := newFake()
	n := newNemesis(f)
	ctx := context.Background()
	n.Run(ctx, ctx, []Step{{Fault: PartitionMinority, Hold: 300 * time.Millisecond, Quiet: time.Millisecond}})
	ev := n.Events()[0]
	if ev.NotReadyAfter < 0 || ev.NotReadyAfter > 300*time.Millisecond || len(ev.Problems) != 0 {
		t.Errorf("event %+v", ev)
	}

	// A node that stays ready for longer than SPEC allows is a problem;
	// the clock is made to run fast so the test need not wait 10 s.
	f = newFake()
	f.readyzTurns = false
	n = newNemesis(f)
	start := time.Now()
	n.Clock = func() time.Duration { return 100 * time.Since(start) }
	n.Run(ctx, ctx, []Step{{Fault: PartitionLeader, Hold: 300 * time.Millisecond, Quiet: time.Millisecond}})
	ev = n.Events()[0]
	if ev.NotReadyAfter != -1 || len(ev.Problems) != 1 || !strings.Contains(ev.Problems[0], "/readyz") {
		t.Errorf("event %+v", ev)
	}
}
