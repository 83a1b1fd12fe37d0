package fsm

import (
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/arbordb/arbor/fsm/rules"
	"github.com/arbordb/arbor/fsm/tree"
)

// Access is who a request acts as when the security rules judge it (SPEC
// §8). A nil *Access is an admin: rules are not consulted.
type Access struct {
	// Auth is the rules' `auth` variable: nil for an unauthenticated
	// request, else JSON-decoded values (map[string]any, string, float64…).
	Auth any
	// AuthJSON, when not nil, is Auth already encoded as JSON (a verified
	// token's, encoded once per token), so a write need not encode it.
	AuthJSON []byte
	// OpenIfUnset makes the default rules, before any were set, open
	// instead of closed (the --dev node's promise, carried in the entry so
	// that every replica judges alike).
	OpenIfUnset bool
	// Now is `now` for a read, in milliseconds since the epoch; a write
	// uses its Command.Now.
	Now int64
	// Query is a read's query, for `query.*` in .read rules.
	Query *rules.Query
}

// ErrDenied is the rules' refusal as the client sees it.
var ErrDenied = tree.Public(ErrPermissionDenied, tree.MsgPermission)

// CmdSetRules replaces the security rules with Body, their source text
// (SPEC §8). Only admins may propose it.
const CmdSetRules CommandKind = 8

// CmdAs wraps another command's entry with the Access it is judged as:
// Apply applies the inner command only if the rules in force at that
// point of the log allow it. An entry of this kind carries, after the
// usual version, kind and flags bytes, the auth as JSON and then the inner
// entry whole.
const CmdAs CommandKind = 9

// asOpenIfUnset is CmdAs's flag for Access.OpenIfUnset.
const asOpenIfUnset = 1

// wrapAs returns inner, the encoding of a command, as the entry of a CmdAs
// made by a.
func wrapAs(a *Access, inner []byte) []byte {
	auth := a.AuthJSON
	if auth == nil {
		var err error
		if auth, err = json.Marshal(a.Auth); err != nil {
			// Auth comes from JSON (a verified token's claims, an
			// override), so it always encodes; null is the safe reading
			// otherwise.
			auth = []byte("null")
		}
	}
	buf := make([]byte, 0, 3+binary.MaxVarintLen64+len(auth)+len(inner))
	var flags byte
	if a.OpenIfUnset {
		flags |= asOpenIfUnset
	}
	buf = append(buf, byte(CmdAs.EntryFormat()), byte(CmdAs), flags)
	buf = appendBytes(buf, auth)
	return append(buf, inner...)
}

// decodeAs reads a CmdAs entry: its Access and the inner command.
func decodeAs(b []byte) (Command, error) {
	d := decoder{b: b[3:]}
	auth := d.bytes()
	if d.err != nil {
		return Command{}, fmt.Errorf("decode command: as: %w", d.err)
	}
	a := &Access{OpenIfUnset: b[2]&asOpenIfUnset != 0}
	var err error
	if a.Auth, err = authCache.decode(auth); err != nil {
		return Command{}, fmt.Errorf("decode command: as: auth: %v: %w", err, tree.ErrInvalidData)
	}
	if k, err := EntryKind(d.b); err != nil || k == CmdAs || k == CmdChunk {
		return Command{}, fmt.Errorf("decode command: as: inner entry of kind %d: %w", k, tree.ErrInvalidData)
	}
	c, err := DecodeCommand(d.b)
	if err != nil {
		return Command{}, err
	}
	c.As = a
	return c, nil
}

// env is the rules' view of a judgement on s.
func (a *Access) env(s *state, now int64) *rules.Env {
	return &rules.Env{Auth: a.Auth, Now: now, Root: ruleValue(s.root), Query: a.Query}
}

// ReadAs returns the value at p as a reader with access a sees it: the
// value, or ErrDenied when the rules in force do not let a read p (nil a
// is an admin). The check and the read see the same state.
func (f *FSM) ReadAs(p tree.Path, a *Access) (ReadResult, error) {
	s := f.cur.Load()
	if a != nil && !s.rulesFor(a).CanRead(p, a.env(s, a.Now)) {
		return ReadResult{Index: s.index, Rules: s.rulesInForce()}, ErrDenied
	}
	return ReadResult{Value: s.root.Get(p), Index: s.index, Rules: s.rulesInForce(), Indexes: s.indexes}, nil
}

// Judge reports whether the rules in force now would let c be applied: it
// applies c to the current state without keeping the result and returns
// ErrDenied if the rules refuse it, nil otherwise — also when c would
// fail for another reason, which Apply reports. A refusal here is only as
// certain as the state is fresh; callers that want to refuse early do so
// on a state that is up to date with the log, and Apply judges again. A
// plain Set that the rules allow on what can be known without applying it
// is allowed without copying the tree (allowedWithoutApply).
func (f *FSM) Judge(c Command) error {
	if c.As == nil {
		return nil
	}
	cur := f.cur.Load()
	if allowedWithoutApply(cur, &c) {
		return nil
	}
	s := cur.clone()
	s.chunks = nil
	// The judged state is thrown away: keeping its indexes would be wasted
	// work (and would copy-on-write trees Apply is copying too).
	s.indexes = nil
	_, _, _, err := applyCommand(s, &c)
	if isDenied(err) {
		return ErrDenied
	}
	return nil
}

// judgeWrite decides whether the write c, which took the state from s to
// next with result res, passes the rules in force in s.
func judgeWrite(s, next *state, c *Command, res Result) error {
	env := c.As.env(s, c.Now)
	env.NewRoot = ruleValue(next.root)
	if s.rulesFor(c.As).CanWrite(writtenPaths(c, res), env) {
		return nil
	}
	return ErrDenied
}

// writtenPaths are the locations c changed: its node path, the pushed
// child for a Push, one path per field for an Update.
func writtenPaths(c *Command, res Result) [][]string {
	base := c.Path.NodePath()
	switch {
	case c.Kind == CmdPush:
		return [][]string{append(append([]string{}, base...), res.Name)}
	case c.Kind == CmdUpdate && res.Fields != nil:
		out := make([][]string, len(res.Fields))
		for i, f := range res.Fields {
			out[i] = append(append([]string{}, base...), f.Path.NodePath()...)
		}
		return out
	}
	return [][]string{base}
}

// judgePrecondition turns a failed if-match of a judged write into a
// refusal unless the writer could both make the write and read the value
// the 412 would show: a mismatch must not reveal data the rules hide.
func judgePrecondition(s *state, c *Command, perr error) error {
	unconditional := *c
	unconditional.HasIfMatch, unconditional.IfMatch = false, ""
	next := s.clone()
	res, _, err := applyKind(next, &unconditional)
	if err != nil || judgeWrite(s, next, &unconditional, res) != nil {
		return ErrDenied
	}
	if !s.rulesFor(c.As).CanRead(c.Path.NodePath(), c.As.env(s, c.Now)) {
		return ErrDenied
	}
	return perr
}

// AnswerKind is the plain kind whose answer an encoded entry gets: the
// wrapped command's for a CmdAs, the entry's own otherwise.
func AnswerKind(b []byte) CommandKind {
	k, err := EntryKind(b)
	if err != nil || k != CmdAs {
		return k.PlainKind()
	}
	d := decoder{b: b[3:]}
	d.bytes()
	if d.err != nil {
		return k
	}
	inner, err := EntryKind(d.b)
	if err != nil {
		return k
	}
	return inner.PlainKind()
}
