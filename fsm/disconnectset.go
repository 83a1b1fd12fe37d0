package fsm

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/tidwall/btree"

	"github.com/arbordb/arbor/fsm/tree"
)

// disconnectSet is the onDisconnect operations registered, keyed by
// (node, run, session) and, within a session, by registration order. It is
// immutable: every change returns a new set sharing the unchanged part (a
// copy-on-write B-tree), so a state's set stays valid for readers and
// snapshots while Apply goes on. A nil set is empty.
type disconnectSet struct {
	items *btree.BTreeG[registration]
	// seq numbers the registrations; it starts again at 1 when the set
	// is empty, so a replica restored from a snapshot that has none
	// numbers the next ones as the replicas that applied the log do.
	seq uint64
}

// registration is one operation kept for a session.
type registration struct {
	holder Holder
	seq    uint64
	op     *Command
}

func registrationLess(a, b registration) bool {
	if c := cmp.Compare(a.holder.Node, b.holder.Node); c != 0 {
		return c < 0
	}
	if c := cmp.Compare(a.holder.Run, b.holder.Run); c != 0 {
		return c < 0
	}
	if c := cmp.Compare(a.holder.Session, b.holder.Session); c != 0 {
		return c < 0
	}
	return a.seq < b.seq
}

// within reports whether r belongs to h: its session, or with h.Session
// empty any session of h's run.
func (h Holder) within(r registration) bool {
	return r.holder.Node == h.Node && r.holder.Run == h.Run && (h.Session == "" || r.holder.Session == h.Session)
}

// scan calls fn with h's registrations in key order until fn returns false.
func (s *disconnectSet) scan(h Holder, fn func(registration) bool) {
	if s == nil {
		return
	}
	s.items.Ascend(registration{holder: h}, func(r registration) bool {
		return h.within(r) && fn(r)
	})
}

// edit returns a copy of s that may be changed (an empty one for nil).
func (s *disconnectSet) edit() *disconnectSet {
	if s == nil {
		return &disconnectSet{items: btree.NewBTreeG(registrationLess)}
	}
	return &disconnectSet{items: s.items.Copy(), seq: s.seq}
}

// settled is s, or nil when it holds nothing.
func (s *disconnectSet) settled() *disconnectSet {
	if s.items.Len() == 0 {
		return nil
	}
	return s
}

// register returns s with op kept for h's session; a Set first drops the
// session's operations at and below its path, as it would overwrite them.
func (s *disconnectSet) register(h Holder, op *Command) *disconnectSet {
	next := s
	if op.Kind == CmdSet {
		next = s.cancel(h, op.Path)
	}
	next = next.edit()
	next.seq++
	next.items.Set(registration{holder: h, seq: next.seq, op: op})
	return next
}

// cancel returns s without h's session's operations at and below prefix.
func (s *disconnectSet) cancel(h Holder, prefix tree.Path) *disconnectSet {
	var drop []registration
	s.scan(h, func(r registration) bool {
		if r.op.Path.HasPrefix(prefix) {
			drop = append(drop, r)
		}
		return true
	})
	return s.without(drop)
}

// take returns s without the registrations of h and those, in
// registration order.
func (s *disconnectSet) take(h Holder) (*disconnectSet, []registration) {
	var ran []registration
	s.scan(h, func(r registration) bool { ran = append(ran, r); return true })
	slices.SortFunc(ran, func(a, b registration) int { return cmp.Compare(a.seq, b.seq) })
	return s.without(ran), ran
}

// without returns s less drop.
func (s *disconnectSet) without(drop []registration) *disconnectSet {
	if len(drop) == 0 {
		return s
	}
	next := s.edit()
	for _, r := range drop {
		next.items.Delete(r)
	}
	return next.settled()
}

// runs returns the distinct (node, run) pairs of s, in order.
func (s *disconnectSet) runs() []Holder {
	var out []Holder
	if s == nil {
		return nil
	}
	s.items.Scan(func(r registration) bool {
		h := Holder{Node: r.holder.Node, Run: r.holder.Run}
		if len(out) == 0 || out[len(out)-1] != h {
			out = append(out, h)
		}
		return true
	})
	return out
}

// goneFrom returns the sessions that hold operations in s and none in
// next, in key order.
func (s *disconnectSet) goneFrom(next *disconnectSet) []Holder {
	var out []Holder
	if s == nil {
		return nil
	}
	s.items.Scan(func(r registration) bool {
		if (len(out) == 0 || out[len(out)-1] != r.holder) && next.count(r.holder) == 0 {
			out = append(out, r.holder)
		}
		return true
	})
	return out
}

// count is the number of registrations of h.
func (s *disconnectSet) count(h Holder) int {
	n := 0
	s.scan(h, func(registration) bool { n++; return true })
	return n
}

// The snapshot section of the set (snapshot format 2):
//
//	seq(uvarint) count(uvarint) then count × (node, run, session as
//	uvarint-prefixed bytes, seq(uvarint), the operation's entry as
//	uvarint-prefixed bytes), in key order
func (s *disconnectSet) appendTo(buf []byte) []byte {
	if s == nil {
		return append(buf, 0, 0)
	}
	buf = binary.AppendUvarint(buf, s.seq)
	buf = binary.AppendUvarint(buf, uint64(s.items.Len()))
	s.items.Scan(func(r registration) bool {
		buf = appendBytes(buf, []byte(r.holder.Node))
		buf = appendBytes(buf, []byte(r.holder.Run))
		buf = appendBytes(buf, []byte(r.holder.Session))
		buf = binary.AppendUvarint(buf, r.seq)
		buf = appendBytes(buf, r.op.Encode())
		return true
	})
	return buf
}

// readDisconnectSet reads what appendTo wrote and returns the rest of b.
func readDisconnectSet(b []byte) (*disconnectSet, []byte, error) {
	d := decoder{b: b}
	seq := d.uvarint()
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.b)) {
		return nil, nil, fmt.Errorf("read snapshot: onDisconnect operations: truncated: %w", tree.ErrInvalidData)
	}
	s := (*disconnectSet)(nil).edit()
	s.seq = seq
	auths := &decodedAuths{m: map[string]any{}}
	for range n {
		r := registration{holder: Holder{Node: string(d.bytes()), Run: string(d.bytes()), Session: string(d.bytes())}}
		r.seq = d.uvarint()
		entry := d.bytes()
		if d.err != nil {
			return nil, nil, fmt.Errorf("read snapshot: onDisconnect operations: %w", d.err)
		}
		op, err := decodeCommand(entry, auths)
		if err != nil {
			return nil, nil, fmt.Errorf("read snapshot: onDisconnect operation: %w", err)
		}
		reg := Command{Kind: CmdDisconnectRegister, Holder: r.holder, Op: &op}
		if err := checkDisconnect(&reg); err != nil || r.seq == 0 || r.seq > seq {
			return nil, nil, fmt.Errorf("read snapshot: onDisconnect operation %d of %s: %w", r.seq, r.holder.Session, tree.ErrInvalidData)
		}
		r.op = &op
		s.items.Set(r)
	}
	return s.settled(), d.b, nil
}
