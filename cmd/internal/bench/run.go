package bench

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// benchRunner drives one run: probe, preload, then cfg.Clients clients
// sending requests back to back until the duration or --max-ops is spent.
type benchRunner struct {
	cfg     benchConfig
	builder requestBuilder
	tls     *tls.Config
	auth    string // the Authorization header, or ""

	// ok and failed count finished requests, for the progress display;
	// tickets hands out the --max-ops budget.
	ok, failed, tickets atomic.Uint64
}

// clientStats is what one client measured; merged once at the end.
type clientStats struct {
	hists [opKindCount]*histogram
	errs  map[string]uint64
}

// maxErrorKinds bounds the distinct error texts one client keeps.
const maxErrorKinds = 16

// transportBackoff paces a client whose connection fails, so a dead node
// costs a few requests a second instead of a busy loop.
const transportBackoff = 10 * time.Millisecond

func newBenchRunner(cfg benchConfig, builder requestBuilder, conf *tls.Config) *benchRunner {
	r := &benchRunner{cfg: cfg, builder: builder, tls: conf}
	if cfg.Auth != "" {
		r.auth = builder.authorization(cfg.Auth)
	}
	return r
}

// client returns the client of user i: its own connection to node i mod n.
func (r *benchRunner) client(i int) *benchClient {
	return &benchClient{
		http: newBenchHTTPClient(r.tls, r.cfg.Timeout),
		base: r.cfg.Addrs[i%len(r.cfg.Addrs)],
		auth: r.auth,
	}
}

// probe reads one key on every node, so a node that is down, refuses the
// certificate or the credential fails the run at once with its reason.
func (r *benchRunner) probe(ctx context.Context) error {
	for i, addr := range r.cfg.Addrs {
		c := r.client(i)
		err := c.do(ctx, r.builder.build(operation{kind: opReadLocal, keys: []int{0}}, i))
		c.http.CloseIdleConnections()
		if err != nil {
			return fmt.Errorf("%s at %s: %w", r.cfg.Target, addr, err)
		}
	}
	return nil
}

// preloadBatch is how many keys one preload request writes: a PATCH (an
// etcd transaction) of up to 100 keys, fewer for large values so that a
// request stays well under etcd's 1.5 MiB limit.
func preloadBatch(valueSize int) int {
	return max(1, min(100, (1<<20)/(valueSize+64)))
}

// preloadClients write the key space concurrently.
const preloadClients = 4

// preload writes every key once, in batches, before the clock starts.
func (r *benchRunner) preload(ctx context.Context) error {
	batch := preloadBatch(r.cfg.ValueSize)
	starts := make(chan int)
	errc := make(chan error, preloadClients)
	var wg sync.WaitGroup
	for i := range preloadClients {
		wg.Go(func() {
			c := r.client(i)
			defer c.http.CloseIdleConnections()
			keys := make([]int, 0, batch)
			for start := range starts {
				keys = keys[:0]
				for k := start; k < min(start+batch, r.cfg.Keys); k++ {
					keys = append(keys, k)
				}
				if err := c.do(ctx, r.builder.build(operation{kind: opPatchMulti, keys: keys}, i)); err != nil {
					errc <- fmt.Errorf("preload keys %d to %d: %w", start, keys[len(keys)-1], err)
					return
				}
			}
		})
	}
	var err error
feed:
	for start := 0; start < r.cfg.Keys; start += batch {
		select {
		case starts <- start:
		case err = <-errc:
			break feed
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
	}
	close(starts)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errc:
		default:
		}
	}
	return err
}

// measure runs the clients and returns what they measured and the wall
// time from the start signal until the last request finished. Every
// client first opens its connection with one unmeasured read, so the
// handshakes are not part of the figures.
func (r *benchRunner) measure(ctx context.Context, started func(time.Time)) ([]*clientStats, time.Duration) {
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	stats := make([]*clientStats, r.cfg.Clients)
	start := make(chan struct{})
	var warm, done sync.WaitGroup
	warm.Add(r.cfg.Clients)
	for i := range r.cfg.Clients {
		st := &clientStats{errs: map[string]uint64{}}
		stats[i] = st
		done.Go(func() {
			c := r.client(i)
			defer c.http.CloseIdleConnections()
			// A failed warm-up is not fatal: the probe passed, and the
			// measured loop counts whatever keeps failing.
			_ = c.do(ctx, r.builder.build(operation{kind: opReadLocal, keys: []int{i % r.cfg.Keys}}, i))
			warm.Done()
			<-start
			r.loop(ctx, runCtx, c, i, st)
		})
	}
	warm.Wait()
	t0 := time.Now()
	timer := time.AfterFunc(r.cfg.Duration, stop)
	defer timer.Stop()
	if started != nil {
		started(t0)
	}
	close(start)
	done.Wait()
	return stats, time.Since(t0)
}

// loop sends requests until runCtx ends or the --max-ops budget is spent.
// Requests use ctx, not runCtx: those in flight at the deadline finish and
// count, rather than being cut off and counted as errors.
func (r *benchRunner) loop(ctx, runCtx context.Context, c *benchClient, i int, st *clientStats) {
	gen := newOpGenerator(r.cfg.Workload, r.cfg.Keys, r.cfg.Fields, i)
	for runCtx.Err() == nil {
		if r.cfg.MaxOps > 0 && r.tickets.Add(1) > r.cfg.MaxOps {
			return
		}
		op := gen.next()
		req := r.builder.build(op, i)
		t := time.Now()
		err := c.do(ctx, req)
		elapsed := time.Since(t)
		if ctx.Err() != nil {
			return // interrupted: this request is ours to forget
		}
		if err != nil {
			r.failed.Add(1)
			st.addError(err)
			var se *statusError
			if !errors.As(err, &se) {
				select {
				case <-runCtx.Done():
				case <-time.After(transportBackoff):
				}
			}
			continue
		}
		r.ok.Add(1)
		if st.hists[op.kind] == nil {
			st.hists[op.kind] = new(histogram)
		}
		st.hists[op.kind].record(elapsed)
	}
}

// addError counts err under its kind, folding rare kinds into "other".
func (st *clientStats) addError(err error) {
	k := errorKey(err)
	if _, seen := st.errs[k]; !seen && len(st.errs) >= maxErrorKinds {
		k = "other"
	}
	st.errs[k]++
}
