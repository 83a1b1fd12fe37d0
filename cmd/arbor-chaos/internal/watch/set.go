package watch

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/arbordb/arbor/cmd/internal/client"
)

// Doer sends one request to a node (a client.Client as admin).
type Doer interface {
	Do(ctx context.Context, node, method, path, body string, headers ...string) (client.Response, error)
}

// Set is the running watchers of a run.
type Set struct {
	ws     []*Watcher
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Start starts cfg.Watchers watchers, watcher i first on node i (mod the
// number of nodes); they run until Stop, or until ctx ends.
func Start(ctx context.Context, cfg Config) *Set {
	ctx, cancel := context.WithCancel(ctx)
	s := &Set{cancel: cancel}
	if len(cfg.Endpoints) == 0 {
		return s
	}
	sp := newSpread(cfg.Watchers)
	for i := range cfg.Watchers {
		w := newWatcher(i, cfg, sp)
		s.ws = append(s.ws, w)
		s.wg.Go(func() { w.run(ctx) })
	}
	return s
}

// Len is the number of watchers.
func (s *Set) Len() int { return len(s.ws) }

// pollEvery is how often the Set looks at the watchers' copies.
const pollEvery = 100 * time.Millisecond

// pause waits d or until ctx ends.
func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// AwaitStarted waits until every watcher has its first put, at most
// timeout.
func (s *Set) AwaitStarted(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for polls := 0; ; polls++ {
		waiting := 0
		for _, w := range s.ws {
			if _, ok := w.copyJSON(); !ok {
				waiting++
			}
		}
		if waiting == 0 {
			return nil
		}
		if ctx.Err() != nil || !time.Now().Before(deadline) || polls > int(timeout/pollEvery)+1 {
			return fmt.Errorf("watch: %d of %d watchers without a first put after %s", waiting, len(s.ws), timeout)
		}
		pause(ctx, pollEvery)
	}
}

// Settle ends the watched history: once the cluster is quiet it writes
// the marker (MarkerKey), reads the whole state, and waits, at most
// timeout in all, until every watcher's copy equals that state. It
// returns the state (canonical JSON), or an error saying what is missing.
func (s *Set) Settle(ctx context.Context, admin Doer, nodes []string, timeout time.Duration) ([]byte, error) {
	deadline := time.Now().Add(timeout)
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	try := func(what string, do func(node string) error) error {
		var err error
		for attempt := 0; attempt < 40 && ctx.Err() == nil; attempt++ {
			if err = do(nodes[attempt%len(nodes)]); err == nil {
				return nil
			}
			pause(ctx, 250*time.Millisecond)
		}
		return fmt.Errorf("watch: %s: %w", what, err)
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("watch: no nodes")
	}
	err := try("writing the marker", func(node string) error {
		r, err := admin.Do(ctx, node, "PUT", "/"+MarkerKey+".json", `"end"`)
		if err == nil && r.Status != 200 {
			err = fmt.Errorf("%s answered %d", node, r.Status)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	var final []byte
	err = try("reading the final state", func(node string) error {
		r, err := admin.Do(ctx, node, "GET", "/.json", "")
		if err == nil && r.Status != 200 {
			err = fmt.Errorf("%s answered %d", node, r.Status)
		}
		if err == nil {
			final, err = Canonical(r.Body)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	for polls := 0; ; polls++ {
		differ := 0
		for _, w := range s.ws {
			if b, _ := w.copyJSON(); !bytes.Equal(b, final) {
				differ++
			}
		}
		if differ == 0 {
			return final, nil
		}
		if ctx.Err() != nil || polls > int(timeout/pollEvery)+1 {
			return final, fmt.Errorf("watch: %d of %d watchers' copies still differ from the final state after %s", differ, len(s.ws), timeout)
		}
		pause(ctx, pollEvery)
	}
}

// Stop stops the watchers and returns what each recorded.
func (s *Set) Stop() []Record {
	s.cancel()
	s.wg.Wait()
	recs := make([]Record, len(s.ws))
	for i, w := range s.ws {
		recs[i] = w.record()
	}
	return recs
}
