package fsm

import (
	"fmt"
	"slices"

	"github.com/arbordb/arbor/fsm/tree"
)

// The onDisconnect commands (entry format 2): the realtime protocol's
// onDisconnect operations kept as replicated state, so that a node's death
// does not take them along (DESIGN.md, "onDisconnect registrations").
const (
	// CmdDisconnectRegister keeps Op for Holder's session, to be made when
	// the session ends. A Set replaces the session's operations at and
	// below its path.
	CmdDisconnectRegister CommandKind = 11
	// CmdDisconnectCancel forgets Holder's session's operations at and
	// below Path.
	CmdDisconnectCancel CommandKind = 12
	// CmdDisconnectRun makes the operations of Holder's session (every
	// session of Holder's node run when Holder.Session is empty) in the
	// order they were registered, with the entry's Now and Rand, and
	// forgets them: running twice runs nothing.
	CmdDisconnectRun CommandKind = 13
)

// Holder names a realtime session where it lives: the node holding its
// connection, the run of that node's process (a fresh id each start), and
// the session's id.
type Holder struct {
	Node, Run, Session string
}

// isDisconnectKind reports whether k is one of the onDisconnect commands.
func isDisconnectKind(k CommandKind) bool {
	return k == CmdDisconnectRegister || k == CmdDisconnectCancel || k == CmdDisconnectRun
}

// appendDisconnect writes the part of an onDisconnect entry after its
// header: the holder, then the registered operation's own entry (empty for
// the other kinds).
func appendDisconnect(buf []byte, c *Command) []byte {
	buf = appendBytes(buf, []byte(c.Holder.Node))
	buf = appendBytes(buf, []byte(c.Holder.Run))
	buf = appendBytes(buf, []byte(c.Holder.Session))
	var op []byte
	if c.Op != nil {
		op = c.Op.Encode()
	}
	return appendBytes(buf, op)
}

// readDisconnect reads what appendDisconnect wrote into c.
func (d *decoder) readDisconnect(c *Command, auths *decodedAuths) {
	c.Holder.Node = string(d.bytes())
	c.Holder.Run = string(d.bytes())
	c.Holder.Session = string(d.bytes())
	op := d.bytes()
	if d.err != nil || c.Kind != CmdDisconnectRegister {
		return
	}
	if k, err := EntryKind(op); err != nil || isDisconnectKind(k) {
		d.failWith("onDisconnect operation of a wrong kind")
		return
	}
	inner, err := decodeCommand(op, auths)
	if err != nil {
		if d.err == nil {
			d.err = fmt.Errorf("onDisconnect operation: %w", err)
		}
		return
	}
	c.Op = &inner
}

// checkDisconnect refuses an onDisconnect command that no proposer of
// this release writes.
func checkDisconnect(c *Command) error {
	h := c.Holder
	if h.Node == "" || h.Run == "" || (h.Session == "" && c.Kind != CmdDisconnectRun) {
		return fmt.Errorf("apply: onDisconnect command without its node, run or session: %w", tree.ErrInvalidData)
	}
	if c.Kind != CmdDisconnectRegister {
		return nil
	}
	if c.Op == nil || (c.Op.Kind != CmdSet && c.Op.Kind != CmdUpdate) || c.Op.Prejudged {
		return fmt.Errorf("apply: an onDisconnect operation is an unjudged set or update: %w", tree.ErrInvalidData)
	}
	return nil
}

// applyDisconnect applies an onDisconnect command to s.
func applyDisconnect(s *state, c *Command) (*state, Result, []Event, error) {
	if err := checkDisconnect(c); err != nil {
		return s.clone(), Result{}, nil, err
	}
	next := s.clone()
	switch c.Kind {
	case CmdDisconnectRegister:
		next.disconnects = s.disconnects.register(c.Holder, c.Op)
	case CmdDisconnectCancel:
		next.disconnects = s.disconnects.cancel(c.Holder, c.Path)
	case CmdDisconnectRun:
		return runDisconnects(next, c)
	}
	return next, Result{}, nil, nil
}

// runDisconnects makes the operations c names on s, each as the write it
// was registered as (judged by the rules in force now, as who registered
// it): one that fails leaves the state as it was and the others go on.
// The sessions whose operations ran are reported by an EventDisconnectsRan,
// so that the node holding one closes its connection if it still lives.
func runDisconnects(s *state, c *Command) (*state, Result, []Event, error) {
	rest, ran := s.disconnects.take(c.Holder)
	s.disconnects = rest
	if len(ran) == 0 {
		return s, Result{}, nil, nil
	}
	var events []Event
	var holders []Holder
	for _, r := range ran {
		if !slices.Contains(holders, r.holder) {
			holders = append(holders, r.holder)
		}
		op := *r.op
		op.Now, op.Rand = c.Now, c.Rand
		after, _, evs, err := applyCommand(s, &op)
		if err != nil {
			continue
		}
		s, events = after, append(events, evs...)
	}
	events = append(oneChange(s.root, events), Event{Kind: EventDisconnectsRan, Holders: holders})
	return s, Result{}, events, nil
}

// oneChange makes the changes of a run entry one event. Every event of an
// entry carries its index, which an SSE stream sends as the event's id:
// a stream resumed from the id of one of several would miss the others.
// The event is a patch, at the deepest path above every change, of each
// topmost changed path to its value after the run; a put of that path
// when it changed itself.
func oneChange(root *tree.Node, events []Event) []Event {
	if len(events) < 2 {
		return events
	}
	var changed []tree.Path
	for _, e := range events {
		if e.Kind == EventPut {
			changed = append(changed, e.Path)
		}
		for _, f := range e.Fields {
			changed = append(changed, append(slices.Clip(e.Path), f.Path...))
		}
	}
	slices.SortFunc(changed, func(a, b tree.Path) int { return slices.Compare(a, b) })
	at := changed[0]
	for _, p := range changed[1:] {
		n := 0
		for n < len(at) && n < len(p) && at[n] == p[n] {
			n++
		}
		at = at[:n]
	}
	if len(changed[0]) == len(at) {
		return []Event{{Kind: EventPut, Path: at, Value: root.Get(at)}}
	}
	var fields []tree.Field
	for _, p := range changed {
		if len(fields) == 0 || !p[len(at):].HasPrefix(fields[len(fields)-1].Path) {
			fields = append(fields, tree.Field{Path: p[len(at):], Value: root.Get(p)})
		}
	}
	return []Event{{Kind: EventPatch, Path: at, Fields: fields}}
}

// DisconnectRuns returns the (node, run) pairs that hold onDisconnect
// operations now (Holder.Session empty), in order: the leader compares
// them with the live members to run the orphans'.
func (f *FSM) DisconnectRuns() []Holder {
	return f.cur.Load().disconnects.runs()
}

// DisconnectsOf returns how many onDisconnect operations h's session holds
// (every session of h's run when h.Session is empty).
func (f *FSM) DisconnectsOf(h Holder) int {
	return f.cur.Load().disconnects.count(h)
}
