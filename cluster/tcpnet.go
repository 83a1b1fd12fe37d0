package cluster

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// Wire constants of the cluster port.
const (
	// rpcMagic is the first byte of an Arbor RPC connection. Raft's
	// connections start with its RPC type (0 to 4), so one byte tells them
	// apart and Raft and forwarding share one port and one TLS setup.
	rpcMagic byte = 0xA7
	// sniffTimeout bounds the TLS handshake and first byte of an accepted
	// connection, so a silent client cannot hold a goroutine forever.
	sniffTimeout = 10 * time.Second
	// rpcMaxFrame bounds one request or reply (a write echo can be as large
	// as the largest accepted body).
	rpcMaxFrame = 1 << 30
	// rpcMaxIdle is how many idle RPC connections are kept per peer: enough
	// for a busy follower's concurrent forwarded writes to reuse them
	// rather than pay a TLS handshake each.
	rpcMaxIdle = 256
	// rpcIOTimeout bounds writing a reply to a peer that stopped reading.
	rpcIOTimeout = 10 * time.Second
	// raftMaxRPCsInFlight is 1: no pipelined replication (see
	// newTCPNetwork).
	raftMaxRPCsInFlight = 1
)

// tcpNetwork is the production network: one TCP listener (the Raft port)
// carrying both Raft's connections and Arbor's RPCs, told apart by their
// first byte, optionally inside mutual TLS.
type tcpNetwork struct {
	ln     net.Listener
	adv    hostPort
	source *net.TCPAddr // dial peers from here; nil: the kernel's choice
	srvTLS *tls.Config  // nil: plain TCP
	cliTLS *tls.Config
	log    *slog.Logger
	trans  *pieceTransport

	raftConns chan net.Conn
	closed    chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup // the accept loop and RPC server connections

	handler atomic.Pointer[rpcHandler]
	// gossipHost, once set, names the host gossip last saw a peer at.
	gossipHost atomic.Pointer[func(raft.ServerAddress) (string, bool)]

	mu      sync.Mutex
	idle    map[raft.ServerAddress][]*rpcConn // client side, most recent last
	serving map[*serverConn]struct{}
}

// newTCPNetwork binds cfg.RaftAddr and starts accepting.
func newTCPNetwork(cfg Config, logger *slog.Logger) (network, error) {
	ln, err := net.Listen("tcp", cfg.RaftAddr)
	if err != nil {
		return nil, fmt.Errorf("raft transport: listen %s: %w", cfg.RaftAddr, err)
	}
	t := &tcpNetwork{
		ln:        ln,
		adv:       advertiseAddr(cfg.AdvertiseHost, ln.Addr()).(hostPort),
		source:    sourceAddr(ln.Addr()),
		log:       logger,
		raftConns: make(chan net.Conn),
		closed:    make(chan struct{}),
		idle:      map[raft.ServerAddress][]*rpcConn{},
		serving:   map[*serverConn]struct{}{},
	}
	if cfg.TLS != nil {
		t.srvTLS, t.cliTLS = cfg.TLS.serverTLS(), cfg.TLS.clientTLS()
	}
	t.trans = newPieceTransport(raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  &streamLayer{net: t},
		MaxPool: transportMaxPool,
		Timeout: transportTimeout,
		Logger:  newHCLogger(logger, "raft-net"),
		// One AppendEntries in flight per follower: hashicorp/raft then
		// replicates synchronously, each RPC carrying every entry stored
		// since the last one. Measured against 64 in flight (five
		// interleaved pairs, docs/PERFORMANCE.md): 12–22 % more writes at
		// 64 clients, the same at 1 and 256 — a follower that is behind
		// stores one larger batch (one bolt commit, two fsyncs) instead of
		// a queue of small ones. It also keeps Raft off v1.7.3's pipeline
		// code, which deadlocks when its decoder quits (a follower answers
		// a newer term, routine around partitions) while the sender goes
		// on: with the default of 2 in flight the next send parked the
		// replication goroutine for good and a graceful stop with it
		// (docs/CHAOS.md, bug 2; hashicorp/raft#612).
		MaxRPCsInFlight: raftMaxRPCsInFlight,
	}))
	t.wg.Add(1)
	go t.acceptLoop()
	return t, nil
}

// Transport implements network.
func (t *tcpNetwork) Transport() raft.Transport { return t.trans }

// piecesWith tells the transport which members join entries sent in
// pieces (pieces.go).
func (t *tcpNetwork) piecesWith(takes func(raft.ServerID) bool) { t.trans.takesPieces.Store(&takes) }

// Addr implements network.
func (t *tcpNetwork) Addr() raft.ServerAddress { return raft.ServerAddress(t.adv) }

// Serve implements network.
func (t *tcpNetwork) Serve(h rpcHandler) { t.handler.Store(&h) }

// Close shuts Raft's transport down, stops accepting, closes idle
// connections (a connection serving a request closes after its reply) and
// waits for the server goroutines.
func (t *tcpNetwork) Close() error {
	_ = t.trans.Close() // marks it shut down, then closes the stream layer
	return t.closeListener()
}

// closeListener does Close's work once; the stream layer's Close (called
// by Raft's transport) lands here too.
func (t *tcpNetwork) closeListener() error {
	var err error
	t.closeOnce.Do(func() {
		close(t.closed)
		err = t.ln.Close()
		t.mu.Lock()
		for sc := range t.serving {
			if !sc.busy {
				sc.shut = true
				sc.conn.Close()
			}
		}
		for addr, conns := range t.idle {
			for _, c := range conns {
				c.Close()
			}
			delete(t.idle, addr)
		}
		t.mu.Unlock()
		t.wg.Wait()
	})
	return err
}

// acceptLoop hands each accepted connection to sniff.
func (t *tcpNetwork) acceptLoop() {
	defer t.wg.Done()
	var backoff time.Duration
	for {
		c, err := t.ln.Accept()
		if err != nil {
			select {
			case <-t.closed:
				return
			default:
			}
			// Out of file descriptors and the like: back off, as
			// net/http does, rather than spin or give up.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			t.log.Warn("cluster port: accept failed", "error", err, "retry_in", backoff)
			select {
			case <-time.After(backoff):
			case <-t.closed:
				return
			}
			continue
		}
		backoff = 0
		go t.sniff(c)
	}
}

// sniff completes the TLS handshake (if any), reads the first byte and
// routes the connection to the RPC server or to Raft.
func (t *tcpNetwork) sniff(raw net.Conn) {
	c := raw
	if t.srvTLS != nil {
		c = tls.Server(raw, t.srvTLS)
	}
	_ = c.SetDeadline(time.Now().Add(sniffTimeout))
	var first [1]byte
	if _, err := io.ReadFull(c, first[:]); err != nil {
		// A peer without a CA-signed certificate ends here.
		t.log.Warn("cluster port: connection refused", "remote", raw.RemoteAddr().String(), "error", err)
		c.Close()
		return
	}
	_ = c.SetDeadline(time.Time{})
	if first[0] == rpcMagic {
		t.serveConn(c)
		return
	}
	select {
	case t.raftConns <- &prefixConn{Conn: c, first: first[0], pending: true}:
	case <-t.closed:
		c.Close()
	}
}

// prefixConn gives back the byte sniff read.
type prefixConn struct {
	net.Conn
	first   byte
	pending bool
}

// Read implements net.Conn.
func (p *prefixConn) Read(b []byte) (int, error) {
	if p.pending && len(b) > 0 {
		p.pending = false
		b[0] = p.first
		return 1, nil
	}
	return p.Conn.Read(b)
}

// serverConn is one accepted RPC connection. busy and shut are guarded by
// the network's mu: Close closes only idle connections, and a busy one
// closes itself after its reply.
type serverConn struct {
	conn net.Conn
	busy bool
	shut bool
}

// serveConn answers requests on c one at a time until it closes.
func (t *tcpNetwork) serveConn(c net.Conn) {
	sc := &serverConn{conn: c}
	t.mu.Lock()
	select {
	case <-t.closed:
		t.mu.Unlock()
		c.Close()
		return
	default:
	}
	t.serving[sc] = struct{}{}
	t.wg.Add(1)
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		delete(t.serving, sc)
		t.mu.Unlock()
		c.Close()
		t.wg.Done()
	}()
	br, bw := bufio.NewReader(c), bufio.NewWriter(c)
	for {
		op, timeout, payload, err := readRequest(br)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				t.log.Debug("cluster RPC: read request", "remote", c.RemoteAddr().String(), "error", err)
			}
			return
		}
		t.mu.Lock()
		if sc.shut {
			// Closed by Close while the request arrived: not acted on.
			t.mu.Unlock()
			return
		}
		sc.busy = true
		t.mu.Unlock()

		reply := t.answer(op, timeout, payload)
		_ = c.SetWriteDeadline(time.Now().Add(rpcIOTimeout))
		bw.Write(binary.AppendUvarint(nil, uint64(len(reply))))
		bw.Write(reply)
		werr := bw.Flush()
		_ = c.SetWriteDeadline(time.Time{})

		t.mu.Lock()
		sc.busy = false
		closing := t.isClosed()
		t.mu.Unlock()
		if werr != nil || closing {
			return
		}
	}
}

// answer runs the handler with the caller's remaining time.
func (t *tcpNetwork) answer(op rpcOp, timeout time.Duration, payload []byte) []byte {
	h := t.handler.Load()
	if h == nil {
		return encodeError(fmt.Errorf("node starting: %w", errRetry))
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return (*h)(ctx, op, payload)
}

func (t *tcpNetwork) isClosed() bool {
	select {
	case <-t.closed:
		return true
	default:
		return false
	}
}

// rpcConn is a client connection to a peer's RPC server.
type rpcConn struct {
	net.Conn
	raw net.Conn // the TCP connection under TLS
	br  *bufio.Reader
	bw  *bufio.Writer
}

// RoundTrip implements network: one request and its reply on a pooled (or
// new) connection, bounded by ctx.
func (t *tcpNetwork) RoundTrip(ctx context.Context, addr raft.ServerAddress, op rpcOp, payload []byte) ([]byte, error) {
	if t.isClosed() {
		return nil, fmt.Errorf("cluster network closed: %w", errNotSent)
	}
	c, err := t.conn(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w (%w)", addr, errNotSent, err)
	}
	// Blocked I/O ends when ctx does: its deadline, or a cancellation.
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	dl, hasDL := ctx.Deadline()
	_ = c.SetDeadline(dl) // zero when there is none
	timeout := transportTimeout
	if hasDL {
		timeout = time.Until(dl)
	}
	var hdr []byte
	hdr = append(hdr, byte(op))
	hdr = binary.AppendUvarint(hdr, uint64(max(timeout, 0).Milliseconds()))
	hdr = binary.AppendUvarint(hdr, uint64(len(payload)))
	c.bw.Write(hdr)
	c.bw.Write(payload)
	if err := c.bw.Flush(); err != nil {
		// A request is acted on only once complete, and a failed write
		// means the last bytes never left: not sent.
		stop()
		c.Close()
		return nil, fmt.Errorf("send to %s: %w (%w)", addr, errNotSent, err)
	}
	reply, err := readFrame(c.br)
	if !stop() || err != nil {
		c.Close()
		if err != nil {
			if ctx.Err() != nil {
				err = fmt.Errorf("%w (%w)", ctx.Err(), err)
			}
			return nil, fmt.Errorf("no reply from %s: %w", addr, err)
		}
		return reply, nil
	}
	_ = c.SetDeadline(time.Time{})
	t.release(addr, c)
	return reply, nil
}

// conn returns a live idle connection to addr or dials a new one.
func (t *tcpNetwork) conn(ctx context.Context, addr raft.ServerAddress) (*rpcConn, error) {
	for {
		t.mu.Lock()
		conns := t.idle[addr]
		if len(conns) == 0 {
			t.mu.Unlock()
			break
		}
		c := conns[len(conns)-1]
		t.idle[addr] = conns[:len(conns)-1]
		t.mu.Unlock()
		if c.alive() {
			return c, nil
		}
		c.Close()
	}
	conn, err := t.dialContext(ctx, addr)
	if err != nil {
		return nil, err
	}
	c := &rpcConn{Conn: conn, raw: conn, br: bufio.NewReader(conn), bw: bufio.NewWriter(conn)}
	if tc, ok := conn.(*tls.Conn); ok {
		c.raw = tc.NetConn()
	}
	c.bw.WriteByte(rpcMagic) // sent with the first request
	return c, nil
}

// alive reports whether an idle connection can be reused: the server
// closes idle connections when it stops (a crashed one's kernel does), and
// reusing one would turn a write that never arrived into "outcome
// unknown". Anything readable on an idle connection (EOF, a TLS alert)
// means it is finished. The check peeks at the socket without blocking
// (see connIdle).
func (c *rpcConn) alive() bool {
	return c.br.Buffered() == 0 && connIdle(c.raw)
}

// release returns a healthy connection to the pool.
func (t *tcpNetwork) release(addr raft.ServerAddress, c *rpcConn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.isClosed() || len(t.idle[addr]) >= rpcMaxIdle {
		c.Close()
		return
	}
	t.idle[addr] = append(t.idle[addr], c)
}

// readRequest reads op, timeout and payload.
func readRequest(br *bufio.Reader) (rpcOp, time.Duration, []byte, error) {
	op, err := br.ReadByte()
	if err != nil {
		return 0, 0, nil, err
	}
	ms, err := binary.ReadUvarint(br)
	if err != nil {
		return 0, 0, nil, err
	}
	payload, err := readFrame(br)
	if err != nil {
		return 0, 0, nil, err
	}
	return rpcOp(op), time.Duration(min(ms, uint64(time.Hour/time.Millisecond))) * time.Millisecond, payload, nil
}

// readFrame reads a uvarint length and that many bytes.
func readFrame(br *bufio.Reader) ([]byte, error) {
	n, err := binary.ReadUvarint(br)
	if err != nil {
		return nil, err
	}
	if n > rpcMaxFrame {
		return nil, fmt.Errorf("cluster RPC frame of %d bytes exceeds the limit", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(br, b); err != nil {
		return nil, err
	}
	return b, nil
}
