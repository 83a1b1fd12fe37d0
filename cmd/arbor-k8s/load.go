package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/arbordb/arbor/cmd/internal/client"
)

// The load: writers that PUT numbered keys under /k8s/<run>, some through
// the client Service, the others straight to the pods (whichever are
// ready, in turn). A write is retried on the same key (a PUT of the same
// value is idempotent) after a 503 — the documented answer of a node that
// has no leader or is not caught up — or a transport error, a bounded
// number of times; any other 5xx is a failure of the scenario.
const (
	writeInterval = 25 * time.Millisecond // per writer: 40 writes/s at most
	writeAttempts = 40
	retryPause    = 100 * time.Millisecond
)

// loadStats is what the writers saw.
type loadStats struct {
	mu        sync.Mutex
	acks      map[string]time.Time // key -> when acknowledged
	acked     []time.Time
	retried   int            // 503s and transport errors that were retried
	status503 int            // of which 503
	failures  map[string]int // answers that fail the run, e.g. "500"
	given     int            // writes given up after writeAttempts
	samples   []string       // a few failure texts
}

type load struct {
	stats  loadStats
	prefix string
	stop   context.CancelFunc
	wg     sync.WaitGroup
}

// startLoad starts viaService writers through the Service and viaPods
// straight to the pods. Each stops at maxWrites or when stopped.
func startLoad(ctx context.Context, cfg client.Config, w *watcher, prefix string, viaService, viaPods, maxWrites int) *load {
	ctx, cancel := context.WithCancel(ctx)
	l := &load{prefix: prefix, stop: cancel}
	l.stats.acks = map[string]time.Time{}
	l.stats.failures = map[string]int{}
	for i := range viaService + viaPods {
		cl := client.New(cfg)
		service := i < viaService
		l.wg.Go(func() {
			defer cl.Close()
			l.writer(ctx, cl, w, i, service, maxWrites)
		})
	}
	return l
}

// finish stops the writers and waits for their last writes.
func (l *load) finish() {
	l.stop()
	l.wg.Wait()
}

func (l *load) writer(ctx context.Context, cl *client.Client, w *watcher, id int, service bool, maxWrites int) {
	tick := time.NewTicker(writeInterval)
	defer tick.Stop()
	turn := id
	for seq := 0; seq < maxWrites && ctx.Err() == nil; seq++ {
		key := fmt.Sprintf("w%d-%d", id, seq)
		path := "/k8s/" + l.prefix + "/" + key + ".json"
		done := false
		for attempt := 0; attempt < writeAttempts && !done && ctx.Err() == nil; attempt++ {
			node := serviceHost
			if !service {
				ready := w.ready()
				if len(ready) == 0 {
					pause(ctx, retryPause)
					continue
				}
				turn++
				node = podHost(ready[turn%len(ready)])
			}
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), requestTimeout)
			r, err := cl.Do(rctx, node, http.MethodPut, path, strconv.Itoa(seq))
			cancel()
			switch {
			case err == nil && r.Status == http.StatusOK:
				l.stats.ack(key, time.Now())
				done = true
			case err == nil && r.Status == http.StatusServiceUnavailable:
				l.stats.retry(true)
				pause(ctx, retryPause)
			case err != nil:
				l.stats.retry(false)
				pause(ctx, retryPause)
			default:
				l.stats.fail(strconv.Itoa(r.Status), fmt.Sprintf("PUT %s on %s: %d %s", path, node, r.Status, r.Body))
				done = true
			}
		}
		if !done && ctx.Err() == nil {
			l.stats.fail("given up", fmt.Sprintf("PUT %s: no answer after %d attempts", path, writeAttempts))
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
}

func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func (s *loadStats) ack(key string, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.acks[key] = at
	s.acked = append(s.acked, at)
}

func (s *loadStats) retry(is503 bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.retried++
	if is503 {
		s.status503++
	}
}

func (s *loadStats) fail(kind, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures[kind]++
	if len(s.samples) < 5 {
		s.samples = append(s.samples, text)
	}
}

// gap is the longest stretch of [from, to] without an acknowledged
// write, and when it began.
func (s *loadStats) gap(from, to time.Time) (time.Duration, time.Time) {
	s.mu.Lock()
	times := slices.Clone(s.acked)
	s.mu.Unlock()
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	prev, longest, at := from, time.Duration(0), from
	for _, t := range append(times, to) {
		if t.Before(from) {
			continue
		}
		if t.After(to) {
			t = to
		}
		if d := t.Sub(prev); d > longest {
			longest, at = d, prev
		}
		prev = t
	}
	return longest, at
}

// summary is one line of what the writers saw.
func (s *loadStats) summary() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	failures := "none"
	if len(s.failures) > 0 {
		failures = fmt.Sprint(s.failures)
	}
	return fmt.Sprintf("%d writes acknowledged, %d retries (%d after a 503, the rest after a transport error), other failures: %s",
		len(s.acks), s.retried, s.status503, failures)
}

// failed returns the failures that fail a scenario.
func (s *loadStats) failed() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.failures) == 0 {
		return nil
	}
	out := []string{fmt.Sprintf("writes failed other than with a retried 503: %v", s.failures)}
	return append(out, s.samples...)
}

// missing checks that every acknowledged write is on every pod in pods,
// read with consistency=local (each pod's own state).
func (l *load) missing(ctx context.Context, cl *client.Client, pods []string) []string {
	l.stats.mu.Lock()
	acks := make([]string, 0, len(l.stats.acks))
	for k := range l.stats.acks {
		acks = append(acks, k)
	}
	l.stats.mu.Unlock()
	var out []string
	for _, p := range pods {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		r, err := cl.Do(rctx, podHost(p), http.MethodGet, "/k8s/"+l.prefix+".json?consistency=local", "")
		cancel()
		if err != nil || r.Status != http.StatusOK {
			out = append(out, fmt.Sprintf("%s: reading the writes: %v %d", p, err, r.Status))
			continue
		}
		var got map[string]json.RawMessage
		if err := json.Unmarshal(r.Body, &got); err != nil && len(acks) > 0 {
			out = append(out, fmt.Sprintf("%s: %v", p, err))
			continue
		}
		lost := 0
		first := ""
		for _, k := range acks {
			if _, ok := got[k]; !ok {
				lost++
				if first == "" {
					first = k
				}
			}
		}
		if lost > 0 {
			out = append(out, fmt.Sprintf("%s lacks %d of %d acknowledged writes (e.g. %s)", p, lost, len(acks), first))
		}
	}
	return out
}

// acked is the number of acknowledged writes.
func (s *loadStats) ackedCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.acks)
}
