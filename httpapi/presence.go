package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

// replicatedDisconnects keeps the realtime protocol's onDisconnect
// operations in the replicated state (realtime.Disconnects): each is a
// registration of (this node, this process's run, the session) in the
// log, and the end of a connection is the run of its session's, proposed
// by this node. Were this node to die first, the leader runs them
// (cluster/presence.go); were it cut off long enough to be declared gone,
// the leader runs them too. So that no client's operations run while its
// connection lives, a node out of touch with a leader closes the
// connections holding operations first (realtime/fence.go), and one that
// could not (it was stopped) closes them when it applies that run (ran). While some member of the cluster cannot apply the
// onDisconnect commands (a rolling upgrade), Propose refuses them with
// fsm.ErrNotReady and the client gets "unavailable".
type replicatedDisconnects struct {
	db        DB
	node, run string
	now       func() time.Time
	rand      io.Reader
	log       *slog.Logger
	// closeSession ends the connection of a session of this node whose
	// operations ran elsewhere.
	closeSession func(session string)
}

// endRetry is how long End keeps trying to propose the run of a session's
// operations (the cluster may be between leaders), and endBackoff the wait
// between tries. Past it the operations stay registered to this run, and
// the leader runs them when this node goes.
const (
	endRetry   = 30 * time.Second
	endBackoff = 200 * time.Millisecond
)

func (d *replicatedDisconnects) holder(session string) fsm.Holder {
	return fsm.Holder{Node: d.node, Run: d.run, Session: session}
}

// Register implements realtime.Disconnects.
func (d *replicatedDisconnects) Register(ctx context.Context, session string, op fsm.Command) error {
	op.Now, op.Rand = 0, [12]byte{}
	c := fsm.Command{Kind: fsm.CmdDisconnectRegister, Holder: d.holder(session), Op: &op}
	if _, err := d.db.Propose(ctx, c, fsm.AnswerOptions{Silent: true}); err != nil {
		return fmt.Errorf("register onDisconnect operation: %w", err)
	}
	return nil
}

// Cancel implements realtime.Disconnects.
func (d *replicatedDisconnects) Cancel(ctx context.Context, session string, path tree.Path) error {
	c := fsm.Command{Kind: fsm.CmdDisconnectCancel, Holder: d.holder(session), Path: path}
	if _, err := d.db.Propose(ctx, c, fsm.AnswerOptions{Silent: true}); err != nil {
		return fmt.Errorf("cancel onDisconnect operations: %w", err)
	}
	return nil
}

// End implements realtime.Disconnects: it proposes the run of session's
// operations, stamped with this node's clock, until it is committed or
// endRetry has passed. Running is idempotent, so a try whose outcome is
// unknown is simply made again.
func (d *replicatedDisconnects) End(_ context.Context, session string) {
	ctx, cancel := context.WithTimeout(context.Background(), endRetry)
	defer cancel()
	for {
		c := fsm.Command{Kind: fsm.CmdDisconnectRun, Holder: d.holder(session), Now: d.now().UnixMilli()}
		err := d.pushRand(&c.Rand)
		if err == nil {
			if _, err = d.db.Propose(ctx, c, fsm.AnswerOptions{Silent: true}); err == nil {
				return
			}
		}
		if errors.Is(err, fsm.ErrShuttingDown) || ctx.Err() != nil {
			d.log.Warn("realtime: could not run a session's onDisconnect operations; the leader runs them once this node is gone",
				"session", session, "err", err)
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(endBackoff):
		}
	}
}

// pushRand draws a run's 12 random base-64 digits.
func (d *replicatedDisconnects) pushRand(r *[12]byte) error {
	if _, err := io.ReadFull(d.rand, r[:]); err != nil {
		return fmt.Errorf("onDisconnect run: randomness: %w", err)
	}
	for i := range r {
		r[i] &= 63
	}
	return nil
}

// ran closes the connections of this run's sessions among holders, whose
// operations just ran; for a session whose connection ended that is a
// no-op. It runs on the apply goroutine and never blocks.
func (d *replicatedDisconnects) ran(holders []fsm.Holder) {
	for _, h := range holders {
		if h.Node == d.node && h.Run == d.run && d.closeSession != nil {
			d.closeSession(h.Session)
		}
	}
}

// withoutDisconnectEvents returns events less the EventDisconnectsRan
// ones, handing each to ran; events itself when it has none (the common
// case, which allocates nothing).
func (d *replicatedDisconnects) withoutDisconnectEvents(events []fsm.Event) []fsm.Event {
	first := -1
	for i := range events {
		if events[i].Kind == fsm.EventDisconnectsRan {
			first = i
			break
		}
	}
	if first < 0 {
		return events
	}
	out := append(make([]fsm.Event, 0, len(events)-1), events[:first]...)
	for _, e := range events[first:] {
		if e.Kind == fsm.EventDisconnectsRan {
			if d != nil {
				d.ran(e.Holders)
			}
			continue
		}
		out = append(out, e)
	}
	return out
}
