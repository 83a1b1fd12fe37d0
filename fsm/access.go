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

// CmdAsPrejudged is a CmdAs whose write the node that
// took it judged allowed whatever the stored data, under the rules of the
// version the entry names in place of the auth (Command.Prejudged). Apply
// applies it only if those rules are still in force at its place in the
// log, and refuses it otherwise with ErrRulesChanged (the proposer judges
// it again and retries): the verdict then is the one judging would give,
// so no replica judges, and the entry carries no auth — which made a
// user's profile write five times larger and cost the three nodes about
// 15 µs more CPU per write (docs/PERFORMANCE.md).
const CmdAsPrejudged CommandKind = 10

// asOpenIfUnset is CmdAs's flag for Access.OpenIfUnset.
const asOpenIfUnset = 1

// wrapAs returns inner, the encoding of c, as the entry of a CmdAs made
// by c.As, or of a CmdAsPrejudged when c.Prejudged.
func wrapAs(c *Command, inner []byte) []byte {
	a := c.As
	var flags byte
	if a.OpenIfUnset {
		flags |= asOpenIfUnset
	}
	if c.Prejudged {
		buf := make([]byte, 0, 3+binary.MaxVarintLen64+len(inner))
		buf = append(buf, byte(CmdAsPrejudged.EntryFormat()), byte(CmdAsPrejudged), flags)
		buf = binary.AppendUvarint(buf, c.PrejudgedRules)
		return append(buf, inner...)
	}
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
	buf = append(buf, byte(CmdAs.EntryFormat()), byte(CmdAs), flags)
	buf = appendBytes(buf, auth)
	return append(buf, inner...)
}

// asParts splits a CmdAs entry (the auth JSON, then the inner entry) or a
// CmdAsPrejudged one (the rules version, then the inner entry).
func asParts(b []byte) (auth []byte, prejudged bool, rulesIndex uint64, inner []byte, err error) {
	d := decoder{b: b[3:]}
	if CommandKind(b[1]) == CmdAsPrejudged {
		prejudged, rulesIndex = true, d.uvarint()
	} else {
		auth = d.bytes()
	}
	if d.err != nil {
		return nil, false, 0, nil, d.err
	}
	return auth, prejudged, rulesIndex, d.b, nil
}

// decodeAs reads a CmdAs or CmdAsPrejudged entry: its Access and the
// inner command.
func decodeAs(b []byte, auths *decodedAuths) (Command, error) {
	auth, prejudged, rulesIndex, inner, err := asParts(b)
	if err != nil {
		return Command{}, fmt.Errorf("decode command: as: %w", err)
	}
	a := &Access{OpenIfUnset: b[2]&asOpenIfUnset != 0}
	if !prejudged {
		if a.Auth, err = auths.decode(auth); err != nil {
			return Command{}, fmt.Errorf("decode command: as: auth: %v: %w", err, tree.ErrInvalidData)
		}
	}
	if k, err := EntryKind(inner); err != nil || k == CmdAs || k == CmdAsPrejudged {
		return Command{}, fmt.Errorf("decode command: as: inner entry of kind %d: %w", k, tree.ErrInvalidData)
	}
	c, err := DecodeCommand(inner)
	if err != nil {
		return Command{}, err
	}
	c.As, c.Prejudged, c.PrejudgedRules = a, prejudged, rulesIndex
	return c, nil
}

// env is the rules' view of a judgement on s.
func (a *Access) env(s *state, now int64) *rules.Env {
	return &rules.Env{Auth: a.Auth, Now: now, Root: ruleValue(s.root), Query: a.Query}
}

// ReadAs returns the value at r.Path as a reader with r.Access sees it:
// the value, or ErrDenied when the rules in force do not let it read there
// (nil Access is an admin). The check and the read see the same state.
// With r.Watch, the result also tells whether the verdict is fixed
// (ReadResult.AccessFixed).
func (f *FSM) ReadAs(r Read) (ReadResult, error) {
	s := f.cur.Load()
	res := ReadResult{Index: s.index, Rules: s.rulesInForce(), AccessFixed: r.Access == nil}
	if r.Access != nil {
		allowed, fixed := canRead(s, r.Path, r.Access, r.Watch)
		if !allowed {
			return res, ErrDenied
		}
		res.AccessFixed = fixed
	}
	res.Value, res.Indexes = s.root.Get(r.Path), s.indexes
	return res, nil
}

// canRead judges a read of p by a on s. With watch it also reports
// whether the allowed verdict is fixed: the rules read neither stored
// data nor `now`, so under the same rules and auth it holds in every
// state (the probe is the write dry run's, judgeahead.go).
func canRead(s *state, p tree.Path, a *Access, watch bool) (allowed, fixed bool) {
	env := a.env(s, a.Now)
	if !watch {
		return s.rulesFor(a).CanRead(p, env), false
	}
	probe := &overlayProbe{}
	env.Root = probe.watch(s.root)
	env.NowRead = &probe.now
	allowed = s.rulesFor(a).CanRead(p, env)
	return allowed, allowed && !probe.stored && !probe.now
}

// Judge reports whether the rules in force now would let c be applied: it
// applies c to the current state without keeping the result and returns
// ErrDenied if the rules refuse it, nil otherwise — also when c would
// fail for another reason, which Apply reports. A refusal here is only as
// certain as the state is fresh; callers that want to refuse early do so
// on a state that is up to date with the log, and Apply judges again. A
// plain Set that the rules allow on what can be known without applying it
// is allowed without copying the tree (judgeWithoutApply); when that
// verdict holds whatever the stored data, Judge marks c Prejudged under
// the rules in force, so that Apply need not judge it again while they
// stay (fsm/DESIGN.md).
func (f *FSM) Judge(c *Command) error {
	c.Prejudged, c.PrejudgedRules = false, 0
	if c.As == nil {
		return nil
	}
	cur := f.cur.Load()
	if v := judgeWithoutApply(cur, c); v.allowed {
		if v.anyData {
			c.Prejudged, c.PrejudgedRules = true, cur.rulesVersion()
		}
		return nil
	}
	s := cur.clone()
	// The judged state is thrown away: keeping its indexes would be wasted
	// work (and would copy-on-write trees Apply is copying too).
	s.indexes = nil
	_, _, _, err := applyCommand(s, c)
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

// AnswerKind is the kind whose answer an encoded entry gets: the wrapped
// command's for a CmdAs, the entry's own otherwise.
func AnswerKind(b []byte) CommandKind {
	k, err := EntryKind(b)
	if err != nil || (k != CmdAs && k != CmdAsPrejudged) {
		return k
	}
	_, _, _, rest, err := asParts(b)
	if err != nil {
		return k
	}
	inner, err := EntryKind(rest)
	if err != nil {
		return k
	}
	return inner
}
