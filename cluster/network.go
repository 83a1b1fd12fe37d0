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

// rpcOp names an RPC. Numbers are part of the wire format: never reuse one.
type rpcOp uint8

// The RPCs a follower sends to the leader.
const (
	// opPropose: payload is an encoded fsm.Command; the answer is the
	// leader's fsm.Result or error (see rpc.go). Superseded by
	// opProposeAnswer; kept for members of older releases.
	opPropose rpcOp = 1
	// opReadIndex: no payload; the answer is a commit index confirmed by
	// a quorum (the leader's half of the read barrier).
	opReadIndex rpcOp = 2
	// opRemoveServer: payload is a server id; the leader removes it from
	// the Raft configuration.
	opRemoveServer rpcOp = 3
	// opCommitNudge: no payload; the leader appends a barrier entry so
	// that its followers learn its commit index now (see nudgeCommit in
	// read.go). An older leader answers it with an "unknown cluster RPC"
	// error, which only means no nudge.
	opCommitNudge rpcOp = 4
	// opProposeAnswer: payload is the answer options (one byte) and an
	// encoded fsm.Command; the answer is the client's answer as the leader
	// rendered it (body, ETag, index) or an error, a 412's rendered body
	// included (see rpc.go). The follower relays it untouched.
	opProposeAnswer rpcOp = 5
	// opProposeAnswer2 is opProposeAnswer whose options may also ask for
	// no body (answerSilent: print=silent). Releases before it answer
	// "unknown op" (the leader of an older release would refuse the bit in
	// opProposeAnswer with a 400): the follower then asks again with
	// opProposeAnswer, and renders nothing of the body it gets.
	opProposeAnswer2 rpcOp = 6
)

// rpcHandler answers one RPC. ctx carries the caller's remaining time.
type rpcHandler func(ctx context.Context, op rpcOp, payload []byte) []byte

// errNotSent marks a RoundTrip failure that happened before the request
// left this node (no connection to the peer): retrying cannot apply a write
// twice.
var errNotSent = errors.New("request not sent")
