package cluster

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// memNetwork is an in-process network for cluster tests: Raft over
// raft.InmemTransport and RPCs as direct calls to the peer's handler (its
// request and reply still go through the wire encoding), with partitions.
type memNetwork struct {
	mu  sync.Mutex
	eps map[raft.ServerAddress]*memEndpoint
	// cut holds the severed links, both directions of each.
	cut map[[2]raft.ServerAddress]bool
	// loseReplies makes every RPC reach its peer, which acts on it, and
	// then fail as a connection that broke before the reply came.
	loseReplies atomic.Bool
}

func newMemNetwork() *memNetwork {
	return &memNetwork{eps: map[raft.ServerAddress]*memEndpoint{}, cut: map[[2]raft.ServerAddress]bool{}}
}

// factory returns a deps.network that creates an endpoint at addr.
func (m *memNetwork) factory(addr raft.ServerAddress) func(Config, *slog.Logger) (network, error) {
	return func(Config, *slog.Logger) (network, error) {
		_, trans := raft.NewInmemTransportWithTimeout(addr, time.Second)
		ep := &memEndpoint{net: m, addr: addr, trans: trans}
		m.mu.Lock()
		defer m.mu.Unlock()
		if old, ok := m.eps[addr]; ok && !old.closed.Load() {
			return nil, fmt.Errorf("memnet: %s in use", addr)
		}
		for a, other := range m.eps {
			if m.cut[[2]raft.ServerAddress{addr, a}] {
				continue
			}
			trans.Connect(a, other.trans)
			other.trans.Connect(addr, trans)
		}
		m.eps[addr] = ep
		return ep, nil
	}
}

// isolate cuts every link of addr.
func (m *memNetwork) isolate(addr raft.ServerAddress) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for a, other := range m.eps {
		if a == addr {
			continue
		}
		m.cut[[2]raft.ServerAddress{addr, a}] = true
		m.cut[[2]raft.ServerAddress{a, addr}] = true
		if ep := m.eps[addr]; ep != nil {
			ep.trans.Disconnect(a)
		}
		other.trans.Disconnect(addr)
	}
}

// heal restores every link.
func (m *memNetwork) heal() {
	m.mu.Lock()
	defer m.mu.Unlock()
	clear(m.cut)
	for a, ea := range m.eps {
		for b, eb := range m.eps {
			if a != b {
				ea.trans.Connect(b, eb.trans)
			}
		}
	}
}

// memEndpoint is one node's attachment to a memNetwork.
type memEndpoint struct {
	net     *memNetwork
	addr    raft.ServerAddress
	trans   *raft.InmemTransport
	handler atomic.Pointer[rpcHandler]
	closed  atomic.Bool
	calls   atomic.Uint64 // RPCs this endpoint sent
}

// Transport returns the endpoint's Raft transport without pipelining:
// hashicorp/raft (1.7.3 and 1.8.0) logs a failed pipeline send reading the
// peer's address without its lock, which races with an address update (a
// node restarted on a new address) and fails -race runs. Production has
// the same benign race in a log line; see DESIGN.md.
func (e *memEndpoint) Transport() raft.Transport { return noPipeline{e.trans} }

// noPipeline is an InmemTransport that refuses pipelining, so Raft falls
// back to one AppendEntries at a time.
type noPipeline struct{ *raft.InmemTransport }

func (noPipeline) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	return nil, raft.ErrPipelineReplicationNotSupported
}

func (e *memEndpoint) Addr() raft.ServerAddress { return e.addr }
func (e *memEndpoint) Serve(h rpcHandler)       { e.handler.Store(&h) }

// Close detaches the endpoint, like a process that died.
func (e *memEndpoint) Close() error {
	if e.closed.Swap(true) {
		return nil
	}
	e.net.mu.Lock()
	defer e.net.mu.Unlock()
	for a, other := range e.net.eps {
		if a != e.addr {
			other.trans.Disconnect(e.addr)
		}
	}
	if e.net.eps[e.addr] == e {
		delete(e.net.eps, e.addr)
	}
	return e.trans.Close()
}

// RoundTrip calls the peer's handler directly, unless the link is cut or
// the peer is gone (then the request was not sent).
func (e *memEndpoint) RoundTrip(ctx context.Context, addr raft.ServerAddress, op rpcOp, payload []byte) ([]byte, error) {
	e.calls.Add(1)
	e.net.mu.Lock()
	peer := e.net.eps[addr]
	cut := e.net.cut[[2]raft.ServerAddress{e.addr, addr}]
	e.net.mu.Unlock()
	if e.closed.Load() || peer == nil || peer.closed.Load() || cut {
		return nil, fmt.Errorf("memnet: %s unreachable: %w", addr, errNotSent)
	}
	h := peer.handler.Load()
	if h == nil {
		return encodeError(fmt.Errorf("node starting: %w", errRetry)), nil
	}
	reply := (*h)(ctx, op, append([]byte(nil), payload...))
	if e.net.loseReplies.Load() {
		return nil, fmt.Errorf("memnet: connection to %s lost while reading the reply: %w", addr, io.ErrUnexpectedEOF)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memnet: no reply from %s: %w", addr, err)
	}
	return append([]byte(nil), reply...), nil
}

// fakeGossip is a discovery shared by a test's nodes: everyone sees the
// same peers at once; a node that closes without leaving is "failed".
type fakeGossip struct {
	mu       sync.Mutex
	peers    map[raft.ServerID]*peer
	notifies map[raft.ServerID]func()
}

func newFakeGossip() *fakeGossip {
	return &fakeGossip{peers: map[raft.ServerID]*peer{}, notifies: map[raft.ServerID]func(){}}
}

// factory is a deps.discovery.
func (g *fakeGossip) factory(cfg Config, meta nodeMeta, _ *slog.Logger, notify func()) (discovery, error) {
	id := raft.ServerID(cfg.NodeID)
	g.mu.Lock()
	g.peers[id] = &peer{ID: id, GossipAddr: "fake/" + cfg.NodeID, Status: peerAlive, Since: time.Now(), Meta: meta}
	g.notifies[id] = notify
	g.mu.Unlock()
	g.notifyAll()
	return &fakeMember{g: g, id: id}, nil
}

// peer returns what everyone sees of id.
func (g *fakeGossip) peer(id raft.ServerID) peer {
	g.mu.Lock()
	defer g.mu.Unlock()
	if p := g.peers[id]; p != nil {
		return *p
	}
	return peer{}
}

// setStatus changes what everyone sees of id.
func (g *fakeGossip) setStatus(id raft.ServerID, st peerStatus) {
	g.mu.Lock()
	if p := g.peers[id]; p != nil && p.Status != st {
		p.Status, p.Since = st, time.Now()
	}
	g.mu.Unlock()
	g.notifyAll()
}

func (g *fakeGossip) notifyAll() {
	g.mu.Lock()
	fns := make([]func(), 0, len(g.notifies))
	for _, fn := range g.notifies {
		fns = append(fns, fn)
	}
	g.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

type fakeMember struct {
	g  *fakeGossip
	id raft.ServerID
}

func (f *fakeMember) Peers() []peer {
	f.g.mu.Lock()
	defer f.g.mu.Unlock()
	out := make([]peer, 0, len(f.g.peers))
	for _, p := range f.g.peers {
		out = append(out, *p)
	}
	return out
}

func (f *fakeMember) Joined() bool {
	for _, p := range f.Peers() {
		if p.ID != f.id && p.Status == peerAlive {
			return true
		}
	}
	return false
}

func (f *fakeMember) Advertise(meta nodeMeta) {
	f.g.mu.Lock()
	p := f.g.peers[f.id]
	changed := p.Meta != meta
	p.Meta = meta
	f.g.mu.Unlock()
	if changed {
		f.g.notifyAll()
	}
}

func (f *fakeMember) Leave(time.Duration) error {
	f.g.setStatus(f.id, peerLeft)
	return nil
}

func (f *fakeMember) Close() error {
	f.g.mu.Lock()
	delete(f.g.notifies, f.id)
	if p := f.g.peers[f.id]; p.Status == peerAlive {
		p.Status, p.Since = peerDead, time.Now()
	}
	f.g.mu.Unlock()
	f.g.notifyAll()
	return nil
}
