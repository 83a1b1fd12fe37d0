package cluster

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/hashicorp/raft"
)

// gossip is the memberlist-backed discovery: SWIM failure detection, and
// each node's nodeMeta spread as memberlist node metadata. Gossip is
// encrypted (AES-GCM) with the cluster's gossip key.
type gossip struct {
	ml     *memberlist.Memberlist
	log    *slog.Logger
	notify func()
	self   string
	join   []string
	retry  time.Duration
	// keys is memberlist's keyring (nil: gossip in clear).
	keys *gossipKeyring

	mu    sync.Mutex
	meta  []byte
	peers map[string]*peer

	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

// newGossip starts memberlist on cfg.GossipAddr advertising meta, and
// keeps trying cfg.Join while this node has met nobody. notify is called
// (without blocking) whenever a peer appears, changes or goes away.
func newGossip(cfg Config, meta nodeMeta, logger *slog.Logger, notify func()) (discovery, error) {
	enc, err := meta.encode()
	if err != nil {
		return nil, err
	}
	g := &gossip{
		log:    logger.With("component", "gossip"),
		notify: notify,
		self:   cfg.NodeID,
		join:   cfg.Join,
		retry:  cfg.Timing.JoinRetry,
		meta:   enc,
		peers:  map[string]*peer{},
		stop:   make(chan struct{}),
	}
	mc, err := g.memberlistConfig(cfg)
	if err != nil {
		return nil, err
	}
	if g.ml, err = memberlist.Create(mc); err != nil {
		if mc.Transport != nil {
			mc.Transport.Shutdown()
		}
		return nil, fmt.Errorf("gossip: start on %s: %w", cfg.GossipAddr, err)
	}
	local := g.ml.LocalNode()
	g.log.Info("gossip started", "addr", local.Address(), "encrypted", g.keys != nil, "keys", len(cfg.GossipKeys))
	g.wg.Add(1)
	go g.joinLoop()
	return g, nil
}

// memberlistConfig translates cfg into memberlist's settings.
func (g *gossip) memberlistConfig(cfg Config) (*memberlist.Config, error) {
	host, portStr, err := net.SplitHostPort(cfg.GossipAddr)
	if err != nil {
		return nil, fmt.Errorf("gossip address %q: %w", cfg.GossipAddr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("gossip address %q: bad port", cfg.GossipAddr)
	}
	mc := memberlist.DefaultLANConfig()
	mc.Name = cfg.NodeID
	// AdvertisePort defaults to 7946 in DefaultLANConfig: advertise the
	// port we bind (memberlist replaces 0 with the port it picked).
	mc.BindAddr, mc.BindPort, mc.AdvertisePort = host, port, port
	if host == "" {
		mc.BindAddr = "0.0.0.0"
	}
	// memberlist needs an IP to advertise; a DNS advertise host is
	// resolved here for gossip only (Raft keeps the name, SPEC §10).
	if cfg.AdvertiseHost != "" {
		ip, err := resolveIP(cfg.AdvertiseHost)
		if err != nil {
			return nil, fmt.Errorf("gossip: advertise host: %w", err)
		}
		mc.AdvertiseAddr = ip
	}
	if len(cfg.GossipKeys) > 0 {
		if g.keys, err = newGossipKeyring(cfg.GossipKeys); err != nil {
			return nil, err
		}
		mc.Keyring = g.keys.ring
		mc.GossipVerifyIncoming, mc.GossipVerifyOutgoing = true, true
	}
	t := cfg.Timing
	mc.ProbeInterval = t.GossipProbeInterval
	mc.ProbeTimeout = t.GossipProbeTimeout
	mc.GossipInterval = t.GossipInterval
	mc.DeadNodeReclaimTime = t.GossipReclaim
	mc.Delegate = g
	mc.Events = g
	mc.Logger = log.New(&gossipLogWriter{l: g.log}, "", 0)
	if mc.Transport, err = gossipTransport(mc); err != nil {
		return nil, fmt.Errorf("gossip: start on %s: %w", cfg.GossipAddr, err)
	}
	return mc, nil
}

// resolveIP returns host if it is an IP, else its first address.
func resolveIP(host string) (string, error) {
	if ip := net.ParseIP(host); ip != nil {
		return host, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil {
		return "", err
	}
	if len(addrs) == 0 {
		return "", fmt.Errorf("%s has no address", host)
	}
	return addrs[0].IP.String(), nil
}

// joinLoop tries the Join peers every retry interval while this node sees
// no other live node: at start, and again after being cut off long enough
// for every peer to be declared dead. memberlist resolves DNS names on each
// attempt, so a headless service's addresses are picked up as they appear.
func (g *gossip) joinLoop() {
	defer g.wg.Done()
	if len(g.join) == 0 {
		return
	}
	t := time.NewTicker(g.retry)
	defer t.Stop()
	failures := 0
	for {
		if !g.Joined() {
			n, err := g.ml.Join(g.join)
			switch {
			case n > 0 && g.Joined():
				g.log.Info("joined the cluster", "contacted", n, "members", g.ml.NumMembers())
				failures = 0
			case err == nil:
				// Only this node answered (the list names it): wait for
				// the others to start.
			case failures%30 == 0:
				// The first failure and then about one a minute: joining
				// peers that are still starting is normal.
				g.log.Warn("cannot join yet; retrying", "join", g.join, "error", err, "attempts", failures+1)
				failures++
			default:
				failures++
			}
		}
		select {
		case <-g.stop:
			return
		case <-t.C:
		}
	}
}

// Peers implements discovery.
func (g *gossip) Peers() []peer {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]peer, 0, len(g.peers)+1)
	sawSelf := false
	for _, p := range g.peers {
		if string(p.ID) == g.self {
			sawSelf = true
			cp := *p
			cp.Meta = decodeMeta(g.meta) // our own freshest view
			out = append(out, cp)
			continue
		}
		out = append(out, *p)
	}
	if !sawSelf {
		out = append(out, peer{ID: raft.ServerID(g.self), Status: peerAlive, Meta: decodeMeta(g.meta)})
	}
	return out
}

// Joined implements discovery: another node is alive.
func (g *gossip) Joined() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, p := range g.peers {
		if string(p.ID) != g.self && p.Status == peerAlive {
			return true
		}
	}
	return false
}

// Advertise implements discovery.
func (g *gossip) Advertise(meta nodeMeta) {
	enc, err := meta.encode()
	if err != nil {
		g.log.Error("cannot advertise node metadata", "error", err)
		return
	}
	g.mu.Lock()
	same := bytes.Equal(enc, g.meta)
	g.meta = enc
	g.mu.Unlock()
	if same {
		return
	}
	if err := g.ml.UpdateNode(5 * time.Second); err != nil {
		g.log.Warn("advertising new node metadata", "error", err)
	}
}

// Leave implements discovery. Joining stops first: a leaving node must
// not join again as the others drop it.
func (g *gossip) Leave(timeout time.Duration) error {
	g.stopJoining()
	if err := g.ml.Leave(timeout); err != nil {
		return fmt.Errorf("gossip leave: %w", err)
	}
	return nil
}

// Close stops joining and shuts memberlist down.
func (g *gossip) Close() error {
	g.stopJoining()
	if err := g.ml.Shutdown(); err != nil {
		return fmt.Errorf("gossip shutdown: %w", err)
	}
	return nil
}

// stopJoining ends the join loop (idempotent).
func (g *gossip) stopJoining() {
	g.stopOnce.Do(func() { close(g.stop) })
	g.wg.Wait()
}

// NodeMeta implements memberlist.Delegate.
func (g *gossip) NodeMeta(limit int) []byte {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.meta) > limit {
		return nil // encode already refused this; never reached
	}
	return g.meta
}

// NotifyMsg implements memberlist.Delegate; Arbor sends no user messages.
func (g *gossip) NotifyMsg([]byte) {}

// GetBroadcasts implements memberlist.Delegate.
func (g *gossip) GetBroadcasts(int, int) [][]byte { return nil }

// LocalState implements memberlist.Delegate.
func (g *gossip) LocalState(bool) []byte { return nil }

// MergeRemoteState implements memberlist.Delegate.
func (g *gossip) MergeRemoteState([]byte, bool) {}

// NotifyJoin implements memberlist.EventDelegate.
func (g *gossip) NotifyJoin(n *memberlist.Node) { g.update(n, peerAlive) }

// NotifyLeave implements memberlist.EventDelegate.
func (g *gossip) NotifyLeave(n *memberlist.Node) {
	st := peerDead
	if n.State == memberlist.StateLeft {
		st = peerLeft
	}
	g.update(n, st)
}

// NotifyUpdate implements memberlist.EventDelegate.
func (g *gossip) NotifyUpdate(n *memberlist.Node) { g.update(n, peerAlive) }

// update records n. memberlist calls the event methods with its own locks
// held, so this only touches our map and wakes the node.
func (g *gossip) update(n *memberlist.Node, st peerStatus) {
	g.mu.Lock()
	p := g.peers[n.Name]
	if p == nil {
		p = &peer{ID: raft.ServerID(n.Name), Status: st, Since: time.Now()}
		g.peers[n.Name] = p
	} else if p.Status != st {
		p.Status, p.Since = st, time.Now()
	}
	p.GossipAddr = n.Address()
	p.Meta = decodeMeta(n.Meta)
	g.mu.Unlock()
	if n.Name != g.self {
		g.log.Debug("gossip member changed", "member", n.Name, "status", st.String(), "addr", n.Address())
	}
	g.notify()
}

// gossipLogWriter turns memberlist's "[LEVEL] memberlist: text" lines into
// slog records.
type gossipLogWriter struct {
	l *slog.Logger
}

// Write implements io.Writer.
func (w *gossipLogWriter) Write(p []byte) (int, error) {
	line := string(bytes.TrimSpace(p))
	level := slog.LevelInfo
	for prefix, l := range map[string]slog.Level{
		"[DEBUG]": slog.LevelDebug, "[INFO]": slog.LevelInfo, "[WARN]": slog.LevelWarn, "[ERR]": slog.LevelError,
	} {
		if rest, ok := cutPrefix(line, prefix); ok {
			level, line = l, rest
			break
		}
	}
	if rest, ok := cutPrefix(line, "memberlist:"); ok {
		line = rest
	}
	w.l.Log(context.Background(), level, line)
	return len(p), nil
}

// cutPrefix is strings.CutPrefix that also trims the space after it.
func cutPrefix(s, prefix string) (string, bool) {
	if len(s) < len(prefix) || s[:len(prefix)] != prefix {
		return s, false
	}
	return string(bytes.TrimSpace([]byte(s[len(prefix):]))), true
}
