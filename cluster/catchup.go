package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// catchUpFile marks a data directory whose node started without Raft
// state and has not yet caught up with the cluster. It outlives restarts:
// a node that crashes half-way through catching up must not come back as
// a full member because its log is no longer empty.
const catchUpFile = "catching-up"

// openCatchUp decides at start whether this node is catching up: it is
// if the marker is there, or if it has no Raft state (then the marker is
// written, durably, before Raft can accept a single entry).
func (n *Node) openCatchUp(hasState bool) error {
	path := filepath.Join(n.cfg.DataDir, catchUpFile)
	_, err := os.Stat(path)
	switch {
	case err == nil:
		n.catchingUp.Store(true)
		return nil
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("cluster: %w", err)
	case hasState:
		return nil
	}
	if err := writeDurably(path, []byte("this node started without Raft state; it votes once it has caught up with the cluster\n")); err != nil {
		return fmt.Errorf("cluster: mark the data directory as catching up: %w", err)
	}
	n.catchingUp.Store(true)
	return nil
}

// writeDurably creates path with data and syncs it and its directory.
func writeDurably(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// finishCatchUp makes this node a full member: it votes, campaigns and
// advertises that it has caught up (the leader then promotes it).
func (n *Node) finishCatchUp(why string) {
	n.catchUpMu.Lock()
	defer n.catchUpMu.Unlock()
	if !n.catchingUp.Load() {
		return
	}
	path := filepath.Join(n.cfg.DataDir, catchUpFile)
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		n.log.Error("cannot remove the catch-up mark; still not voting", "path", path, "error", err)
		return
	}
	if err := syncDir(n.cfg.DataDir); err != nil {
		n.log.Error("cannot sync the data directory; still not voting", "error", err)
		return
	}
	n.catchingUp.Store(false)
	n.log.Info("caught up with the cluster; voting from now on", "reason", why, "applied_index", n.fsm.AppliedIndex())
	n.memberEvents.notify() // advertise it
}

// catchUpLoop runs while this node catches up: it checks readiness —
// applied up to a read index the leader confirmed after this node
// started, a commit index covering every write acknowledged so far, the
// ones this node may have acknowledged before it lost its state included
// — at every leader change and every ReconcileInterval; Ready finishes
// the catch-up once it holds.
func (n *Node) catchUpLoop() {
	defer n.wg.Done()
	tick := time.NewTicker(n.cfg.Timing.ReconcileInterval)
	defer tick.Stop()
	for n.catchingUp.Load() && !n.closing.Load() {
		ch := n.changes.wait()
		ctx, cancel := context.WithTimeout(context.Background(), n.cfg.WriteTimeout)
		_ = n.Ready(ctx)
		cancel()
		if !n.catchingUp.Load() {
			return
		}
		select {
		case <-n.stop:
			return
		case <-ch:
		case <-tick.C:
		}
	}
}
