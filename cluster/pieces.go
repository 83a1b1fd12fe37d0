package cluster

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// Raft's network transport decodes an entry's bytes pieceSize at a time,
// copying everything read so far at each step, so receiving an entry costs
// time and memory quadratic in its size: a 16 MiB write made every
// follower allocate and copy 520 MB, more than all the rest of its work on
// that write. An entry larger than pieceSize therefore crosses the wire as
// pieces: the sender cuts it into log records of at most pieceSize bytes
// (each decoded in one allocation), and the receiver joins them back
// before Raft sees the request. Raft's log, the replication protocol and
// the state machine still see one entry, stored and applied once.
//
// A request with pieces starts with a marker record of index 0. Pieces go
// only to members gossip says join them, but gossip can lag behind a
// member restarted on v0.1.0: Raft there looks up the stored entry of a
// first record at or below its last index, finds none for index 0 and
// refuses the whole request, where it would otherwise store the pieces as
// entries.

// pieceSize is the most go-msgpack allocates up front for a byte string
// it decodes from a stream.
const pieceSize = 256 << 10

// logPiece is the type of every record of a cut entry but its last, which
// keeps the entry's own type, extensions and time. Raft's own log types
// are 0 to 5.
const logPiece raft.LogType = 0xA7

// piecesSinceEntryFormat: members advertising entry format 2 or newer
// join pieces. v0.1.0 (format 1) would store them as entries of their own,
// so it is sent entries whole, as is a member gossip does not know.
const piecesSinceEntryFormat = 2

// errBadPieces refuses an AppendEntries request whose pieces do not join
// into entries: it is answered with an error and Raft never sees it.
var errBadPieces = errors.New("append entries: entry pieces do not join up")

// pieceTransport is Raft's network transport with large entries sent in
// pieces and joined on receipt.
type pieceTransport struct {
	*raft.NetworkTransport
	// takesPieces, once set, says whether the member of that id joins
	// pieces.
	takesPieces atomic.Pointer[func(raft.ServerID) bool]
	out         chan raft.RPC
	stop        chan struct{}
	once        sync.Once
}

func newPieceTransport(t *raft.NetworkTransport) *pieceTransport {
	p := &pieceTransport{NetworkTransport: t, out: make(chan raft.RPC), stop: make(chan struct{})}
	go p.run()
	return p
}

// Consumer implements raft.Transport: the requests that reach Raft, their
// entries joined.
func (p *pieceTransport) Consumer() <-chan raft.RPC { return p.out }

func (p *pieceTransport) run() {
	in := p.NetworkTransport.Consumer()
	for {
		select {
		case rpc := <-in:
			if req, ok := rpc.Command.(*raft.AppendEntriesRequest); ok {
				joined, err := joinPieces(req.Entries)
				if err != nil {
					rpc.Respond(nil, err)
					continue
				}
				req.Entries = joined
			}
			select {
			case p.out <- rpc:
			case <-p.stop:
				return
			}
		case <-p.stop:
			return
		}
	}
}

// AppendEntries implements raft.Transport, cutting large entries into
// pieces for a member that joins them. args is not changed: its entries
// are Raft's own, shared with its log cache.
func (p *pieceTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	if f := p.takesPieces.Load(); f != nil && hasLargeEntry(args.Entries) && (*f)(id) {
		cut := *args
		cut.Entries = cutPieces(args.Entries)
		args = &cut
	}
	return p.NetworkTransport.AppendEntries(id, target, args, resp)
}

// AppendEntriesPipeline implements raft.Transport: no pipeline, which
// would send entries whole (replication is one RPC at a time anyway,
// raftMaxRPCsInFlight).
func (p *pieceTransport) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	return nil, raft.ErrPipelineReplicationNotSupported
}

// Close implements raft.WithClose: it stops joining, then the transport.
func (p *pieceTransport) Close() error {
	p.once.Do(func() { close(p.stop) })
	return p.NetworkTransport.Close()
}

func hasLargeEntry(entries []*raft.Log) bool {
	for _, l := range entries {
		if len(l.Data) > pieceSize {
			return true
		}
	}
	return false
}

// cutPieces returns entries with each one over pieceSize replaced by its
// pieces: records of type logPiece and the entry's index and term, then
// one with the rest of its data and everything else of the entry; all
// after the marker.
func cutPieces(entries []*raft.Log) []*raft.Log {
	out := make([]*raft.Log, 1, len(entries)+1)
	out[0] = &raft.Log{Type: logPiece}
	for _, l := range entries {
		data := l.Data
		for len(data) > pieceSize {
			out = append(out, &raft.Log{Index: l.Index, Term: l.Term, Type: logPiece, Data: data[:pieceSize]})
			data = data[pieceSize:]
		}
		last := *l
		last.Data = data
		out = append(out, &last)
	}
	return out
}

// joinPieces undoes cutPieces, in place: it drops the marker, and each
// run of pieces and the record after it, all of one index and term,
// become that record with the run's data in front of its own. Entries
// without the marker are returned as they are.
func joinPieces(entries []*raft.Log) ([]*raft.Log, error) {
	if len(entries) == 0 || entries[0].Type != logPiece || entries[0].Index != 0 {
		return entries, nil
	}
	entries = entries[1:]
	out := entries[:0]
	for i := 0; i < len(entries); i++ {
		first := entries[i]
		size, j := 0, i
		for ; j < len(entries) && entries[j].Type == logPiece; j++ {
			if entries[j].Index != first.Index || entries[j].Term != first.Term {
				return nil, fmt.Errorf("%w: entry %d has a piece of entry %d", errBadPieces, first.Index, entries[j].Index)
			}
			size += len(entries[j].Data)
		}
		if j == len(entries) {
			return nil, fmt.Errorf("%w: entry %d ends without its last record", errBadPieces, first.Index)
		}
		last := entries[j]
		if j > i {
			if last.Index != first.Index || last.Term != first.Term {
				return nil, fmt.Errorf("%w: entry %d ends with a record of entry %d", errBadPieces, first.Index, last.Index)
			}
			data := make([]byte, 0, size+len(last.Data))
			for _, piece := range entries[i:j] {
				data = append(data, piece.Data...)
			}
			last.Data = append(data, last.Data...)
		}
		out = append(out, last)
		i = j
	}
	return out, nil
}
