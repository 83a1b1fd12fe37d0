package fsm

import (
	"errors"
	"testing"

	"github.com/arbordb/arbor/fsm/tree"
)

// TestEncodeStampsTheKindsFormat: an entry carries the format its kind
// needs, not CommandVersion, so raising CommandVersion for a new kind
// leaves the old kinds' entries readable by older members (SPEC §9).
func TestEncodeStampsTheKindsFormat(t *testing.T) {
	kinds := CommandKinds()
	if len(kinds) != 9 || kinds[CmdSetRules] != 1 || kinds[CmdAs] != 1 || kinds[CmdAsPrejudged] != 1 ||
		kinds[CmdDisconnectRegister] != 2 || kinds[CmdDisconnectCancel] != 2 || kinds[CmdDisconnectRun] != 2 {
		t.Fatalf("CommandKinds() = %v", kinds)
	}
	delete(kinds, CmdAs) // a wrapper: access_test.go
	delete(kinds, CmdAsPrejudged)
	for kind, format := range kinds {
		if format < 1 || format > CommandVersion {
			t.Errorf("kind %d: format %d outside 1..%d", kind, format, CommandVersion)
		}
		c := Command{Kind: kind, Path: tree.Path{"a"}, Body: []byte(`{}`), Parsed: true, Value: tree.Int(1), Fields: []tree.Field{{Path: tree.Path{"b"}, Value: tree.Int(1)}}}
		if isDisconnectKind(kind) {
			op := Command{Kind: CmdSet, Path: tree.Path{"a"}, Parsed: true, Value: tree.Int(1)}
			c = Command{Kind: kind, Holder: Holder{Node: "n", Run: "r", Session: "s"}, Op: &op}
		}
		b := c.Encode()
		if int(b[0]) != format || CommandKind(b[1]) != kind {
			t.Errorf("kind %d stamped as kind %d format %d, want format %d", kind, b[1], b[0], format)
		}
		if d, err := DecodeCommand(b); err != nil || d.Kind != kind || d.Parsed != (kind == CmdSet || kind == CmdUpdate || kind == CmdPush) {
			t.Errorf("kind %d: decoded as %d (parsed %v): %v", kind, d.Kind, d.Parsed, err)
		}
	}
	kinds[CmdSet] = 99 // the copy is the caller's
	if CmdSet.EntryFormat() != 1 {
		t.Fatal("CommandKinds returned the table itself")
	}
}

// TestDecodeRefusesAKindNewerThanItsFormat: an entry whose kind is
// unknown, or stamped with a format older than the kind, is refused as
// unsupported rather than misread.
func TestDecodeRefusesAKindNewerThanItsFormat(t *testing.T) {
	for _, b := range [][]byte{
		{1, 0, 0},                  // kind 0 was never used
		{1, 200, 0},                // a kind from a newer release
		{1, 7, 0},                  // kind 7 is no kind of format 1
		{CommandVersion + 1, 1, 0}, // a newer format
		{0, 1, 0},                  // format 0 does not exist
	} {
		if _, err := DecodeCommand(b); !errors.Is(err, ErrUnsupportedVersion) {
			t.Errorf("DecodeCommand(%v) = %v, want ErrUnsupportedVersion", b, err)
		}
	}
}
