package realtime

import (
	"errors"
	"fmt"
	"strings"

	"github.com/arbordb/arbor/fsm/tree"
)

// errNoDisconnects answers onDisconnect requests when the node has no
// Disconnects to keep them.
var errNoDisconnects = errors.New("onDisconnect operations are not available on this node")

// onDisconnect serves o (set) and om (update): the write is built and
// judged by the rules now, as Firebase does, and kept by Disconnects to
// be made when the connection ends.
func (s *session) onDisconnect(rq request) {
	var b writeBody
	if err := decodeBody(rq, &b); err != nil {
		s.fail(rq, err)
		return
	}
	cmd, err := s.command(rq.action == "om", b)
	if err != nil {
		s.fail(rq, err)
		return
	}
	reg := s.srv.deps.Disconnects
	if reg == nil {
		s.fail(rq, errNoDisconnects)
		return
	}
	key := disconnectKey(cmd.Path)
	if _, again := s.disconnects[key]; !again && len(s.disconnects) >= s.srv.cfg.MaxDisconnects {
		s.respond(rq, statusTooBig, appendString(nil, fmt.Sprintf("too many onDisconnect operations on one connection (at most %d)", s.srv.cfg.MaxDisconnects)))
		return
	}
	ctx, cancel := s.requestContext()
	defer cancel()
	if err := s.judge(ctx, &cmd, false); err != nil {
		s.fail(rq, err)
		return
	}
	// The verdict was for the rules in force now; the write is judged
	// again when it runs, by the rules in force then.
	cmd.Prejudged, cmd.PrejudgedRules = false, 0
	// Before the outcome is known: a registration whose answer was lost
	// may still be in the log, and must run when the connection ends.
	s.registered.Store(true)
	if err := reg.Register(ctx, s.id, cmd); err != nil {
		s.fail(rq, err)
		return
	}
	s.disconnects[key] = struct{}{}
	s.ok(rq, nil)
}

// cancelOnDisconnect serves oc: the operations at the path and below it
// are forgotten.
func (s *session) cancelOnDisconnect(rq request) {
	var b writeBody
	if err := decodeBody(rq, &b); err != nil {
		s.fail(rq, err)
		return
	}
	path, err := parsePath(b.P)
	if err != nil {
		s.fail(rq, err)
		return
	}
	reg := s.srv.deps.Disconnects
	if reg == nil {
		s.fail(rq, errNoDisconnects)
		return
	}
	if !s.registered.Load() {
		s.ok(rq, nil) // nothing to forget: no log entry for it
		return
	}
	ctx, cancel := s.requestContext()
	defer cancel()
	if err := reg.Cancel(ctx, s.id, path); err != nil {
		s.fail(rq, err)
		return
	}
	prefix := disconnectKey(path)
	for k := range s.disconnects {
		if k == prefix || strings.HasPrefix(k, prefix+"/") || prefix == "" {
			delete(s.disconnects, k)
		}
	}
	s.ok(rq, nil)
}

// disconnectKey is a path as the key of the session's count of
// onDisconnect paths ("" for the root).
func disconnectKey(p tree.Path) string { return strings.Join(p, "/") }
