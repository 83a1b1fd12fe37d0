package cluster

import (
	"context"
	"errors"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

// TestForwardLostReplyIsOutcomeUnknown: when the connection to the leader
// breaks after a follower forwarded a write, the write may have been
// applied — here it was — and the follower says so
// (fsm.ErrOutcomeUnknown, with fsm.ErrNoLeader), not only "no leader".
func TestForwardLostReplyIsOutcomeUnknown(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	leader := c.waitLeader()
	f := c.follower(leader)

	c.net.loseReplies.Store(true)
	_, err := f.Propose(context.Background(), set("/x", `"sent"`), fsm.AnswerOptions{})
	c.net.loseReplies.Store(false)
	if !errors.Is(err, fsm.ErrOutcomeUnknown) || !errors.Is(err, fsm.ErrNoLeader) {
		t.Fatalf("forwarded write whose reply was lost: %v, want fsm.ErrOutcomeUnknown and fsm.ErrNoLeader", err)
	}
	if got := readJSON(t, leader, "/x", true); got != `"sent"` {
		t.Fatalf("the leader holds %s: the test did not lose the reply of an applied write", got)
	}
}

// TestRPCOutcomeUnknownRoundTrip: a leader's error that leaves the outcome
// open crosses to the follower still saying so, with its sentinel and
// message; the mark is one byte after the reply older releases read, and
// a reply without it is not outcome-unknown.
func TestRPCOutcomeUnknownRoundTrip(t *testing.T) {
	unknown := outcomeUnknown("propose", "entry not committed in time", fsm.ErrTimeout, context.DeadlineExceeded)
	wire := encodeError(unknown)
	_, err := decodeReply(wire)
	if !errors.Is(err, fsm.ErrOutcomeUnknown) || !errors.Is(err, fsm.ErrTimeout) || err.Error() != unknown.Error() {
		t.Errorf("%v came back as %v", unknown, err)
	}
	plain := deadlineError("propose", "entry not committed in time", fsm.ErrTimeout, context.DeadlineExceeded)
	if old := encodeError(&tree.PublicError{Sentinel: fsm.ErrTimeout, Message: unknown.Error()}); string(wire) != string(old)+string(replyOutcomeUnknown) {
		t.Errorf("marked reply %q, unmarked %q: want the mark after it", wire, old)
	}
	if _, err := decodeReply(encodeError(plain)); errors.Is(err, fsm.ErrOutcomeUnknown) || !errors.Is(err, fsm.ErrTimeout) {
		t.Errorf("%v came back as %v", plain, err)
	}
	lost := raftError("propose", raft.ErrLeadershipLost, false)
	if _, err := decodeReply(encodeError(lost)); !errors.Is(err, fsm.ErrOutcomeUnknown) || !errors.Is(err, fsm.ErrNoLeader) {
		t.Errorf("leadership lost mid-commit came back as %v", err)
	}
}
