package cluster

import (
	"errors"
	"fmt"
	"testing"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

func TestRPCAnswerRoundTrip(t *testing.T) {
	for _, a := range []fsm.Answer{
		{},
		{Body: []byte(`{"a":1}`), ETag: `"abc"`, Index: 1 << 40},
		{ETag: "null_etag", Index: 3},
	} {
		r, err := decodeReply(encodeAnswer(a))
		if err != nil {
			t.Fatalf("decodeReply: %v", err)
		}
		got, err := decodeAnswer(r)
		if err != nil {
			t.Fatalf("decodeAnswer: %v", err)
		}
		if string(got.Body) != string(a.Body) || got.ETag != a.ETag || got.Index != a.Index {
			t.Fatalf("round trip of %+v gave %+v", a, got)
		}
	}
	for _, o := range []fsm.AnswerOptions{{}, {Pretty: true, Export: true}, {Delete: true, Silent: true}} {
		if got, err := decodeAnswerOptions(encodeAnswerOptions(o)); err != nil || got != o {
			t.Errorf("answer options %+v came back as %+v, %v", o, got, err)
		}
	}
	if _, err := decodeAnswerOptions(1 << 7); !errors.Is(err, tree.ErrBadRequest) {
		t.Errorf("unknown answer option bit: %v", err)
	}
}

func TestRPCErrorRoundTrip(t *testing.T) {
	cur := tree.Float(5)
	tests := []struct {
		err      error
		sentinel error
		msg      string
	}{
		{tree.Public(tree.ErrInvalidData, tree.MsgUnknownSV), tree.ErrInvalidData, tree.MsgUnknownSV},
		{fmt.Errorf("propose: %w", tree.Public(tree.ErrTooLarge, tree.MsgWriteTooBig)), tree.ErrTooLarge, tree.MsgWriteTooBig},
		{fmt.Errorf("propose: leadership lost: %w", fsm.ErrNoLeader), fsm.ErrNoLeader, "propose: leadership lost: no leader"},
		{fmt.Errorf("read: %w", fsm.ErrTimeout), fsm.ErrTimeout, "read: timeout"},
		{errors.New("disk on fire"), nil, "disk on fire"},
	}
	for _, tt := range tests {
		_, err := decodeReply(encodeError(tt.err))
		if tt.sentinel != nil && !errors.Is(err, tt.sentinel) {
			t.Errorf("%v came back as %v, which does not match %v", tt.err, err, tt.sentinel)
		}
		if err == nil || err.Error() != tt.msg {
			t.Errorf("%v came back as %q, want %q", tt.err, err, tt.msg)
		}
	}
	_, err := decodeReply(encodeError(&fsm.PreconditionError{Current: cur}))
	var pe *fsm.PreconditionError
	if !errors.As(err, &pe) || !pe.Current.Equal(cur) || pe.Current.ETag() != cur.ETag() || !errors.Is(err, fsm.ErrPreconditionFailed) {
		t.Errorf("precondition came back as %v", err)
	}
	if _, err := decodeReply(encodeError(fmt.Errorf("not the leader: %w", errRetry))); !errors.Is(err, errRetry) {
		t.Errorf("retry came back as %v", err)
	}
}

func TestRPCMalformedReplies(t *testing.T) {
	good := encodeAnswer(fsm.Answer{Body: []byte(`"x"`), ETag: "e", Index: 7})
	for i := range len(good) {
		r, err := decodeReply(good[:i])
		if err == nil {
			_, err = decodeAnswer(r)
		}
		if !errors.Is(err, errMalformed) {
			t.Errorf("truncated to %d bytes: %v, want errMalformed", i, err)
		}
	}
	for _, b := range [][]byte{{9}, {replyOK, 1, 0xff, 0xff, 0xff, 0xff, 0x0f}, {replyError}, {replyPrecondition, 1, 3, 'x', 'y', 'z'}} {
		r, err := decodeReply(b)
		if err == nil {
			_, err = decodeAnswer(r)
		}
		if !errors.Is(err, errMalformed) {
			t.Errorf("%v: %v, want errMalformed", b, err)
		}
	}
}
