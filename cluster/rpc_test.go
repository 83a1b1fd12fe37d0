package cluster

import (
	"errors"
	"fmt"
	"testing"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

func TestRPCResultRoundTrip(t *testing.T) {
	val, err := tree.ParseBody([]byte(`{"a":[1,2.5,"x"],"b":{".value":true,".priority":3},"c":5.0}`), tree.MaxDepth)
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range []fsm.Result{
		{},
		{Value: val, ETag: val.ETag(), Index: 1 << 40},
		{Value: tree.String("s"), Name: "-Nabcdefghijklmnopqr", Index: 3},
		{Fields: []tree.Field{{Path: mustPath("/a/b"), Value: tree.Int(1)}, {Path: mustPath("/c")}}, Index: 9},
		{Fields: []tree.Field{}},
	} {
		r, err := decodeReply(encodeResult(res))
		if err != nil {
			t.Fatalf("decodeReply: %v", err)
		}
		got, err := decodeResult(r)
		if err != nil {
			t.Fatalf("decodeResult: %v", err)
		}
		if !got.Value.Equal(res.Value) || got.Value.ETag() != res.Value.ETag() || got.Name != res.Name ||
			got.ETag != res.ETag || got.Index != res.Index || (got.Fields == nil) != (res.Fields == nil) || len(got.Fields) != len(res.Fields) {
			t.Fatalf("round trip of %+v gave %+v", res, got)
		}
		for i := range res.Fields {
			if got.Fields[i].Path.String() != res.Fields[i].Path.String() || !got.Fields[i].Value.Equal(res.Fields[i].Value) {
				t.Errorf("field %d: %+v, want %+v", i, got.Fields[i], res.Fields[i])
			}
		}
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
	good := encodeResult(fsm.Result{Value: tree.String("x"), Fields: []tree.Field{{Path: mustPath("/a")}}, Name: "n", Index: 7})
	for i := range len(good) {
		r, err := decodeReply(good[:i])
		if err == nil {
			_, err = decodeResult(r)
		}
		if !errors.Is(err, errMalformed) {
			t.Errorf("truncated to %d bytes: %v, want errMalformed", i, err)
		}
	}
	for _, b := range [][]byte{{9}, {replyOK, 1, 0xff, 0xff, 0xff, 0xff, 0x0f}, {replyError}, {replyPrecondition, 1, 3, 'x', 'y', 'z'}} {
		r, err := decodeReply(b)
		if err == nil {
			_, err = decodeResult(r)
		}
		if !errors.Is(err, errMalformed) {
			t.Errorf("%v: %v, want errMalformed", b, err)
		}
	}
}
