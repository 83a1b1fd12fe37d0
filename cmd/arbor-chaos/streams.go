package main

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/arbordb/arbor/cmd/arbor-chaos/internal/watch"
	"github.com/arbordb/arbor/cmd/internal/checks"
	"github.com/arbordb/arbor/cmd/internal/client"
	"github.com/arbordb/arbor/cmd/internal/history"
)

// The stream watchers' timing. The nodes send a keep-alive after
// streamKeepAlive of quiet, so a stream silent for watchIdle is on a node
// that hangs (paused); every watchMaxAge a watcher moves to the next node
// on purpose and resumes there.
const (
	streamKeepAlive = time.Second
	watchIdle       = 5 * time.Second
	watchMaxAge     = 20 * time.Second
	watchStart      = 15 * time.Second // for every watcher's first put
)

// watchersFile is where a run keeps what its watchers saw.
const watchersFile = "watchers.json"

// streamNodeFlags are the serve flags the watchers need.
func streamNodeFlags(cfg config) []string {
	if cfg.Watchers == 0 {
		return nil
	}
	return []string{"--stream-keepalive", streamKeepAlive.String()}
}

// startWatchers starts the run's watchers on the history's clock and
// waits for their first puts; one still waiting is reported, and the
// checks judge what it saw.
func startWatchers(ctx context.Context, out io.Writer, cfg config, ccfg client.Config, ca *x509.CertPool, rec *history.Recorder) *watch.Set {
	set := watch.Start(ctx, watch.Config{
		Watchers:  cfg.Watchers,
		Endpoints: ccfg.Endpoints,
		CA:        ca,
		Secret:    ccfg.Secret,
		Idle:      watchIdle,
		MaxAge:    watchMaxAge,
		Clock:     rec.Now,
	})
	if err := set.AwaitStarted(ctx, watchStart); err != nil {
		fmt.Fprintln(out, "arbor-chaos:", err)
	}
	return set
}

// settleWatchers writes the marker once the cluster is quiet, waits for
// every watcher to reach the final state, stops them and saves what they
// saw.
func settleWatchers(ctx context.Context, out io.Writer, set *watch.Set, admin watch.Doer, nodes []string, dir string, timeout time.Duration) watch.File {
	var f watch.File
	if set.Len() == 0 {
		return f
	}
	final, err := set.Settle(ctx, admin, nodes, timeout)
	f.Final = string(final)
	if err != nil {
		fmt.Fprintln(out, "arbor-chaos:", err)
		if final == nil {
			f.Error = err.Error()
		}
	}
	f.Watchers = set.Stop()
	if err := watch.WriteFile(filepath.Join(dir, watchersFile), f); err != nil {
		fmt.Fprintln(out, "arbor-chaos:", err)
	}
	return f
}

// streamChecks judges the watchers' records, if the run had watchers.
func streamChecks(ops []history.Op, f watch.File) (*watch.Figures, []checks.Result) {
	if len(f.Watchers) == 0 {
		return nil, nil
	}
	v := watch.Check(ops, f)
	return &v.Figures, v.Results
}

// loadWatchers reads the watchers' records saved next to a history; a
// history without them (-watchers 0, an older run) has none.
func loadWatchers(dir string) (watch.File, error) {
	f, err := watch.ReadFile(filepath.Join(dir, watchersFile))
	if errors.Is(err, fs.ErrNotExist) {
		return watch.File{}, nil
	}
	return f, err
}
