package cluster

import (
	"context"
	"errors"
	"io"

	"github.com/hashicorp/raft"
)

// network is everything a node sends to or receives from its peers: the
// Raft transport and Arbor's own RPCs (forwarding), both reaching a peer at
// its Raft address. Production uses tcpNetwork (one port, optional mutual
// TLS); in-process tests use an in-memory network with partitions.
type network interface {
	io.Closer
	// Transport is the Raft transport.
	Transport() raft.Transport
	// Addr is the advertised address: what peers store in the Raft
	// configuration and dial, for Raft and RPCs alike.
	Addr() raft.ServerAddress
	// RoundTrip sends one RPC to the node at addr and returns its answer.
	// An error wrapping errNotSent means the request certainly did not
	// reach the peer; any other error leaves that unknown.
	RoundTrip(ctx context.Context, addr raft.ServerAddress, op rpcOp, payload []byte) ([]byte, error)
	// Serve starts answering RPCs with h. It is called once, after Raft
	// started; requests arriving earlier are refused.
	Serve(h rpcHandler)
}

// rpcOp names an RPC. Numbers are part of the wire format: never reuse
// one. A leader answers an op it does not know (a newer member's) with an
// "unknown cluster RPC" error (msgUnknownOp): a release adding an op
// recognises it and falls back to what the older leader serves.
type rpcOp uint8

// The RPCs a follower sends to the leader.
const (
	// opPropose: payload is the answer options (one byte, rpc.go) and an
	// encoded fsm.Command; the answer is the client's answer as the leader
	// rendered it (body, ETag, index) or an error, a 412's rendered body
	// included (see rpc.go). The follower relays it untouched.
	opPropose rpcOp = 1
	// opReadIndex: no payload; the answer is a commit index confirmed by
	// a quorum (the leader's half of the read barrier).
	opReadIndex rpcOp = 2
	// opRemoveServer: payload is a server id; the leader removes it from
	// the Raft configuration.
	opRemoveServer rpcOp = 3
	// opCommitNudge: no payload; the leader appends a barrier entry so
	// that its followers learn its commit index now (see nudgeCommit in
	// read.go).
	opCommitNudge rpcOp = 4
	// opProgress: no payload; the leader answers its view of every
	// member's replication progress (progress.go), so a follower's
	// /status shows the same picture as the leader's.
	opProgress rpcOp = 5
)

// The RPC the leader sends to every other member.
const (
	// opApplied: no payload; any member answers its Raft applied index
	// (the leader's progress probe, progress.go).
	opApplied rpcOp = 6
)

// rpcHandler answers one RPC. ctx carries the caller's remaining time.
type rpcHandler func(ctx context.Context, op rpcOp, payload []byte) []byte

// errNotSent marks a RoundTrip failure that happened before the request
// left this node (no connection to the peer): retrying cannot apply a write
// twice.
var errNotSent = errors.New("request not sent")
