package main

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// loadConfig shapes the load.
type loadConfig struct {
	Nodes     []string          // node ids, in order
	Addrs     map[string]string // node → HTTPS host:port
	CA        *x509.CertPool
	Secret    string
	Clients   int // concurrent workers
	Rate      int // operations per second, all workers together
	Registers int // shared keys
}

// load is a running workload: Clients workers, each sending one request at
// a time, paced to Rate in all, and recording every operation.
type load struct {
	cfg   loadConfig
	start time.Time
	stop  context.CancelFunc
	wg    sync.WaitGroup
	mu    sync.Mutex
	ops   []op // filled by the workers when they end
	ids   int
}

// startLoad starts the workers; since reports the run's clock.
func startLoad(ctx context.Context, cfg loadConfig) *load {
	ctx, cancel := context.WithCancel(ctx)
	l := &load{cfg: cfg, start: time.Now(), stop: cancel}
	for w := range cfg.Clients {
		l.wg.Go(func() { l.worker(ctx, w) })
	}
	return l
}

// since is the run's clock: nanoseconds since the load started.
func (l *load) since() int64 { return int64(time.Since(l.start)) }

// finish stops the workers, waits for their last requests and returns
// the history, ordered by call time per worker.
func (l *load) finish() []op {
	l.stop()
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ops
}

// nextID hands out operation ids.
func (l *load) nextID() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ids++
	return l.ids
}

// worker is one client. It starts on its own node and moves to the next
// one whenever its node refuses connections or answers 503, the way a
// load balancer drops a node that is not ready.
func (l *load) worker(ctx context.Context, w int) {
	cl := newClient(l.cfg.Addrs, l.cfg.CA, l.cfg.Secret)
	defer cl.close()
	rng := rand.New(rand.NewPCG(uint64(w), 0x5eed))
	node := w % len(l.cfg.Nodes)
	interval := time.Duration(float64(time.Second) * float64(l.cfg.Clients) / float64(max(l.cfg.Rate, 1)))
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var mine []op
	for seq := 1; ; seq++ {
		select {
		case <-ctx.Done():
			l.mu.Lock()
			l.ops = append(l.ops, mine...)
			l.mu.Unlock()
			return
		case <-tick.C:
		}
		o := l.next(rng, w, seq)
		o.Node = l.cfg.Nodes[node]
		l.exec(ctx, cl, &o)
		if o.Outcome != ok {
			node = (node + 1) % len(l.cfg.Nodes)
		}
		mine = append(mine, o)
	}
}

// next draws the worker's next operation: register writes and reads (the
// linearizability check), and write-once PUTs, PATCHes and POSTs — every
// entry kind — whose acknowledgements are checked at the end.
func (l *load) next(rng *rand.Rand, w, seq int) op {
	value := strconv.Quote(fmt.Sprintf("c%d-%d", w, seq))
	o := op{ID: l.nextID(), Client: w, Value: value}
	switch p := rng.IntN(100); {
	case p < 30:
		o.Kind, o.Key = register, fmt.Sprintf("reg/k%d", rng.IntN(l.cfg.Registers))
	case p < 60:
		o.Kind, o.Key, o.Read, o.Value = register, fmt.Sprintf("reg/k%d", rng.IntN(l.cfg.Registers)), true, ""
	case p < 85:
		o.Kind, o.Key = ack, fmt.Sprintf("acks/c%d/s%d", w, seq)
	case p < 93:
		o.Kind, o.Key = patch, fmt.Sprintf("patch/c%d/s%d", w, seq)
	default:
		o.Kind, o.Key = push, fmt.Sprintf("push/c%d", w)
	}
	return o
}

// exec sends o and records what came back.
func (l *load) exec(ctx context.Context, cl *client, o *op) {
	method, path, body := http.MethodPut, "/upgrade/"+o.Key+".json", o.Value
	switch {
	case o.Read:
		method, body = http.MethodGet, ""
	case o.Kind == patch:
		dir, field, _ := strings.Cut(strings.TrimPrefix(o.Key, "patch/"), "/")
		method, path, body = http.MethodPatch, "/upgrade/patch/"+dir+".json", "{"+strconv.Quote(field)+":"+o.Value+"}"
	case o.Kind == push:
		method = http.MethodPost
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), requestTimeout)
	defer cancel()
	o.Call = l.since()
	code, resp, err := cl.do(rctx, o.Node, method, path, body)
	o.Return = l.since()
	o.Status = code
	switch {
	case err != nil && notSent(err):
		o.Outcome, o.Error = fail, err.Error()
	case err != nil:
		o.Outcome, o.Error = unknown, err.Error()
	case code == http.StatusOK:
		o.Outcome = ok
		if o.Read {
			o.Out = strings.TrimSpace(string(resp))
		}
		if o.Kind == push {
			var named struct{ Name string }
			if json.Unmarshal(resp, &named) != nil || named.Name == "" {
				o.Outcome, o.Error = unknown, "POST answered 200 without a name: "+string(resp)
			}
			o.Name = named.Name
		}
	default:
		// 503 during a leadership transfer or a node's stop: may or may
		// not have happened. Any other status is a finding (see check).
		o.Outcome, o.Error = unknown, strings.TrimSpace(string(resp))
	}
}
