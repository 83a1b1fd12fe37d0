package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
)

// Shutdown stops the node: new calls fail with fsm.ErrShuttingDown, a
// leader with other voters hands leadership over (so the cluster does not
// wait out an election timeout), a snapshot is taken so the next start
// replays little, gossip says goodbye (the node stays a voter), then Raft
// stops and the cluster port and raft.db are closed. The transfer and snapshot are skipped once ctx ends; stopping
// and closing always happen. Calling it again returns the first result.
func (n *Node) Shutdown(ctx context.Context) error {
	n.shutdownOnce.Do(func() { n.shutdownErr = n.shutdown(ctx) })
	return n.shutdownErr
}

func (n *Node) shutdown(ctx context.Context) error {
	n.closing.Store(true)
	n.changes.notify() // waiters look again and see closing
	if n.raft.State() == raft.Leader && n.hasOtherVoters(ctx) {
		n.transferLeadership(ctx)
	}
	if ctx.Err() == nil {
		n.snapshotOnShutdown(ctx)
	}
	var errs []error
	if n.disco != nil {
		// Tell the others this is a departure, not a failure. They keep
		// this node as a voter: it is probably restarting (SPEC §10).
		if err := n.disco.Leave(n.leaveTimeout(ctx)); err != nil {
			n.log.Debug("gossip leave", "error", err)
		}
	}
	if err := n.raft.Shutdown().Error(); err != nil {
		errs = append(errs, fmt.Errorf("stop raft: %w", err))
	}
	n.raft.DeregisterObserver(n.observer)
	close(n.stop)
	n.wg.Wait()
	if n.disco != nil {
		if err := n.disco.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := n.net.Close(); err != nil && !errors.Is(err, net.ErrClosed) { // raft closed it too; Close is idempotent
		errs = append(errs, fmt.Errorf("close transport: %w", err))
	}
	if err := n.bolt.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close raft.db: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		n.log.Error("raft shutdown incomplete", "error", err)
		return fmt.Errorf("cluster: shutdown: %w", err)
	}
	n.log.Info("raft stopped")
	return nil
}

// leaveTimeout bounds the gossip goodbye: half a second (memberlist waits
// that long when the others are leaving too), less if ctx has less.
func (n *Node) leaveTimeout(ctx context.Context) time.Duration {
	d := 500 * time.Millisecond
	if dl, ok := ctx.Deadline(); ok {
		d = min(d, max(time.Until(dl), 0))
	}
	return d
}

// hasOtherVoters reports whether another voter could take over leadership.
func (n *Node) hasOtherVoters(ctx context.Context) bool {
	cf := n.raft.GetConfiguration()
	if err := waitFuture(ctx, cf); err != nil {
		return false
	}
	for _, s := range cf.Configuration().Servers {
		if s.ID != n.id && s.Suffrage == raft.Voter {
			return true
		}
	}
	return false
}

// transferLeadership hands leadership to the most up-to-date follower.
// Failure is logged, not returned: the cluster then elects a leader after
// the election timeout, which is slower but safe.
func (n *Node) transferLeadership(ctx context.Context) {
	start := time.Now()
	if err := waitFuture(ctx, n.raft.LeadershipTransfer()); err != nil {
		n.log.Warn("leadership transfer failed", "error", err, "took", time.Since(start))
		return
	}
	n.log.Info("leadership transferred", "took", time.Since(start))
}

// snapshotOnShutdown takes a snapshot so the next start restores it instead
// of replaying the log. Failure is logged, not returned: the log still holds
// every entry, so nothing is lost, the restart is only slower.
func (n *Node) snapshotOnShutdown(ctx context.Context) {
	start := time.Now()
	if n.raft.State() == raft.Leader {
		// Raft refuses to snapshot while a committed configuration entry
		// (e.g. fixSelfAddress's) is not applied yet; a barrier waits for
		// everything to be applied.
		_ = waitFuture(ctx, n.raft.Barrier(n.cfg.WriteTimeout))
	}
	if n.raft.AppliedIndex() <= n.lastSnapshotIndex() {
		n.log.Debug("no snapshot needed on shutdown")
		return
	}
	err := waitFuture(ctx, n.raft.Snapshot())
	switch {
	case err == nil:
		n.log.Info("snapshot taken on shutdown", "index", n.snaps.lastSnapshot().Index, "took", time.Since(start))
	case errors.Is(err, raft.ErrNothingNewToSnapshot):
		n.log.Debug("no snapshot needed on shutdown")
	default:
		n.log.Warn("snapshot on shutdown failed", "error", err, "took", time.Since(start))
	}
}

// lastSnapshotIndex is the index of the newest snapshot Raft knows of (one
// from before this process included).
func (n *Node) lastSnapshotIndex() uint64 {
	idx, _ := strconv.ParseUint(n.raft.Stats()["last_snapshot_index"], 10, 64)
	return idx
}
