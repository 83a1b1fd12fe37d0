package fsm

import (
	"errors"
	"fmt"

	"github.com/arbordb/arbor/fsm/rules"
	"github.com/arbordb/arbor/fsm/tree"
)

// Rules are the security rules in force, part of the replicated state:
// set by a CmdSetRules entry, kept in snapshots, or the default before
// any were set. A Rules value is never changed once made.
type Rules struct {
	// Source is the text as it was set, comments kept (nil: the default).
	Source []byte
	// Set is Source parsed.
	Set *rules.Ruleset
	// Index is the log index of the entry that set them: their version
	// (0: the default).
	Index uint64
}

// IsDefault reports whether no rules were ever set.
func (r *Rules) IsDefault() bool { return r == nil || r.Index == 0 }

// rulesInForce returns the state's rules, nil for the default.
func (s *state) rulesInForce() *Rules { return s.rules }

// rulesVersion is the Index of the rules in force (0: the default).
func (s *state) rulesVersion() uint64 {
	if s.rules == nil {
		return 0
	}
	return s.rules.Index
}

// rulesFor returns the ruleset that judges a: the rules set, or the
// default (closed, or open for a --dev proposer).
func (s *state) rulesFor(a *Access) *rules.Ruleset {
	if s.rules != nil {
		return s.rules.Set
	}
	if a.OpenIfUnset {
		return rules.Open()
	}
	return rules.Closed()
}

// DefaultRules is the rules a node shows before any were set.
func DefaultRules(open bool) *rules.Ruleset {
	if open {
		return rules.Open()
	}
	return rules.Closed()
}

// applySetRules installs the rules in c.Body. The proposer checked them;
// Parse is deterministic, so a replica refuses exactly what every other
// one refuses.
func applySetRules(s *state, c *Command) (Result, []Event, error) {
	if c.As != nil {
		return Result{}, nil, ErrDenied
	}
	set, err := rules.Parse(c.Body)
	if err != nil {
		return Result{}, nil, tree.Public(tree.ErrBadRequest, err.Error())
	}
	src := append([]byte(nil), c.Body...)
	s.rules = &Rules{Source: src, Set: set, Index: ^uint64(0)} // the index is stamped by step
	return Result{}, []Event{{Kind: EventRules}}, nil
}

// stampRules gives rules set by the entry at index their version.
func (s *state) stampRules(index uint64) {
	if s.rules != nil && s.rules.Index == ^uint64(0) {
		r := *s.rules
		r.Index = index
		s.rules = &r
	}
}

// restoreRules rebuilds the rules a snapshot carried.
func restoreRules(src []byte, index uint64) (*Rules, error) {
	set, err := rules.Parse(src)
	if err != nil {
		return nil, fmt.Errorf("read snapshot: rules: %v: %w", err, tree.ErrInvalidData)
	}
	return &Rules{Source: src, Set: set, Index: index}, nil
}

func isDenied(err error) bool { return errors.Is(err, ErrPermissionDenied) }
