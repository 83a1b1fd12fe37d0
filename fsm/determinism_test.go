package fsm

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"

	"github.com/arbordb/arbor/fsm/tree"
)

// randomCommands builds a reproducible mix of every command kind over a
// small key space so writes overlap, delete and re-create.
func randomCommands(seed int64, n int) []Command {
	r := rand.New(rand.NewSource(seed))
	keys := []string{"a", "b", "c", "0", "1", "10", "z"}
	path := func() tree.Path {
		p := tree.Path{}
		for d := r.Intn(4); d > 0; d-- {
			p = append(p, keys[r.Intn(len(keys))])
		}
		return p
	}
	value := func() string {
		switch r.Intn(9) {
		case 0:
			return "null"
		case 1:
			return fmt.Sprint(r.Intn(100))
		case 2:
			return fmt.Sprintf("%d.5", r.Intn(100))
		case 3:
			return `"s` + fmt.Sprint(r.Intn(10)) + `"`
		case 4:
			return `{".sv":{"increment":` + fmt.Sprint(r.Intn(5)) + `}}`
		case 5:
			return `{".sv":"timestamp"}`
		case 6:
			return `[1,null,{"x":true}]`
		case 7:
			return `{".value":"p",".priority":` + fmt.Sprint(r.Intn(3)) + `}`
		}
		return `{"a":{"b":1},"c":false}`
	}
	var out []Command
	for i := 0; i < n; i++ {
		c := Command{Path: path(), Now: 1700000000000 + int64(r.Intn(50)), WriteLimit: int64(r.Intn(2) * 4096)}
		r.Read(c.Rand[:])
		switch r.Intn(3) {
		case 0:
			c.Kind = CmdSet
			c.Body = []byte(value())
			if r.Intn(10) == 0 {
				c.HasIfMatch, c.IfMatch = true, "null_etag"
			}
		case 1:
			c.Kind = CmdUpdate
			c.Body = []byte(`{"` + keys[r.Intn(len(keys))] + `/x":` + value() + `,"q":` + value() + `}`)
		default:
			c.Kind = CmdPush
			c.Body = []byte(value())
		}
		out = append(out, c)
	}
	return out
}

func snapshotBytes(tb testing.TB, f *FSM) []byte {
	tb.Helper()
	var buf bytes.Buffer
	if err := writeSnapshot(&buf, f.cur.Load()); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// withDisconnects interleaves onDisconnect commands with cmds: writes
// registered (as an admin or as a user the default rules refuse) for a
// few sessions of two runs, cancels, and runs of a session or a run.
func withDisconnects(seed int64, cmds []Command) []Command {
	r := rand.New(rand.NewSource(seed))
	holder := func() Holder {
		return Holder{Node: "n1", Run: fmt.Sprint("r", r.Intn(2)), Session: fmt.Sprint("s", r.Intn(3))}
	}
	var out []Command
	for _, c := range cmds {
		out = append(out, c)
		switch r.Intn(8) {
		case 0, 1, 2:
			if c.Kind == CmdPush {
				continue
			}
			op, err := parseCommand(c)
			if err != nil {
				continue
			}
			if r.Intn(4) == 0 {
				op.As = &Access{Auth: map[string]any{"uid": "u"}}
			}
			op.Now = 0
			out = append(out, Command{Kind: CmdDisconnectRegister, Holder: holder(), Op: &op})
		case 3:
			h := holder()
			out = append(out, Command{Kind: CmdDisconnectCancel, Holder: h, Path: c.Path})
		case 4:
			h := holder()
			if r.Intn(2) == 0 {
				h.Session = ""
			}
			run := Command{Kind: CmdDisconnectRun, Holder: h, Now: c.Now + 7}
			r.Read(run.Rand[:])
			out = append(out, run)
		}
	}
	return out
}

// TestDeterminism feeds the same random commands to a fresh FSM and to one
// restored from a snapshot taken half-way; their snapshots must be identical.
func TestDeterminism(t *testing.T) {
	withRegistrations := 0
	for seed := int64(1); seed <= 20; seed++ {
		cmds := withDisconnects(seed, randomCommands(seed, 400))
		a := newTestFSM()
		var b *testFSM
		for i, c := range cmds {
			if i == len(cmds)/2 {
				b = newTestFSM()
				snap := snapshotBytes(t, a.FSM)
				if snap[len(snapshotMagic)] == 2 {
					withRegistrations++
				}
				st, err := readSnapshot(bytes.NewReader(snap))
				if err != nil {
					t.Fatalf("seed %d: restore: %v", seed, err)
				}
				b.publish(st, nil)
				b.index = a.index
				if !bytes.Equal(snapshotBytes(t, b.FSM), snap) {
					t.Fatalf("seed %d: restored snapshot differs", seed)
				}
			}
			ra, erra := a.apply(c)
			if b != nil {
				rb, errb := b.apply(c)
				if fmt.Sprint(erra) != fmt.Sprint(errb) || ra.Name != rb.Name || ra.ETag != rb.ETag {
					t.Fatalf("seed %d cmd %d: results differ: %v/%v %q/%q", seed, i, erra, errb, ra.Name, rb.Name)
				}
			}
		}
		if !bytes.Equal(snapshotBytes(t, a.FSM), snapshotBytes(t, b.FSM)) {
			t.Fatalf("seed %d: final snapshots differ", seed)
		}
		if a.Root().ETag() != b.Root().ETag() {
			t.Fatalf("seed %d: root ETags differ", seed)
		}
	}
	if withRegistrations == 0 {
		t.Fatal("no half-way snapshot held onDisconnect operations")
	}
}

func TestSnapshotRoundTripThroughRaftInterfaces(t *testing.T) {
	a := newTestFSM()
	for _, c := range randomCommands(99, 300) {
		a.apply(c)
	}
	snap, err := a.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	b := New()
	if err := b.Restore(sink.reader()); err != nil {
		t.Fatal(err)
	}
	if b.AppliedIndex() != a.AppliedIndex() || b.Root().ETag() != a.Root().ETag() {
		t.Fatalf("restored index %d etag %s, want %d %s", b.AppliedIndex(), b.Root().ETag(), a.AppliedIndex(), a.Root().ETag())
	}
	// A damaged snapshot is refused and leaves the state alone.
	data := sink.Bytes()
	data[len(data)/2] ^= 0xff
	c := New()
	if err := c.Restore(bytes.NewReader(data)); err == nil {
		t.Fatal("corrupted snapshot restored")
	}
}
