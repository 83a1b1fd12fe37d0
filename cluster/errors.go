package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/raft"

	"github.com/arbordb/arbor/fsm"
)

// errRetry marks a Raft refusal that left no trace (the request never
// entered the log, or it was a read): the caller waits for the leadership
// picture to change and tries again within its deadline.
var errRetry = errors.New("retry after leadership change")

// raftError maps an error from a Raft future to the fsm sentinels that cross
// the seam to httpapi. op names the operation for the message. idempotent
// says whether the operation may be repeated safely (reads and barriers):
// losing leadership then means retry rather than "outcome unknown".
func raftError(op string, err error, idempotent bool) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress):
		// Refused before entering the log.
		return errRetry
	case errors.Is(err, raft.ErrLeadershipLost), errors.Is(err, raft.ErrAbortedByRestore):
		if idempotent {
			return errRetry
		}
		return fmt.Errorf("%s: leadership lost before the entry committed: %w; %w", op, fsm.ErrNoLeader, fsm.ErrOutcomeUnknown)
	case errors.Is(err, raft.ErrRaftShutdown):
		return fmt.Errorf("%s: %w", op, fsm.ErrShuttingDown)
	case errors.Is(err, raft.ErrEnqueueTimeout):
		return fmt.Errorf("%s: raft did not accept the entry in time: %w", op, fsm.ErrTimeout)
	default:
		return fmt.Errorf("%s: raft: %w", op, err)
	}
}

// deadlineError explains why a bounded wait ended: the write timeout (or
// the caller's deadline) or the caller going away. It wraps sentinel and
// the context's error, so both errors.Is(err, sentinel) and
// errors.Is(err, context.Canceled) work.
func deadlineError(op, what string, sentinel, ctxErr error) error {
	if ctxErr == nil {
		ctxErr = context.DeadlineExceeded
	}
	return fmt.Errorf("%s: %s: %w (%w)", op, what, sentinel, ctxErr)
}

// outcomeUnknown is deadlineError for a write that may have been applied.
func outcomeUnknown(op, what string, sentinel, ctxErr error) error {
	return fmt.Errorf("%w; %w", deadlineError(op, what, sentinel, ctxErr), fsm.ErrOutcomeUnknown)
}

// shuttingDown is the error of any call made while the node stops.
func shuttingDown(op string) error { return fmt.Errorf("%s: %w", op, fsm.ErrShuttingDown) }
