package model

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/arbordb/arbor/cmd/internal/history"
)

// Options tune Check.
type Options struct {
	// Timeout bounds the search for one key; a key not decided in time
	// is reported as porcupine.Unknown. Zero means no bound.
	Timeout time.Duration
	// VizDir, when set, receives porcupine's HTML visualization of every
	// key that is not linearizable (or not decided in time).
	VizDir string
	// Parallel is how many keys are checked at once (default GOMAXPROCS).
	Parallel int
	// MemoryLimit aborts a search (verdict Unknown) when the heap grows
	// past it: an exhaustive search can take gigabytes a second, and must
	// not take the machine with it. Default DefaultMemoryLimit.
	MemoryLimit uint64
}

// DefaultMemoryLimit is the heap size at which a search is given up.
const DefaultMemoryLimit = 4 << 30

// KeyResult is the verdict for one key.
type KeyResult struct {
	Key    string
	Kind   history.Kind
	Stats  Stats
	Result porcupine.CheckResult
	Took   time.Duration
	// Viz is the path of the HTML visualization, if one was written.
	Viz string
	// Err is a problem that prevented the check (not a verdict).
	Err error
	// Aborted says why a search was given up (Result is then Unknown).
	Aborted string
}

// OK reports whether the key's history is linearizable.
func (r KeyResult) OK() bool {
	return r.Err == nil && r.Result == porcupine.Ok
}

// Check partitions ops by key (linearizability is compositional: a
// history is linearizable iff each key's sub-history is) and checks each
// key against the model of its kind. Results are sorted by key.
func Check(ops []history.Op, o Options) []KeyResult {
	byKey := map[string][]history.Op{}
	for _, op := range ops {
		byKey[op.Key] = append(byKey[op.Key], op)
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	slices.Sort(keys)

	parallel := o.Parallel
	if parallel <= 0 {
		parallel = runtime.GOMAXPROCS(0)
	}
	results := make([]KeyResult, len(keys))
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, k := range keys {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			results[i] = CheckKey(k, byKey[k], o)
		})
	}
	wg.Wait()
	slices.SortFunc(results, func(a, b KeyResult) int { return cmp.Compare(a.Key, b.Key) })
	return results
}

// CheckKey checks the history of one key.
func CheckKey(key string, ops []history.Op, o Options) KeyResult {
	r := KeyResult{Key: key}
	if len(ops) == 0 {
		r.Result = porcupine.Ok
		return r
	}
	r.Kind = ops[0].Kind
	for _, op := range ops {
		if op.Kind != r.Kind {
			r.Err = fmt.Errorf("key %s is used as both %s and %s", key, r.Kind, op.Kind)
			return r
		}
	}
	m, ok := ModelFor(r.Kind)
	if !ok {
		r.Err = fmt.Errorf("key %s: no model for kind %q", key, r.Kind)
		return r
	}
	pops, stats := Operations(ops)
	r.Stats = stats
	start := time.Now()
	r.Result, _, r.Aborted = search(m, pops, o, false)
	r.Took = time.Since(start)
	if r.Result == porcupine.Unknown && r.Aborted == "" {
		r.Aborted = fmt.Sprintf("undecided within %s", o.Timeout)
	}
	if r.Result == porcupine.Illegal && o.VizDir != "" {
		// Only a failing key pays for the partial linearizations the
		// visualization shows; an undecided one would only repeat its
		// search.
		res, info, why := search(m, pops, o, true)
		if res == porcupine.Unknown {
			r.Err = fmt.Errorf("visualization of %s: %s", key, why)
			return r
		}
		r.Viz = filepath.Join(o.VizDir, fileName(key)+".html")
		if err := os.MkdirAll(o.VizDir, 0o755); err != nil {
			r.Err = fmt.Errorf("visualization of %s: %w", key, err)
		} else if err := porcupine.VisualizePath(m, info, r.Viz); err != nil {
			r.Err = fmt.Errorf("visualization of %s: %w", key, err)
		}
	}
	return r
}

// search runs porcupine (verbose: with the data a visualization needs)
// under a memory watchdog.
func search(m porcupine.Model, pops []porcupine.Operation, o Options, verbose bool) (porcupine.CheckResult, porcupine.LinearizationInfo, string) {
	limit := o.MemoryLimit
	if limit == 0 {
		limit = DefaultMemoryLimit
	}
	abort := new(atomic.Bool)
	done := make(chan struct{})
	var reason string
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			metrics.Read(sample)
			if sample[0].Value.Kind() == metrics.KindUint64 && sample[0].Value.Uint64() > limit {
				reason = fmt.Sprintf("search given up: heap over %d MiB", limit>>20)
				abort.Store(true)
				return
			}
		}
	})
	var res porcupine.CheckResult
	var info porcupine.LinearizationInfo
	if verbose {
		res, info = porcupine.CheckOperationsVerbose(guard(m, abort), pops, o.Timeout)
	} else {
		res = porcupine.CheckOperationsTimeout(guard(m, abort), pops, o.Timeout)
	}
	close(done)
	wg.Wait()
	if abort.Load() {
		// Every step failed from the abort on, so the verdict means
		// nothing.
		return porcupine.Unknown, info, reason
	}
	return res, info, ""
}

// guard makes every step fail once abort is set, which unwinds
// porcupine's search quickly.
func guard(m porcupine.Model, abort *atomic.Bool) porcupine.Model {
	step := m.Step
	m.Step = func(s, in, out any) (bool, any) {
		if abort.Load() {
			return false, s
		}
		return step(s, in, out)
	}
	return m
}

// fileName turns a key into a file name.
func fileName(key string) string {
	return strings.NewReplacer("/", "_", "\\", "_", ".", "_").Replace(key)
}
