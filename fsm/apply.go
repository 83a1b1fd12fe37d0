package fsm

import (
	"errors"
	"fmt"

	"github.com/arbordb/arbor/fsm/tree"
)

// applyEntry computes the state after one command entry (a judged one's
// auth decoded through auths). It never panics on bad input: an entry that
// cannot be decoded or applied leaves the state as it was and returns the
// error to the proposer.
func applyEntry(s *state, data []byte, auths *decodedAuths) (*state, Result, []Event, error) {
	cmd, err := decodeCommand(data, auths)
	if err != nil {
		return s.clone(), Result{}, nil, err
	}
	return applyCommand(s, &cmd)
}

// applyCommand applies a decoded command; one made with an Access (CmdAs)
// only if the rules in force allow it.
func applyCommand(s *state, cmd *Command) (*state, Result, []Event, error) {
	if isDisconnectKind(cmd.Kind) {
		// Judged when registered; its operations are judged as they run.
		return applyDisconnect(s, cmd)
	}
	next := s.clone()
	res, events, err := applyKind(next, cmd)
	if cmd.As != nil && cmd.Kind != CmdSetRules {
		var perr *PreconditionError
		switch {
		case cmd.Prejudged && cmd.PrejudgedRules != s.rulesVersion():
			// Judged by rules replaced since: refused whatever else
			// happened, before anything is applied.
			err = fmt.Errorf("apply: judged by the rules of index %d, now %d: %w", cmd.PrejudgedRules, s.rulesVersion(), ErrRulesChanged)
		case cmd.Prejudged:
			// Allowed whatever the data by these very rules: judging
			// again would give the same verdict (FSM.Judge). A prejudged
			// write has no if-match, so err is not a precondition.
		case errors.As(err, &perr):
			err = judgePrecondition(s, cmd, err)
		case err == nil:
			err = judgeWrite(s, next, cmd, res)
		}
	}
	if err != nil {
		return s.clone(), Result{}, nil, err
	}
	next.indexes = indexesAfter(s, next, cmd, res)
	return next, res, events, nil
}

// applyKind carries out cmd on s in place.
func applyKind(s *state, cmd *Command) (Result, []Event, error) {
	switch cmd.Kind {
	case CmdSet:
		return applySet(s, cmd)
	case CmdUpdate:
		return applyUpdate(s, cmd)
	case CmdPush:
		return applyPush(s, cmd)
	case CmdSetRules:
		return applySetRules(s, cmd)
	}
	return Result{}, nil, fmt.Errorf("apply: command kind %d: %w", cmd.Kind, ErrUnsupportedVersion)
}

func (s *state) clone() *state { c := *s; return &c }

// write is what the tree needs of c to write its value.
func (c *Command) write() tree.Write {
	return tree.Write{Path: c.Path, Now: c.Now, WriteLimit: c.WriteLimit, CheckIncrements: true}
}

func checkIfMatch(root *tree.Node, c *Command) error {
	if !c.HasIfMatch {
		return nil
	}
	cur := root.Get(c.Path.NodePath())
	if cur.ETag() != c.IfMatch {
		return &PreconditionError{Current: cur}
	}
	return nil
}

func applySet(s *state, c *Command) (Result, []Event, error) {
	v := c.Value
	if err := checkIfMatch(s.root, c); err != nil {
		return Result{}, nil, err
	}
	cur := s.root.Get(c.Path)
	if c.Path.IsPriority() {
		cur = s.root.Get(c.Path.NodePath()).Priority()
	}
	if err := tree.CheckIncrements(v, cur); err != nil {
		return Result{}, nil, err
	}
	v = tree.Resolve(v, cur, c.Now)
	if err := tree.CheckWriteLimit(c.WriteLimit, v.Size(), cur.Size()); err != nil {
		return Result{}, nil, err
	}
	root, err := tree.SetValue(s.root, c.Path, v)
	if err != nil {
		return Result{}, nil, err
	}
	s.root = root
	np := c.Path.NodePath()
	after := root.Get(np)
	ev := Event{Kind: EventPut, Path: np, Value: after}
	if !c.Path.IsPriority() {
		ev.Value = v
	}
	return Result{Value: v, ETag: after.ETag()}, []Event{ev}, nil
}

func applyUpdate(s *state, c *Command) (Result, []Event, error) {
	return updateWith(s, c, tree.Update)
}

// updateWith applies the Update c, computing its tree with update (the
// tests' reference passes tree.UpdateInOrder).
func updateWith(s *state, c *Command, update func(*tree.Node, tree.Write, []tree.Field) (*tree.Node, []tree.Field, *tree.Node, error)) (Result, []Event, error) {
	fields := c.Fields
	if fields == nil {
		set := *c
		set.Body, set.Parsed, set.Value = nil, true, nil
		return applySet(s, &set)
	}
	if err := checkIfMatch(s.root, c); err != nil {
		return Result{}, nil, err
	}
	root, resolved, echo, err := update(s.root, c.write(), fields)
	if err != nil {
		return Result{}, nil, err
	}
	s.root = root
	ev := Event{Kind: EventPatch, Path: c.Path, Fields: resolved}
	return Result{Value: echo, Fields: resolved, ETag: root.Get(c.Path).ETag()}, []Event{ev}, nil
}

func applyPush(s *state, c *Command) (Result, []Event, error) {
	if c.Path.IsPriority() {
		return Result{}, nil, tree.Public(tree.ErrInvalidPath, tree.MsgInvalidToken)
	}
	if len(c.Path)+1 > tree.MaxDepth {
		return Result{}, nil, tree.Public(tree.ErrInvalidPath, tree.MsgPathTooLong)
	}
	v := tree.Resolve(c.Value, nil, c.Now)
	if err := tree.CheckWriteLimit(c.WriteLimit, v.Size(), 0); err != nil {
		return Result{}, nil, err
	}
	key := nextPushKey(s, c.Now, c.Rand)
	p := c.Path.Child(key)
	root, err := tree.SetValue(s.root, p, v)
	if err != nil {
		return Result{}, nil, err
	}
	s.root = root
	return Result{Value: v, Name: key, ETag: v.ETag()}, []Event{{Kind: EventPut, Path: p, Value: v}}, nil
}

const pushChars = "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz"

// nextPushKey derives the next push key from the proposer's clock and
// random digits. Keys strictly increase in commit order on every replica:
// when the clock has not moved past the last key's time (same millisecond,
// clock skew between leaders), the last key's random part is incremented.
func nextPushKey(s *state, now int64, rnd [12]byte) string {
	if now <= s.lastPushTime {
		i := 11
		for i >= 0 && s.lastRand[i] == 63 {
			s.lastRand[i] = 0
			i--
		}
		if i >= 0 {
			s.lastRand[i]++
		} else {
			// All 72 bits overflowed: move to the next millisecond instead.
			s.lastPushTime++
			for j := range rnd {
				s.lastRand[j] = rnd[j] & 63
			}
		}
	} else {
		s.lastPushTime = now
		for j := range rnd {
			s.lastRand[j] = rnd[j] & 63
		}
	}
	var key [20]byte
	t := s.lastPushTime
	for i := 7; i >= 0; i-- {
		key[i] = pushChars[t&63]
		t >>= 6
	}
	for i, d := range s.lastRand {
		key[8+i] = pushChars[d]
	}
	return string(key[:])
}
