package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/arbordb/arbor/cmd/internal/testcluster"
)

// pollEvery is how often the health checks look again.
const pollEvery = 100 * time.Millisecond

// progress, when set, hears what a wait is still waiting for, every few
// seconds (-v).
var progress func(format string, args ...any)

// poll calls cond until it returns nil or timeout passes, and then
// returns its last complaint.
func poll(ctx context.Context, timeout time.Duration, what string, cond func(context.Context) error) error {
	said := time.Now()
	err := testcluster.Poll(ctx, timeout, pollEvery, func(ctx context.Context) error {
		err := cond(ctx)
		if err != nil && progress != nil && time.Since(said) > 2*time.Second {
			progress("waiting for %s: %v", what, err)
			said = time.Now()
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("%s: not after %s: %w", what, timeout, err)
	}
	return nil
}

// healthy checks the cluster the way an operator would before touching the
// next node (docs/OPERATIONS.md): every node ready and agreeing on one
// leader, whose configuration holds every node as an alive voter, and
// every node applies what the leader had committed when it was asked,
// within catchUp. It returns the leader.
func healthy(ctx context.Context, cl adminClient) (string, error) {
	var leader string
	for _, id := range nodes {
		if err := cl.ready(ctx, id); err != nil {
			return "", fmt.Errorf("%s: %w", id, err)
		}
		st, err := cl.status(ctx, id)
		if err != nil {
			return "", fmt.Errorf("%s: %w", id, err)
		}
		if st.Leader == "" || (leader != "" && st.Leader != leader) {
			return "", fmt.Errorf("%s sees leader %q, others %q", id, st.Leader, leader)
		}
		leader = st.Leader
	}
	// The leader's view, fetched after the others: its commit index is
	// what every node must have applied by the next round.
	lst, err := cl.status(ctx, leader)
	if err != nil {
		return "", fmt.Errorf("leader %s: %w", leader, err)
	}
	if lst.Role != "leader" {
		return "", fmt.Errorf("%s is named leader but is %s", leader, lst.Role)
	}
	var voters []string
	for _, m := range lst.Members {
		if !strings.EqualFold(m.Suffrage, "voter") || m.Health != "alive" {
			return "", fmt.Errorf("leader %s sees member %s as %s, %s", leader, m.ID, m.Suffrage, m.Health)
		}
		voters = append(voters, m.ID)
	}
	slices.Sort(voters)
	if !slices.Equal(voters, nodes) {
		return "", fmt.Errorf("leader %s has voters %v, want %v", leader, voters, nodes)
	}
	// Under load the commit index moves on: each node must reach the one
	// sampled above, soon (a node left behind would not).
	for _, id := range nodes {
		err := poll(ctx, catchUp, id+" caught up", func(ctx context.Context) error {
			st, err := cl.status(ctx, id)
			switch {
			case err != nil:
				return err
			case st.AppliedIndex < lst.CommitIndex:
				return fmt.Errorf("%s has applied %d of the leader's %d", id, st.AppliedIndex, lst.CommitIndex)
			}
			return nil
		})
		if err != nil {
			return "", err
		}
	}
	return leader, nil
}

// catchUp bounds how long a node may take to apply what the leader had
// committed: on loopback, a healthy follower needs milliseconds.
const catchUp = 5 * time.Second

// waitHealthy waits until healthy holds, and returns the leader.
func waitHealthy(ctx context.Context, cl adminClient, timeout time.Duration) (string, error) {
	var leader string
	err := poll(ctx, timeout, "cluster healthy", func(ctx context.Context) error {
		var err error
		leader, err = healthy(ctx, cl)
		return err
	})
	return leader, err
}

// waitReady waits until node's /readyz answers 200.
func waitReady(ctx context.Context, cl adminClient, node string, timeout time.Duration) error {
	return poll(ctx, timeout, node+" ready", func(ctx context.Context) error { return cl.ready(ctx, node) })
}

// pause lets the load run for d.
func pause(ctx context.Context, d time.Duration) error {
	if !testcluster.Sleep(ctx, d) {
		return fmt.Errorf("interrupted: %w", ctx.Err())
	}
	return nil
}

// nextNode picks the node to replace next: the highest ordinal still on
// the old release that does not lead; the leader only when nothing else
// is left. remaining is in replacement order (n3, n2, n1).
func nextNode(remaining []string, leader string) string {
	for _, id := range remaining {
		if id != leader {
			return id
		}
	}
	return remaining[0]
}
