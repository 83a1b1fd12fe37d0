package nemesis

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// Fault is a kind of fault the nemesis injects.
type Fault string

// The faults. Every fault is healed before the next one starts.
const (
	// Kill: SIGKILL one node; restart it after the hold.
	Kill Fault = "kill"
	// KillAll: SIGKILL every node at once; restart them all. Only what
	// was fsynced survives, and every acknowledged write must.
	KillAll Fault = "kill-all"
	// Wipe: SIGKILL one node and delete its data directory (a lost disk
	// or PersistentVolumeClaim); restart it empty under the same id after
	// the hold. It must catch up without voting a stale leader in.
	Wipe Fault = "wipe"
	// Pause: freeze one node (SIGSTOP / cgroup freezer); resume it.
	Pause Fault = "pause"
	// Stop: graceful stop (SIGTERM); restart after the hold.
	Stop Fault = "stop"
	// PartitionLeader: cut the leader off from both other nodes.
	PartitionLeader Fault = "partition-leader"
	// PartitionMinority: cut one follower off from both other nodes.
	PartitionMinority Fault = "partition-minority"
	// PartitionBridge: cut one link only; the third node still talks to
	// both sides.
	PartitionBridge Fault = "partition-bridge"
)

// AllFaults lists every fault; the process backend supports those that
// cut no links.
var AllFaults = []Fault{Kill, KillAll, Wipe, Pause, Stop, PartitionLeader, PartitionMinority, PartitionBridge}

// NeedsPartitions reports whether f needs a backend that can cut links.
func (f Fault) NeedsPartitions() bool {
	return strings.HasPrefix(string(f), "partition-")
}

// ParseFaults reads a comma-separated list of faults; "all" is every
// fault the backend supports.
func ParseFaults(s string, partitions bool) ([]Fault, error) {
	var out []Fault
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		switch {
		case f == "":
			continue
		case f == "all":
			for _, a := range AllFaults {
				if partitions || !a.NeedsPartitions() {
					out = append(out, a)
				}
			}
			continue
		case !slices.Contains(AllFaults, Fault(f)):
			return nil, fmt.Errorf("unknown fault %q (known: all, %s)", f, joinFaults(AllFaults))
		case Fault(f).NeedsPartitions() && !partitions:
			return nil, fmt.Errorf("fault %q needs the docker backend", f)
		}
		if !slices.Contains(out, Fault(f)) {
			out = append(out, Fault(f))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no faults selected")
	}
	return out, nil
}

func joinFaults(fs []Fault) string {
	s := make([]string, len(fs))
	for i, f := range fs {
		s[i] = string(f)
	}
	return strings.Join(s, ", ")
}

// Target says which node a fault picks when it starts.
type Target string

// The targets.
const (
	Leader   Target = "leader"
	Follower Target = "follower"
)

// Step is one planned fault: wait Quiet, inject Fault on Target, hold it
// for Hold, heal.
type Step struct {
	Fault  Fault
	Target Target
	Hold   time.Duration
	Quiet  time.Duration
}

// String renders the step for the printed schedule.
func (s Step) String() string {
	t := ""
	switch s.Fault {
	case KillAll:
	case PartitionLeader:
		t = " leader"
	case PartitionMinority:
		t = " follower"
	default:
		t = " " + string(s.Target)
	}
	return fmt.Sprintf("after %s: %s%s for %s", s.Quiet.Round(100*time.Millisecond), s.Fault, t, s.Hold.Round(100*time.Millisecond))
}

// Plan draws the fault schedule from seed: the same seed and faults give
// the same steps, so a failing run can be replayed. It plans more steps
// than fit in duration; the run stops at its deadline.
func Plan(seed uint64, faults []Fault, duration time.Duration) []Step {
	rng := rand.New(rand.NewPCG(seed, 0x6e656d65736973)) // "nemesis"
	between := func(lo, hi time.Duration) time.Duration {
		return lo + time.Duration(rng.Int64N(int64(hi-lo)))
	}
	// A step takes at least its quiet time plus its hold, 3 s at least.
	n := int(duration/(3*time.Second)) + 1
	steps := make([]Step, 0, n)
	for range n {
		s := Step{Fault: faults[rng.IntN(len(faults))], Target: Follower}
		if rng.IntN(2) == 0 {
			s.Target = Leader
		}
		s.Quiet = between(2*time.Second, 6*time.Second)
		switch s.Fault {
		case KillAll:
			s.Hold = between(500*time.Millisecond, 3*time.Second)
		case PartitionLeader, PartitionMinority, PartitionBridge:
			s.Hold = between(3*time.Second, 12*time.Second)
		default:
			s.Hold = between(time.Second, 8*time.Second)
		}
		steps = append(steps, s)
	}
	return steps
}
