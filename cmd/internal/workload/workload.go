// Package workload drives concurrent clients against the nodes of a
// cluster (most stay with a home node, a few roam): linearizable reads,
// overwrites (PUT and PATCH), deletes, compare-and-sets, increments and
// appends over a small set of keys, so that operations conflict often —
// every entry kind of the log. Every operation is recorded in the
// history. The chaos runner and the rolling-upgrade test share it.
package workload

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/arbordb/arbor/cmd/internal/client"
	"github.com/arbordb/arbor/cmd/internal/history"
)

// Config describes the workload.
type Config struct {
	Clients int     // concurrent clients
	Roaming int     // of which this many send each operation to a random node
	Rate    float64 // operations per second per client; 0: as fast as answers come
	Nodes   []string
	Client  client.Config
	Seed    uint64
	// Generation is how long a set of keys is used before the clients
	// move to fresh ones. It bounds each key's history (the lists grow)
	// and how many indeterminate operations one check must place.
	Generation time.Duration
	// Keys per generation of registers and lists; counters in use at
	// once (each is retired after bitsPerKey increments, see counters).
	Registers, Counters, Lists int
	// LocalReads is the fraction of reads sent with consistency=local.
	// They are recorded as local and not judged, unless JudgeLocal.
	LocalReads float64
	// JudgeLocal records local reads as if linearizable: the stale-read
	// self-test, which a correct checker must fail.
	JudgeLocal bool
}

// DefaultConfig is the workload of make chaos.
func DefaultConfig() Config {
	return Config{
		Clients:    11,
		Roaming:    2,
		Rate:       15,
		Generation: 30 * time.Second,
		Registers:  3,
		Counters:   2,
		Lists:      2,
	}
}

// Validate reports a configuration that cannot run.
func (c Config) Validate() error {
	switch {
	case c.Clients < 1:
		return fmt.Errorf("workload: need at least one client")
	case c.Roaming < 0 || c.Roaming > c.Clients:
		return fmt.Errorf("workload: roaming clients must be between 0 and the number of clients")
	case len(c.Nodes) == 0:
		return fmt.Errorf("workload: no nodes")
	case c.Registers < 1 || c.Counters < 1 || c.Lists < 1:
		return fmt.Errorf("workload: need at least one key of each kind")
	case c.Generation <= 0:
		return fmt.Errorf("workload: the key generation must be positive")
	case c.LocalReads < 0 || c.LocalReads > 1:
		return fmt.Errorf("workload: local reads must be a fraction between 0 and 1")
	}
	return nil
}

// Run runs the clients until ctx is done; an operation in flight then is
// finished (within the client timeout) and recorded.
func Run(ctx context.Context, cfg Config, rec *history.Recorder) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	var wg sync.WaitGroup
	ctrs := newCounters(cfg.Counters)
	for id := range cfg.Clients {
		cl := client.New(cfg.Client)
		w := &worker{
			cfg:      cfg,
			rng:      rand.New(rand.NewPCG(cfg.Seed, uint64(id))),
			exec:     &Exec{Client: cl, Recorder: rec, ID: id},
			counters: ctrs,
		}
		wg.Go(func() {
			defer cl.Close()
			w.run(ctx)
		})
	}
	wg.Wait()
	return nil
}

type worker struct {
	cfg      Config
	rng      *rand.Rand
	exec     *Exec
	counters *counters
	seq      int
}

// The operation mix, in relative weights: reads and compare-and-sets on
// registers dominate, because that is where staleness shows.
var mix = []struct {
	weight int
	do     func(w *worker, ctx context.Context, node string, gen int)
}{
	{14, (*worker).readRegister},
	{6, (*worker).write},
	{4, (*worker).patch},
	{2, (*worker).delete},
	{14, (*worker).cas},
	{6, (*worker).readCounter},
	{10, (*worker).incr},
	{6, (*worker).readList},
	{10, (*worker).append},
}

var totalWeight = func() int {
	t := 0
	for _, m := range mix {
		t += m.weight
	}
	return t
}()

func (w *worker) run(ctx context.Context) {
	var tick <-chan time.Time
	if w.cfg.Rate > 0 {
		t := time.NewTicker(time.Duration(float64(time.Second) / w.cfg.Rate))
		defer t.Stop()
		tick = t.C
	}
	for {
		if tick != nil {
			select {
			case <-ctx.Done():
				return
			case <-tick:
			}
		} else if ctx.Err() != nil {
			return
		}
		node := w.node()
		gen := int(time.Duration(w.exec.Recorder.Now()) / w.cfg.Generation)
		pick := w.rng.IntN(totalWeight)
		for _, m := range mix {
			if pick < m.weight {
				m.do(w, ctx, node, gen)
				break
			}
			pick -= m.weight
		}
		if o := w.exec.Last; o == history.Fail || o == history.Unknown {
			// Back off after an error, as a client would: a node that
			// refuses or drops connections at once (stopping, or behind
			// Docker's port proxy) would otherwise get hundreds of
			// requests a second, each one more indeterminate operation
			// for the checker to place.
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
		}
	}
}

// backoff is the pause after an operation that failed or whose outcome
// is unknown.
const backoff = 500 * time.Millisecond

// node picks the node for the next operation. Most clients stay with one
// home node, like an application behind a sticky load balancer; were
// every request sent to a random node, a node that hangs (paused, cut
// off) would within a second hold every client waiting on it, and the
// majority's progress would go unmeasured. The roaming clients pick a
// node per operation, so one client's operations also cross nodes.
func (w *worker) node() string {
	if w.exec.ID >= w.cfg.Clients-w.cfg.Roaming {
		return w.cfg.Nodes[w.rng.IntN(len(w.cfg.Nodes))]
	}
	return w.cfg.Nodes[w.exec.ID%len(w.cfg.Nodes)]
}

// value is a new value no other operation of the run writes.
func (w *worker) value() string {
	w.seq++
	return fmt.Sprintf("c%d-%d", w.exec.ID, w.seq)
}

func (w *worker) key(kind string, gen, n int) string {
	return fmt.Sprintf("%s/g%d/k%d", kind, gen, w.rng.IntN(n))
}

func (w *worker) local() bool {
	return w.cfg.LocalReads > 0 && w.rng.Float64() < w.cfg.LocalReads
}

func (w *worker) readRegister(ctx context.Context, node string, gen int) {
	w.exec.Read(ctx, node, w.key("reg", gen, w.cfg.Registers), history.Register, w.local(), w.cfg.JudgeLocal)
}

func (w *worker) write(ctx context.Context, node string, gen int) {
	w.exec.Write(ctx, node, w.key("reg", gen, w.cfg.Registers), fmt.Sprintf("%q", w.value()))
}

func (w *worker) patch(ctx context.Context, node string, gen int) {
	w.exec.Patch(ctx, node, w.key("reg", gen, w.cfg.Registers), fmt.Sprintf("%q", w.value()))
}

func (w *worker) delete(ctx context.Context, node string, gen int) {
	w.exec.Delete(ctx, node, w.key("reg", gen, w.cfg.Registers))
}

// cas is a read-modify-write as firebase-admin-go's Transaction does it:
// read the value and its ETag, then put a new value if-match that ETag.
// Both steps are recorded; the read is an ordinary read.
func (w *worker) cas(ctx context.Context, node string, gen int) {
	key := w.key("reg", gen, w.cfg.Registers)
	r := w.exec.Read(ctx, node, key, history.Register, false, false)
	if r.Outcome != history.OK || r.ETag == "" {
		return
	}
	// The write may go to another node than the read: the ETag is the
	// same on every replica.
	node = w.node()
	w.exec.CAS(ctx, node, key, r.Out, r.ETag, fmt.Sprintf("%q", w.value()))
}

func (w *worker) readCounter(ctx context.Context, node string, _ int) {
	key := w.counters.current(w.rng.IntN(w.cfg.Counters))
	w.exec.Read(ctx, node, key, history.Counter, w.local(), w.cfg.JudgeLocal)
}

func (w *worker) incr(ctx context.Context, node string, _ int) {
	key, delta := w.counters.nextIncr(w.rng.IntN(w.cfg.Counters))
	w.exec.Incr(ctx, node, key, delta)
}

func (w *worker) readList(ctx context.Context, node string, gen int) {
	w.exec.Read(ctx, node, w.key("list", gen, w.cfg.Lists), history.List, w.local(), w.cfg.JudgeLocal)
}

func (w *worker) append(ctx context.Context, node string, gen int) {
	w.exec.Append(ctx, node, w.key("list", gen, w.cfg.Lists), w.value())
}

// KindOf returns the kind of a workload key from its first segment.
func KindOf(key string) (history.Kind, bool) {
	for i := 0; i < len(key); i++ {
		if key[i] == '/' {
			switch key[:i] {
			case "reg":
				return history.Register, true
			case "ctr":
				return history.Counter, true
			case "list":
				return history.List, true
			}
			return "", false
		}
	}
	return "", false
}
