// Package presence runs the chaos run's presence watchers: clients of the
// realtime protocol that hold connections with an onDisconnect operation
// registered, moving from node to node, while the nemesis kills, pauses,
// stops and cuts off nodes. Check then judges, once the cluster is quiet,
// that every registered operation ran exactly once, and never while its
// connection was still served.
package presence

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/arbordb/arbor/cmd/internal/client"
)

// Config is what the watchers need.
type Config struct {
	// Watchers is how many connections are held at once.
	Watchers int
	// Nodes are the node ids, each watcher's next connection going to the
	// next one.
	Nodes []string
	// Client reaches the nodes as admin.
	Client *client.Client
	// Root is the top-level key under which the operations write
	// (Root/<watcher>-<connection>).
	Root string
	// Hold bounds how long a connection is held before its client
	// leaves, unless a fault ends it first.
	MinHold, MaxHold time.Duration
	// Seed makes the holds and the nodes chosen repeatable.
	Seed uint64
}

// Registration says what the answer to a registration was.
type Registration string

const (
	// Registered: answered ok; the operation must run exactly once.
	Registered Registration = "ok"
	// Unknown: no answer, or an error status (a write whose outcome is
	// unknown answers one too): the operation may run, at most once.
	Unknown Registration = "unknown"
)

// Record is what a watcher knows of one connection.
type Record struct {
	Key  string       `json:"key"`  // the operation writes Root/Key
	Node string       `json:"node"` // where the connection was held
	Reg  Registration `json:"registration"`
	// Served is when the client sent the last request the server
	// answered (Unix milliseconds, rounded down): the server was still
	// serving the connection after that, so the operation may not have
	// run before. (When the answer arrived says less: a node paused
	// after writing it may deliver it later.)
	Served int64 `json:"served_ms"`
	// Ended says how the connection ended: "left" (the client closed
	// it) or the error that ended it.
	Ended string `json:"ended"`
}

// Set is the running watchers.
type Set struct {
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	records []Record
}

// pingEvery is how often a held connection asks for the server's stats
// (s), so that Heard follows the server closely.
const pingEvery = 250 * time.Millisecond

// dialTimeout bounds connecting and registering on one node.
const dialTimeout = 5 * time.Second

// Start starts cfg.Watchers watchers; they run until Stop.
func Start(ctx context.Context, cfg Config) *Set {
	ctx, cancel := context.WithCancel(ctx)
	s := &Set{cancel: cancel}
	for w := range cfg.Watchers {
		rng := rand.New(rand.NewPCG(cfg.Seed, uint64(w)))
		s.wg.Go(func() { s.watch(ctx, cfg, w, rng) })
	}
	return s
}

// Stop ends every connection as a client leaving, waits for the watchers
// and returns what they recorded.
func (s *Set) Stop() []Record {
	s.cancel()
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.records
}

// watch holds connections one after another until ctx ends.
func (s *Set) watch(ctx context.Context, cfg Config, w int, rng *rand.Rand) {
	for c := 0; ctx.Err() == nil; c++ {
		node := cfg.Nodes[(w+c)%len(cfg.Nodes)]
		hold := cfg.MinHold + time.Duration(rng.Int64N(int64(cfg.MaxHold-cfg.MinHold)+1))
		rec, ok := hold1(ctx, cfg, node, fmt.Sprintf("w%d-%d", w, c), hold)
		if ok {
			s.mu.Lock()
			s.records = append(s.records, rec)
			s.mu.Unlock()
		}
		if !ok || rec.Reg != Registered {
			sleep(ctx, time.Second) // the node is down or cut off: try the next
		}
	}
}

// hold1 connects to node, registers the operation and holds the
// connection for hold, or until it ends. ok is false when nothing was
// asked of the cluster (the connection could not be made).
func hold1(ctx context.Context, cfg Config, node, key string, hold time.Duration) (rec Record, ok bool) {
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	start := time.Now()
	rc, err := cfg.Client.DialRealtime(dctx, node, "chaos")
	if err != nil {
		return Record{}, false
	}
	rec = Record{Key: key, Node: node, Reg: Unknown, Served: start.UnixMilli()}
	sent := time.Now()
	status, err := rc.Do(dctx, "om", map[string]any{"p": "/" + cfg.Root + "/" + key, "d": map[string]any{
		"runs": map[string]any{".sv": map[string]any{"increment": 1}},
		"at":   map[string]any{".sv": "timestamp"},
	}})
	if err == nil {
		rec.Served = sent.UnixMilli()
		if status == "ok" {
			rec.Reg = Registered
		}
	}
	if rec.Reg == Registered {
		until := time.After(hold)
		tick := time.NewTicker(pingEvery)
	held:
		for {
			select {
			case <-rc.Done():
				break held
			case <-until:
				break held
			case <-ctx.Done():
				break held
			case <-tick.C:
				pctx, cancel := context.WithTimeout(ctx, pingEvery)
				sent := time.Now()
				if _, err := rc.Do(pctx, "s", map[string]any{"c": map[string]int{"chaos": 1}}); err == nil {
					rec.Served = sent.UnixMilli()
				}
				cancel()
			}
		}
		tick.Stop()
	}
	select {
	case <-rc.Done():
		rec.Ended = fmt.Sprint(rc.Err())
	default:
		rec.Ended = "left"
		rc.Close()
	}
	return rec, true
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
