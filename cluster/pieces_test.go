package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// pieceEntries is entries of the given data sizes, each filled with a
// pattern of its own so that a piece joined out of order shows.
func pieceEntries(sizes ...int) []*raft.Log {
	out := make([]*raft.Log, len(sizes))
	for i, n := range sizes {
		data := make([]byte, n)
		for j := range data {
			data[j] = byte(i*31 + j*7 + j/pieceSize)
		}
		out[i] = &raft.Log{Index: uint64(10 + i), Term: 3, Type: raft.LogCommand, Data: data,
			Extensions: []byte(fmt.Sprint("ext", i)), AppendedAt: time.Unix(int64(i), 0)}
	}
	return out
}

func clonePieceEntries(entries []*raft.Log) []*raft.Log {
	out := make([]*raft.Log, len(entries))
	for i, l := range entries {
		c := *l
		c.Data = bytes.Clone(l.Data)
		out[i] = &c
	}
	return out
}

func TestPiecesJoinToWhatWasCut(t *testing.T) {
	for _, sizes := range [][]int{
		{},
		{0},
		{1, 2, 3},
		{pieceSize},
		{pieceSize + 1},
		{2 * pieceSize},
		{3*pieceSize + 5, 7, pieceSize - 1, 2*pieceSize + 1},
		{100, 16 << 20, 100},
	} {
		want := pieceEntries(sizes...)
		orig := clonePieceEntries(want)
		cut := cutPieces(want)
		records := 1 // the marker
		for _, n := range sizes {
			records += max(1, (n+pieceSize-1)/pieceSize)
		}
		if len(cut) != records {
			t.Errorf("%v: cut into %d records, want %d", sizes, len(cut), records)
		}
		if cut[0].Index != 0 || cut[0].Type != logPiece {
			t.Errorf("%v: the first record is not the marker: index %d type %d", sizes, cut[0].Index, cut[0].Type)
		}
		for _, r := range cut {
			if len(r.Data) > pieceSize {
				t.Errorf("%v: a record of %d bytes", sizes, len(r.Data))
			}
		}
		got, err := joinPieces(clonePieceEntries(cut))
		if err != nil {
			t.Fatalf("%v: %v", sizes, err)
		}
		if len(got) != len(orig) {
			t.Fatalf("%v: joined into %d entries, want %d", sizes, len(got), len(orig))
		}
		for i := range orig {
			g, w := got[i], orig[i]
			if g.Index != w.Index || g.Term != w.Term || g.Type != w.Type || !bytes.Equal(g.Data, w.Data) ||
				!bytes.Equal(g.Extensions, w.Extensions) || !g.AppendedAt.Equal(w.AppendedAt) {
				t.Errorf("%v: entry %d joined as index %d term %d type %d, %d bytes (equal %t), extensions %q",
					sizes, i, g.Index, g.Term, g.Type, len(g.Data), bytes.Equal(g.Data, w.Data), g.Extensions)
			}
		}
		// Raft's entries are shared with its log cache: cutting must
		// leave them as they were.
		for i := range orig {
			if !bytes.Equal(want[i].Data, orig[i].Data) || want[i].Type != orig[i].Type {
				t.Errorf("%v: cutting changed entry %d", sizes, i)
			}
		}
	}
}

func TestBadPiecesAreRefused(t *testing.T) {
	marker := &raft.Log{Type: logPiece}
	piece := func(index uint64) *raft.Log {
		return &raft.Log{Index: index, Term: 3, Type: logPiece, Data: []byte("p")}
	}
	entry := func(index uint64, term uint64) *raft.Log {
		return &raft.Log{Index: index, Term: term, Type: raft.LogCommand, Data: []byte("e")}
	}
	for name, entries := range map[string][]*raft.Log{
		"a piece last":                 {marker, entry(9, 3), piece(10)},
		"only pieces":                  {marker, piece(10), piece(10)},
		"pieces of two entries":        {marker, piece(10), piece(11), entry(11, 3)},
		"ended by another entry":       {marker, piece(10), entry(11, 3)},
		"ended by another term's":      {marker, piece(10), entry(10, 4)},
		"a piece after a joined entry": {marker, piece(10), entry(10, 3), piece(11)},
	} {
		if _, err := joinPieces(entries); !errors.Is(err, errBadPieces) {
			t.Errorf("%s: %v, want errBadPieces", name, err)
		}
	}
}

// TestOldMembersRefusePieces: a member that does not join pieces (v0.1.0,
// run by Raft itself here) refuses a request with pieces as a whole, as
// if the leader's log did not match its own, and stores nothing of it.
func TestOldMembersRefusePieces(t *testing.T) {
	for _, last := range []uint64{0, 9, 20} {
		_, trans := raft.NewInmemTransport("old")
		logs := raft.NewInmemStore()
		for i := uint64(1); i <= last; i++ {
			if err := logs.StoreLog(&raft.Log{Index: i, Term: 3, Type: raft.LogNoop}); err != nil {
				t.Fatal(err)
			}
		}
		conf := raft.DefaultConfig()
		conf.LocalID = "old"
		conf.HeartbeatTimeout = time.Hour // stays a follower
		conf.ElectionTimeout = time.Hour
		conf.LeaderLeaseTimeout = time.Hour
		conf.Logger = newHCLogger(testLogger(t), "raft")
		snaps := raft.NewInmemSnapshotStore()
		r, err := raft.NewRaft(conf, &raft.MockFSM{}, logs, raft.NewInmemStore(), snaps, trans)
		if err != nil {
			t.Fatal(err)
		}
		entries := cutPieces(pieceEntries(3*pieceSize + 1))
		for _, e := range entries[1:] {
			e.Index = last + 1
			e.Term = 3
		}
		_, client := raft.NewInmemTransport("leader")
		client.Connect("old", trans)
		var resp raft.AppendEntriesResponse
		req := &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("leader"), Addr: []byte("leader")},
			Term: 3, PrevLogEntry: last, PrevLogTerm: 3, Entries: entries}
		if last == 0 {
			req.PrevLogTerm = 0
		}
		if err := client.AppendEntries("old", "old", req, &resp); err != nil {
			t.Fatalf("last index %d: %v", last, err)
		}
		idx, _ := logs.LastIndex()
		if resp.Success || idx != last {
			t.Errorf("last index %d: answered success %t, last index now %d", last, resp.Success, idx)
		}
		if err := r.Shutdown().Error(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLargeEntryCrossesInPieces: through the production transport, an
// entry many pieces long reaches the follower's Raft whole and unchanged,
// whether it was cut (the follower joins pieces) or sent whole (it is not
// known to).
func TestLargeEntryCrossesInPieces(t *testing.T) {
	got := make(chan []*raft.Log, 1)
	leader, follower := tcpPair(t, got)
	for _, takes := range []bool{true, false} {
		leader.piecesWith(func(id raft.ServerID) bool { return id == "n2" && takes })
		sent := pieceEntries(10, 5*pieceSize+3, 20)
		want := clonePieceEntries(sent)
		var resp raft.AppendEntriesResponse
		if err := leader.Transport().AppendEntries("n2", follower.Addr(), &raft.AppendEntriesRequest{Term: 3, Entries: sent}, &resp); err != nil || !resp.Success {
			t.Fatalf("takes pieces %t: AppendEntries: %v, %+v", takes, err, resp)
		}
		entries := <-got
		if len(entries) != len(want) {
			t.Fatalf("takes pieces %t: %d entries arrived, want %d", takes, len(entries), len(want))
		}
		for i, w := range want {
			g := entries[i]
			if g.Index != w.Index || g.Type != w.Type || !bytes.Equal(g.Data, w.Data) || !bytes.Equal(g.Extensions, w.Extensions) {
				t.Errorf("takes pieces %t: entry %d arrived as index %d type %d, %d bytes (equal %t)", takes, i, g.Index, g.Type, len(g.Data), bytes.Equal(g.Data, w.Data))
			}
		}
	}
}

// BenchmarkReceiveLargeEntry is a follower receiving one 16 MiB entry
// through the production transport, whole (as v0.1.0 sends it) and in
// pieces: Raft's decoder makes the whole one cost time and memory
// quadratic in its size.
func BenchmarkReceiveLargeEntry(b *testing.B) {
	for _, takes := range []bool{false, true} {
		b.Run(fmt.Sprintf("pieces=%t", takes), func(b *testing.B) {
			leader, follower := tcpPair(b, nil)
			leader.piecesWith(func(raft.ServerID) bool { return takes })
			entries := pieceEntries(16 << 20)
			b.SetBytes(16 << 20)
			b.ReportAllocs()
			for b.Loop() {
				var resp raft.AppendEntriesResponse
				if err := leader.Transport().AppendEntries("n2", follower.Addr(), &raft.AppendEntriesRequest{Term: 3, Entries: entries}, &resp); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// tcpPair starts two production networks on 127.0.0.1, closed when tb
// ends. The second answers every request with success, handing the
// entries of each AppendEntries to seen first (when not nil).
func tcpPair(tb testing.TB, seen chan<- []*raft.Log) (leader, follower *tcpNetwork) {
	tb.Helper()
	start := func() *tcpNetwork {
		nw, err := newTCPNetwork(Config{RaftAddr: "127.0.0.1:0"}, testLogger(tb))
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { _ = nw.Close() })
		return nw.(*tcpNetwork)
	}
	leader, follower = start(), start()
	stop := make(chan struct{})
	tb.Cleanup(func() { close(stop) })
	go func() {
		for {
			select {
			case rpc := <-follower.Transport().Consumer():
				if req, ok := rpc.Command.(*raft.AppendEntriesRequest); ok && seen != nil {
					seen <- req.Entries
				}
				rpc.Respond(&raft.AppendEntriesResponse{Term: 3, Success: true}, nil)
			case <-stop:
				return
			}
		}
	}()
	return leader, follower
}
