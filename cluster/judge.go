package cluster

import (
	"context"

	"github.com/arbordb/arbor/fsm"
)

// Judge reports whether the security rules would let c be applied now
// (nil, or fsm.ErrDenied). With fresh, it first waits for a read barrier,
// so the state judged covers every write acknowledged before the call: a
// refusal on that state is the outcome the write would have had, ordered
// at that point of the log, and may be answered without logging anything.
// The write's Apply judges it again unless Judge marked c Prejudged (a
// verdict that holds whatever the data, under rules Apply then checks
// are still in force).
func (n *Node) Judge(ctx context.Context, c *fsm.Command, fresh bool) error {
	if c.As == nil {
		return nil
	}
	if fresh {
		if n.closing.Load() {
			return shuttingDown("judge")
		}
		ctx, cancel := n.bound(ctx)
		defer cancel()
		idx, err := n.readIndex(ctx)
		if err != nil {
			return err
		}
		if err := n.waitApplied(ctx, idx); err != nil {
			return err
		}
	}
	return n.fsm.Judge(c)
}
