package realtime

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

// LocalDisconnects is the tests' Disconnects: it keeps onDisconnect
// operations in memory and runs them through DB when their session ends.
// A node keeps them as replicated state instead (httpapi/presence.go).
type LocalDisconnects struct {
	db  DB
	now func() time.Time
	log *slog.Logger

	mu  sync.Mutex
	ops map[string][]fsm.Command // by session, in registration order
}

// NewLocalDisconnects returns an empty LocalDisconnects writing through db.
func NewLocalDisconnects(db DB, now func() time.Time, log *slog.Logger) *LocalDisconnects {
	return &LocalDisconnects{db: db, now: now, log: log, ops: map[string][]fsm.Command{}}
}

// Register implements Disconnects: a set replaces the session's
// operations at and below its path.
func (d *LocalDisconnects) Register(_ context.Context, session string, op fsm.Command) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if op.Kind == fsm.CmdSet {
		d.ops[session] = without(d.ops[session], op.Path)
	}
	d.ops[session] = append(d.ops[session], op)
	return nil
}

// Cancel implements Disconnects.
func (d *LocalDisconnects) Cancel(_ context.Context, session string, path tree.Path) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ops[session] = without(d.ops[session], path)
	if len(d.ops[session]) == 0 {
		delete(d.ops, session)
	}
	return nil
}

// without returns ops less those at or below path.
func without(ops []fsm.Command, path tree.Path) []fsm.Command {
	kept := ops[:0]
	for _, op := range ops {
		if !op.Path.HasPrefix(path) {
			kept = append(kept, op)
		}
	}
	return kept
}

// End implements Disconnects: the session's operations are made in the
// order they were registered, with the clock of now.
func (d *LocalDisconnects) End(ctx context.Context, session string) {
	d.mu.Lock()
	ops := d.ops[session]
	delete(d.ops, session)
	d.mu.Unlock()
	for _, op := range ops {
		op.Now = d.now().UnixMilli()
		if _, err := d.db.Propose(ctx, op, fsm.AnswerOptions{Silent: true}); err != nil {
			d.log.Warn("realtime: onDisconnect operation failed", "session", session, "path", op.Path.String(), "err", fmt.Errorf("propose: %w", err))
		}
	}
}

// Pending is the number of operations kept for session.
func (d *LocalDisconnects) Pending(session string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.ops[session])
}
