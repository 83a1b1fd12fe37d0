package cluster

import (
	"errors"
	"sync"

	"github.com/hashicorp/raft"
)

// errCatchingUp refuses a vote request this node would send while it
// catches up: it may hold less than the entries it once acknowledged.
var errCatchingUp = errors.New("catching up after starting without state: not campaigning")

// voteGuard wraps the Raft transport of a node that started without Raft
// state (a newcomer, or a member whose disk was wiped). While refuse says
// so, it answers every vote and pre-vote request itself with "not
// granted" and sends none of its own: a node that lost the entries it
// acknowledged must not help elect a leader that lacks them, nor become
// one (cluster/DESIGN.md, "Members that lost their state"). Everything
// else passes through.
type voteGuard struct {
	raft.Transport
	refuse func() bool
	id     raft.ServerID
	out    chan raft.RPC
	stop   chan struct{}
	once   sync.Once
}

// voteGuardPreVote is a voteGuard over a transport that supports
// pre-vote; Raft uses pre-vote only if the transport it gets does.
type voteGuardPreVote struct{ *voteGuard }

// guardVotes returns trans wrapped in a voteGuard, keeping its pre-vote
// support.
func guardVotes(trans raft.Transport, id raft.ServerID, refuse func() bool) raft.Transport {
	g := &voteGuard{Transport: trans, refuse: refuse, id: id, out: make(chan raft.RPC), stop: make(chan struct{})}
	go g.run()
	if _, ok := trans.(raft.WithPreVote); ok {
		return voteGuardPreVote{g}
	}
	return g
}

// Consumer implements raft.Transport: the requests that reach Raft.
func (g *voteGuard) Consumer() <-chan raft.RPC { return g.out }

func (g *voteGuard) run() {
	in := g.Transport.Consumer()
	for {
		select {
		case rpc := <-in:
			if g.refuse() && g.refuseVote(rpc) {
				continue
			}
			select {
			case g.out <- rpc:
			case <-g.stop:
				return
			}
		case <-g.stop:
			return
		}
	}
}

// refuseVote answers rpc with "not granted" if it asks for a vote.
func (g *voteGuard) refuseVote(rpc raft.RPC) bool {
	hdr := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(g.id), Addr: []byte(g.LocalAddr())}
	switch req := rpc.Command.(type) {
	case *raft.RequestVoteRequest:
		rpc.Respond(&raft.RequestVoteResponse{RPCHeader: hdr, Term: req.Term, Granted: false}, nil)
	case *raft.RequestPreVoteRequest:
		rpc.Respond(&raft.RequestPreVoteResponse{RPCHeader: hdr, Term: req.Term, Granted: false}, nil)
	default:
		return false
	}
	return true
}

// RequestVote implements raft.Transport: no campaign while catching up.
func (g *voteGuard) RequestVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	if g.refuse() {
		return errCatchingUp
	}
	return g.Transport.RequestVote(id, target, args, resp)
}

// Close implements raft.WithClose: it stops the guard, then the transport.
func (g *voteGuard) Close() error {
	g.once.Do(func() { close(g.stop) })
	if c, ok := g.Transport.(raft.WithClose); ok {
		return c.Close()
	}
	return nil
}

// RequestPreVote implements raft.WithPreVote: no pre-campaign either.
func (g voteGuardPreVote) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	if g.refuse() {
		return errCatchingUp
	}
	return g.Transport.(raft.WithPreVote).RequestPreVote(id, target, args, resp)
}
