package realtime

import (
	"context"
	"errors"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

// A write forwarded to a leader that was lost before it answered has an
// unknown outcome: it may or may not have been applied. The SDKs treat a
// failed write as final (the app sees the error and the local value goes
// back), yet resend every unanswered write themselves when their own
// connection drops. So the session does what the SDK would: it proposes
// the write again, to whoever leads next, when applying it twice leaves
// what applying it once does. A set or an update is such a write (its
// server timestamps are fixed in the command); an increment is not, nor
// a transaction's set (its compare would fail against itself), and those
// keep the unavailable answer.

// maxResends bounds how often one write of unknown outcome is proposed
// again; each waits for a leader within the request's deadline.
const maxResends = 3

// proposeResending is judgeAndPropose, proposed again while the outcome
// is unknown and the write may be applied twice.
func (s *session) proposeResending(ctx context.Context, cmd *fsm.Command) (fsm.Answer, error) {
	a, err := s.judgeAndPropose(ctx, cmd)
	for range maxResends {
		if !errors.Is(err, fsm.ErrOutcomeUnknown) || !twiceIsOnce(cmd) || ctx.Err() != nil {
			break
		}
		s.srv.cfg.Logger.Debug("realtime: a write's outcome is unknown; proposing it again", "session", s.id, "path", cmd.Path.NodePath().String(), "err", err)
		a, err = s.judgeAndPropose(ctx, cmd)
	}
	return a, err
}

// twiceIsOnce reports whether applying cmd twice in a row leaves what
// applying it once does: a set or an update without a compare and without
// an increment.
func twiceIsOnce(cmd *fsm.Command) bool {
	if cmd.HasIfMatch || (cmd.Kind != fsm.CmdSet && cmd.Kind != fsm.CmdUpdate) {
		return false
	}
	if hasIncrement(cmd.Value) {
		return false
	}
	for _, f := range cmd.Fields {
		if hasIncrement(f.Value) {
			return false
		}
	}
	return true
}

// hasIncrement reports whether an increment placeholder is in n.
func hasIncrement(n *tree.Node) bool {
	if !n.HasServerValues() {
		return false
	}
	if n.Kind() == tree.KindIncrement {
		return true
	}
	found := false
	n.Each(func(_ string, c *tree.Node) bool {
		found = hasIncrement(c)
		return !found
	})
	return found
}
