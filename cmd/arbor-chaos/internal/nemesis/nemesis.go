package nemesis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/arbordb/arbor/cmd/internal/testcluster"
)

// GracefulStopLimit is how fast a SIGTERM must end a node (SPEC §10).
const GracefulStopLimit = 10 * time.Second

// Event is a fault as it happened.
type Event struct {
	Step   int      `json:"step"`
	Fault  Fault    `json:"fault"`
	Nodes  []string `json:"nodes"`            // the nodes it hit
	Cut    []string `json:"cut,omitempty"`    // partitions: the links cut, "n1-n2"
	Leader string   `json:"leader,omitempty"` // the leader when it started ("" if unknown)
	// Times since the run started: when the injection began, when it was
	// complete (a partition of two links takes a moment), when healed.
	Start    time.Duration `json:"start"`
	Injected time.Duration `json:"injected"`
	End      time.Duration `json:"end"` // when it was healed
	// Recovered is how long after End every node was ready with one
	// leader; RecoverFailed says it was not, within the bound.
	Recovered     time.Duration `json:"recovered"`
	RecoverFailed bool          `json:"recover_failed,omitempty"`
	StopTook      time.Duration `json:"stop_took,omitempty"` // Stop: SIGTERM → exit
	// NotReadyAfter: an isolated node's /readyz turned 503 this long
	// after the cut (SPEC §10: within 10 s); -1 if not during the hold.
	NotReadyAfter time.Duration `json:"not_ready_after,omitempty"`
	// Problems are findings about the product (a slow graceful stop,
	// no recovery) or failures to inject; the runner reports them.
	Problems []string `json:"problems,omitempty"`
}

// Requester sends an HTTPS request to a node (*client.Client does).
type Requester = testcluster.Requester

// Nemesis carries out a plan against a backend.
type Nemesis struct {
	B     Backend
	Admin Requester // authenticated as admin, for /status
	Log   io.Writer // the schedule as it happens
	// Clock is the run's clock (the history's), so events and operations
	// share a time line.
	Clock func() time.Duration
	// RecoverTimeout bounds the wait for the cluster after a heal.
	RecoverTimeout time.Duration
	Seed           uint64

	mu     sync.Mutex
	events []Event
	down   map[string]bool // killed or stopped, not restarted
	paused map[string]bool
}

// Events returns the events so far.
func (n *Nemesis) Events() []Event {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.events)
}

func (n *Nemesis) logf(format string, args ...any) {
	if n.Log != nil {
		fmt.Fprintf(n.Log, "[%7.1fs] %s\n", n.Clock().Seconds(), fmt.Sprintf(format, args...))
	}
}

// Run carries out plan until run is done (faults in progress are then
// healed) or abort is done (an interrupt: heal at once and return).
func (n *Nemesis) Run(run, abort context.Context, plan []Step) {
	n.mu.Lock()
	n.down, n.paused = map[string]bool{}, map[string]bool{}
	n.mu.Unlock()
	rng := rand.New(rand.NewPCG(n.Seed, 0x746172676574)) // "target"
	for i, s := range plan {
		if !wait(run, s.Quiet) {
			return
		}
		ev := n.inject(abort, i, s, rng)
		n.logf("step %d: %s on %v%s (leader was %q)", i, s.Fault, ev.Nodes, cutText(ev.Cut), ev.Leader)
		// The hold ends early when the run does, but a fault is always
		// healed and followed by a recovery wait.
		if s.Fault == PartitionLeader || s.Fault == PartitionMinority {
			n.watchReadiness(run, &ev, s.Hold)
		} else {
			wait(run, s.Hold)
		}
		n.heal(abort, &ev)
		ev.End = n.Clock()
		n.logf("step %d: healed", i)
		n.awaitRecovery(abort, &ev)
		for _, p := range ev.Problems {
			n.logf("step %d: PROBLEM: %s", i, p)
		}
		n.mu.Lock()
		n.events = append(n.events, ev)
		n.mu.Unlock()
		if run.Err() != nil {
			return
		}
	}
}

func cutText(cut []string) string {
	if len(cut) == 0 {
		return ""
	}
	return fmt.Sprintf(", links cut %v", cut)
}

// wait sleeps d unless ctx ends first; it reports whether d passed.
func wait(ctx context.Context, d time.Duration) bool { return testcluster.Sleep(ctx, d) }

// inject starts the fault of step s.
func (n *Nemesis) inject(ctx context.Context, i int, s Step, rng *rand.Rand) Event {
	ev := Event{Step: i, Fault: s.Fault, Start: n.Clock()}
	ev.Leader = n.Leader(ctx)
	pick := func(t Target) string {
		var followers []string
		for _, x := range n.B.Nodes() {
			if x != ev.Leader {
				followers = append(followers, x)
			}
		}
		if t == Leader && ev.Leader != "" {
			return ev.Leader
		}
		return followers[rng.IntN(len(followers))]
	}
	var err error
	switch s.Fault {
	case Kill:
		node := pick(s.Target)
		ev.Nodes = []string{node}
		err = n.B.Kill(ctx, node)
		n.mark(n.down, node, err == nil)
	case Wipe:
		node := pick(s.Target)
		ev.Nodes = []string{node}
		if err = n.B.Kill(ctx, node); err == nil {
			err = n.B.Wipe(ctx, node)
		}
		n.mark(n.down, node, true)
	case KillAll:
		ev.Nodes = slices.Clone(n.B.Nodes())
		var errs []error
		var wg sync.WaitGroup
		var mu sync.Mutex
		for _, node := range ev.Nodes {
			wg.Go(func() {
				e := n.B.Kill(ctx, node)
				mu.Lock()
				errs = append(errs, e)
				mu.Unlock()
				n.mark(n.down, node, e == nil)
			})
		}
		wg.Wait()
		err = errors.Join(errs...)
	case Pause:
		node := pick(s.Target)
		ev.Nodes = []string{node}
		err = n.B.Pause(ctx, node)
		n.mark(n.paused, node, err == nil)
	case Stop:
		node := pick(s.Target)
		ev.Nodes = []string{node}
		var took time.Duration
		took, err = n.B.Stop(ctx, node)
		ev.StopTook = took
		n.mark(n.down, node, true) // stopped, or killed after the grace period
		if took > GracefulStopLimit {
			ev.Problems = append(ev.Problems, fmt.Sprintf("graceful stop of %s took %s (SPEC §10: within %s)", node, took.Round(time.Millisecond), GracefulStopLimit))
		}
	case PartitionLeader, PartitionMinority:
		node := pick(Follower)
		if s.Fault == PartitionLeader {
			node = pick(Leader)
		}
		ev.Nodes = []string{node}
		var cut [][2]string
		for _, x := range n.B.Nodes() {
			if x != node {
				cut = append(cut, [2]string{node, x})
			}
		}
		ev.Cut = linkNames(cut)
		err = n.B.Cut(ctx, cut)
	case PartitionBridge:
		// Target leader: cut the leader from one follower (the
		// follower hears no heartbeats but the bridge does); target
		// follower: cut the two followers from each other.
		a := pick(s.Target)
		var others []string
		for _, x := range n.B.Nodes() {
			if x != a && (s.Target == Leader || x != ev.Leader) {
				others = append(others, x)
			}
		}
		if len(others) == 0 {
			others = slices.DeleteFunc(slices.Clone(n.B.Nodes()), func(x string) bool { return x == a })
		}
		b := others[rng.IntN(len(others))]
		ev.Nodes = []string{a, b}
		cut := [][2]string{{a, b}}
		ev.Cut = linkNames(cut)
		err = n.B.Cut(ctx, cut)
	default:
		err = fmt.Errorf("unknown fault %q", s.Fault)
	}
	if err != nil {
		ev.Problems = append(ev.Problems, fmt.Sprintf("injecting %s: %v", s.Fault, err))
	}
	ev.Injected = n.Clock()
	return ev
}

func linkNames(ps [][2]string) []string {
	var s []string
	for _, p := range ps {
		s = append(s, p[0]+"-"+p[1])
	}
	return s
}

func (n *Nemesis) mark(set map[string]bool, node string, on bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if on {
		set[node] = true
	}
}

// heal undoes every fault in place: partitions healed, paused nodes
// resumed, stopped or killed nodes started.
func (n *Nemesis) heal(ctx context.Context, ev *Event) {
	if err := n.HealAll(ctx); err != nil {
		ev.Problems = append(ev.Problems, "healing: "+err.Error())
	}
}

// HealAll undoes every fault the nemesis has in place. The runner calls
// it once more at the end, whatever happened.
func (n *Nemesis) HealAll(ctx context.Context) error {
	var errs []error
	if n.B.Partitions() {
		errs = append(errs, n.B.Heal(ctx))
	}
	n.mu.Lock()
	paused, down := keys(n.paused), keys(n.down)
	n.paused, n.down = map[string]bool{}, map[string]bool{}
	n.mu.Unlock()
	for _, node := range paused {
		errs = append(errs, n.B.Resume(ctx, node))
	}
	for _, node := range down {
		errs = append(errs, n.B.Start(ctx, node))
	}
	return errors.Join(errs...)
}

func keys(m map[string]bool) []string {
	var s []string
	for k := range m {
		s = append(s, k)
	}
	slices.Sort(s)
	return s
}

// NotReadyLimit is SPEC §10's bound: a node cut off from the majority
// reports 503 on /readyz within 10 s.
const NotReadyLimit = 10 * time.Second

// watchReadiness holds an isolating partition for hold while polling the
// isolated node's /readyz, and records when it turned 503. A node still
// ready NotReadyLimit after the cut is a problem; a hold too short to
// tell is not.
func (n *Nemesis) watchReadiness(run context.Context, ev *Event, hold time.Duration) {
	ctx, cancel := context.WithTimeout(run, hold)
	defer cancel()
	ev.NotReadyAfter = -1
	for ctx.Err() == nil {
		if n.Clock()-ev.Injected > NotReadyLimit {
			ev.Problems = append(ev.Problems, fmt.Sprintf("%s, cut off from the majority, still answered /readyz 200 %s after the cut (SPEC §10: 503 within %s)",
				ev.Nodes[0], NotReadyLimit, NotReadyLimit))
			wait(ctx, hold) // hold the fault to its end all the same
			return
		}
		rctx, rcancel := context.WithTimeout(ctx, time.Second)
		r, err := n.Admin.Do(rctx, ev.Nodes[0], "GET", "/readyz", "")
		rcancel()
		if err == nil && r.Status == 503 {
			ev.NotReadyAfter = n.Clock() - ev.Injected
			n.logf("step %d: %s reports not ready after %s", ev.Step, ev.Nodes[0], ev.NotReadyAfter.Round(time.Millisecond))
			wait(ctx, hold)
			return
		}
		wait(ctx, 250*time.Millisecond)
	}
}

// awaitRecovery waits until every node is ready and they agree on one
// leader, bounded by RecoverTimeout.
func (n *Nemesis) awaitRecovery(ctx context.Context, ev *Event) {
	took, err := n.AwaitStable(ctx, n.RecoverTimeout)
	ev.Recovered = took
	if err != nil {
		ev.RecoverFailed = true
		ev.Problems = append(ev.Problems, fmt.Sprintf("cluster not recovered %s after healing %s: %v", n.RecoverTimeout, ev.Fault, err))
		return
	}
	n.logf("step %d: recovered in %s", ev.Step, took.Round(time.Millisecond))
}

// Status reads node's /status.
func (n *Nemesis) Status(ctx context.Context, node string) (testcluster.Status, error) {
	return testcluster.GetStatus(ctx, n.Admin, node)
}

// Leader returns the node that says it leads, with the highest term
// (an old leader cut off may still believe it leads); "" if none.
func (n *Nemesis) Leader(ctx context.Context) string {
	leader, term := "", uint64(0)
	for _, node := range n.B.Nodes() {
		st, err := n.Status(ctx, node)
		if err == nil && st.Role == "leader" && st.Term >= term {
			leader, term = node, st.Term
		}
	}
	return leader
}

// AwaitStable polls until every node is ready and names the same leader,
// or timeout passes; it returns how long that took.
func (n *Nemesis) AwaitStable(ctx context.Context, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	err := testcluster.Poll(ctx, timeout, 200*time.Millisecond, func(pctx context.Context) error {
		_, err := testcluster.OneLeader(n.B.Nodes(), func(node string) (testcluster.Status, error) {
			return n.Status(pctx, node)
		})
		return err
	})
	if err != nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	return time.Since(start), err
}
