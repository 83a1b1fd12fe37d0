package httpapi

import (
	"context"

	"github.com/arbordb/arbor/fsm"
)

// DB is the replicated state as the HTTP layer needs it; *cluster.Node
// implements it. It is declared here, by its consumer, so httpapi never
// depends on cluster, raft or memberlist.
type DB interface {
	// Read returns the value at r.Path, locally or after a read barrier.
	Read(ctx context.Context, r fsm.Read) (fsm.ReadResult, error)
	// Propose replicates c (forwarding to the leader if needed) and returns
	// the client's answer as the leader rendered it with o; a failed
	// if-match is a *fsm.PreconditionError with its 412 rendered.
	Propose(ctx context.Context, c fsm.Command, o fsm.AnswerOptions) (fsm.Answer, error)
	// Judge reports whether the security rules would let c be applied:
	// nil, fsm.ErrDenied, or why it could not tell. With fresh the state
	// judged covers every write acknowledged before the call.
	Judge(ctx context.Context, c *fsm.Command, fresh bool) error
	// Ready reports why the node cannot serve yet (nil when it can).
	Ready(ctx context.Context) error
	// Status describes the node and its cluster for /status; it must be
	// JSON-encodable.
	Status(ctx context.Context) (any, error)
}
