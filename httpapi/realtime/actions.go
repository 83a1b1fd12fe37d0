package realtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

// handle serves one request; every error becomes its answer's status.
func (s *session) handle(rq request) {
	if s.registered.Load() && (s.cutOff.Load() || s.srv.outOfTouch()) {
		s.fence()
		return
	}
	if rq.tooBig {
		s.fail(rq, tree.Public(tree.ErrTooLarge, fmt.Sprintf("the message is over %d bytes", s.srv.cfg.MaxMessageBytes)))
		return
	}
	switch rq.action {
	case "s": // stats: nothing to keep
		s.ok(rq, nil)
	case "auth":
		s.authenticate(rq, false)
	case "gauth":
		s.authenticate(rq, true)
	case "unauth":
		s.unauthenticate(rq)
	case "appcheck", "unappeck", "unappcheck":
		// App Check is not enforced: its token is accepted and unused.
		s.ok(rq, nil)
	case "q":
		s.listen(rq)
	case "n":
		s.unlisten(rq)
	case "p", "m":
		s.write(rq)
	case "g":
		s.get(rq)
	case "o", "om":
		s.onDisconnect(rq)
	case "oc":
		s.cancelOnDisconnect(rq)
	default:
		s.fail(rq, tree.Public(tree.ErrBadRequest, fmt.Sprintf("unknown action %q", rq.action)))
	}
}

// decodeBody reads rq's body into v (an absent body is empty).
func decodeBody(rq request, v any) error {
	body := rq.body
	if body == nil {
		body = []byte("{}")
	}
	if err := json.Unmarshal(body, v); err != nil {
		return tree.Public(tree.ErrBadRequest, fmt.Sprintf("malformed body of %q: %v", rq.action, err))
	}
	return nil
}

// parsePath reads a request's path ("/a/b", "a/b" or "" for the root).
func parsePath(p string) (tree.Path, error) {
	path, err := tree.SplitPath(p)
	if err != nil {
		return nil, fmt.Errorf("path %q: %w", p, err)
	}
	return path, nil
}

// writeBody is the body of p, m, o and om.
type writeBody struct {
	P string          `json:"p"`
	D json.RawMessage `json:"d"`
	// H, on a set, is the hash the client's copy of the data has: the
	// set is made only if the stored data still hashes so (transactions).
	H *string `json:"h"`
}

// errPriorityPath is a merge aimed at a priority, which only a set may
// change.
var errPriorityPath = tree.Public(tree.ErrInvalidPath, tree.MsgInvalidToken)

// write serves p (set, or remove with null) and m (multi-path update),
// as a PUT and a PATCH are made over REST.
func (s *session) write(rq request) {
	var b writeBody
	if err := decodeBody(rq, &b); err != nil {
		s.fail(rq, err)
		return
	}
	cmd, err := s.command(rq.action == "m", b)
	if err != nil {
		s.fail(rq, err)
		return
	}
	ctx, cancel := s.requestContext()
	defer cancel()
	if b.H != nil && rq.action == "p" {
		if err := s.compareHash(ctx, &cmd, *b.H); err != nil {
			s.failWrite(ctx, rq, cmd.Path.NodePath(), err)
			return
		}
	}
	a, err := s.proposeResending(ctx, &cmd)
	if err != nil {
		s.failWrite(ctx, rq, cmd.Path.NodePath(), err)
		return
	}
	// The changes the write made are sent before its ok: on the ok the
	// SDKs drop their local copy of the write and show what the server
	// sent, which must already hold it (else the value flickers back).
	s.awaitOwnChanges(ctx, cmd.Path.NodePath(), a.Index)
	s.pump()
	s.ok(rq, nil)
}

// failWrite answers a write that failed. A transaction's set answered
// datastale is first shown the value that made it stale: the SDK retries
// with what its listen holds, and would otherwise spend a retry (of 25)
// on the same stale guess for every datastale that outran the push.
func (s *session) failWrite(ctx context.Context, rq request, path tree.Path, err error) {
	if errors.Is(err, fsm.ErrPreconditionFailed) && s.listensTouch(path) {
		res, rerr := s.srv.deps.DB.Read(ctx, fsm.Read{Path: path, Linearizable: true, Access: s.who.readAccess(s.srv.cfg.Now(), nil)})
		if rerr == nil {
			s.awaitOwnChanges(ctx, path, res.Index)
			s.pump()
		}
	}
	s.fail(rq, err)
}

// listensTouch reports whether a listen's location is at, above or below
// path: whether a write there may change what a listen shows.
func (s *session) listensTouch(path tree.Path) bool {
	for _, l := range s.listens {
		if l.path.HasPrefix(path) || path.HasPrefix(l.path) {
			return true
		}
	}
	return false
}

// ownChangesWait bounds how long a write's ok waits for its changes: a
// follower cut off from the leader right after the write was made would
// otherwise hold the ok for the whole request timeout.
const ownChangesWait = 5 * time.Second

// awaitOwnChanges waits until this node has handed the changes of the
// write at index (at path) to the listens' feeds. A follower applies a
// write it forwarded only after the leader answered it, and would learn
// that it is committed only with the leader's next heartbeat: a read
// barrier makes it catch up at once. Past ctx or ownChangesWait the
// answer goes anyway: the write is made, only the order is lost.
func (s *session) awaitOwnChanges(ctx context.Context, path tree.Path, index uint64) {
	if index == 0 || !s.listensTouch(path) {
		return
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if s.srv.deps.Events.WaitDelivered(done, index) == nil {
		return // the leader, or a follower that has applied it already
	}
	ctx, cancel = context.WithTimeout(ctx, ownChangesWait)
	defer cancel()
	_, err := s.srv.deps.DB.Read(ctx, fsm.Read{Path: path, Linearizable: true})
	if err == nil {
		err = s.srv.deps.Events.WaitDelivered(ctx, index)
	}
	if err != nil {
		s.srv.cfg.Logger.Debug("realtime: a write's changes were not delivered before its answer", "session", s.id, "index", index, "err", err)
	}
}

// command builds the write of b: a set, or an update when merge. The body
// is parsed once, here; the clock and push randomness are fixed here, so
// every replica applies the same write.
func (s *session) command(merge bool, b writeBody) (fsm.Command, error) {
	path, err := parsePath(b.P)
	if err != nil {
		return fsm.Command{}, err
	}
	rnd, err := s.srv.pushRand()
	if err != nil {
		return fsm.Command{}, fmt.Errorf("push key randomness: %w", err)
	}
	cmd := fsm.Command{Path: path, Now: s.srv.cfg.Now().UnixMilli(), Rand: rnd, As: s.who.writeAccess(), Parsed: true, Kind: fsm.CmdSet}
	if isNull(b.D) {
		return cmd, nil // a set of null removes
	}
	depth := tree.MaxDepth - len(path.NodePath())
	if merge {
		if path.IsPriority() {
			return cmd, errPriorityPath
		}
		fields, err := tree.ParseUpdate(b.D, depth)
		if err != nil {
			return cmd, fmt.Errorf("update %s: %w", path, err)
		}
		cmd.Kind, cmd.Body, cmd.Fields = fsm.CmdUpdate, b.D, fields
		return cmd, nil
	}
	v, err := tree.ParseBody(b.D, depth)
	if err != nil {
		return cmd, fmt.Errorf("set %s: %w", path, err)
	}
	cmd.Body, cmd.Value = b.D, v
	return cmd, nil
}

// errStale is a transaction's set whose hash no longer matches.
var errStale = fmt.Errorf("the data changed since the client read it: %w", fsm.ErrPreconditionFailed)

// compareHash makes cmd a compare-and-set: the client's hash must be the
// stored data's, and the write carries the ETag of the data that hash was
// checked on, so that Apply refuses it if anything changed in between.
// The writer must be allowed to read the location, as for REST's
// if-match: the answer tells whether the guess matched.
func (s *session) compareHash(ctx context.Context, cmd *fsm.Command, hash string) error {
	res, err := s.srv.deps.DB.Read(ctx, fsm.Read{Path: cmd.Path.NodePath(), Linearizable: true, Access: s.who.readAccess(s.srv.cfg.Now(), nil)})
	if err != nil {
		return err
	}
	if Hash(res.Value) != hash {
		return errStale
	}
	cmd.IfMatch, cmd.HasIfMatch = res.Value.ETag(), true
	return nil
}

// maxRejudgements bounds how often a write judged by rules replaced
// before it reached the log is judged and proposed again.
const maxRejudgements = 3

// judgeAndPropose judges cmd by the rules and proposes it, as REST does:
// a refusal on this node's state is confirmed on a fresh one before it is
// answered, and a write refused by the log because the rules changed
// meanwhile is judged and proposed again.
func (s *session) judgeAndPropose(ctx context.Context, cmd *fsm.Command) (fsm.Answer, error) {
	for attempt := 0; ; attempt++ {
		if err := s.judge(ctx, cmd, attempt > 0); err != nil {
			return fsm.Answer{}, err
		}
		a, err := s.srv.deps.DB.Propose(ctx, *cmd, fsm.AnswerOptions{Silent: true})
		if !errors.Is(err, fsm.ErrRulesChanged) || attempt == maxRejudgements {
			return a, err
		}
	}
}

// judge refuses what the rules refuse before it reaches the log.
func (s *session) judge(ctx context.Context, cmd *fsm.Command, fresh bool) error {
	if cmd.As == nil {
		return nil
	}
	if fresh {
		return s.srv.deps.DB.Judge(ctx, cmd, true)
	}
	if err := s.srv.deps.DB.Judge(ctx, cmd, false); !denied(err) {
		return nil
	}
	return s.srv.deps.DB.Judge(ctx, cmd, true)
}

// getBody is the body of g.
type getBody struct {
	P string          `json:"p"`
	Q json.RawMessage `json:"q"`
}

// get serves g: the value at a path (through a query, if any), read as
// the client after a read barrier.
func (s *session) get(rq request) {
	var b getBody
	if err := decodeBody(rq, &b); err != nil {
		s.fail(rq, err)
		return
	}
	path, err := parsePath(b.P)
	if err != nil {
		s.fail(rq, err)
		return
	}
	q, err := parseQueryObject(b.Q)
	if err != nil {
		s.fail(rq, err)
		return
	}
	ctx, cancel := s.requestContext()
	defer cancel()
	res, err := s.srv.deps.DB.Read(ctx, fsm.Read{Path: path, Linearizable: true, Access: s.who.readAccess(s.srv.cfg.Now(), q)})
	if err != nil {
		s.fail(rq, err)
		return
	}
	w, err := evaluate(ctx, path, q, res.Value, res.Indexes)
	if err != nil {
		s.fail(rq, err)
		return
	}
	s.ok(rq, w.render())
}
