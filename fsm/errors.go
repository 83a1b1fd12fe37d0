package fsm

import (
	"errors"

	"github.com/arbordb/arbor/fsm/tree"
)

// Sentinel errors of the replicated state and of the cluster around it,
// which cross the seam between httpapi and the replicated state (the data
// model's own — tree.ErrInvalidPath, tree.ErrInvalidData,
// tree.ErrBadRequest, tree.ErrTooLarge — and the client messages, with
// tree.PublicError, are in package tree). httpapi/errors.go maps each to
// one HTTP status; they survive forwarding between nodes as a numeric code
// (see Code and FromCode).
var (
	// ErrPreconditionFailed is an if-match ETag that no longer matches.
	ErrPreconditionFailed = errors.New("precondition failed")
	// ErrPermissionDenied is a request the rules or credentials do not allow.
	ErrPermissionDenied = errors.New("permission denied")
	// ErrUnauthenticated is a credential that cannot be used.
	ErrUnauthenticated = errors.New("unauthenticated")
	// ErrNoLeader means no Raft leader could be reached in time.
	ErrNoLeader = errors.New("no leader")
	// ErrTimeout means the operation did not finish in time.
	ErrTimeout = errors.New("timeout")
	// ErrOutcomeUnknown marks a write that may have been applied: it was
	// handed to Raft, or sent to the leader, and no answer says whether it
	// committed (the leader died or lost its leadership, or the write's
	// time ran out while it was replicated). It is always wrapped together
	// with ErrNoLeader or ErrTimeout, which say why, and crosses the wire
	// between nodes as a mark beside their code (not in codes).
	ErrOutcomeUnknown = errors.New("the write may have been applied")
	// ErrShuttingDown means the node is stopping.
	ErrShuttingDown = errors.New("shutting down")
	// ErrNotReady means the node is not ready to serve.
	ErrNotReady = errors.New("not ready")
	// ErrUnsupportedVersion is a log entry or snapshot of a newer format.
	ErrUnsupportedVersion = errors.New("unsupported format version")
	// ErrRulesChanged is a prejudged write (CmdAsPrejudged) that reached
	// the log after the rules it was judged by were replaced: it was not
	// applied, and may be judged again and proposed again.
	ErrRulesChanged = errors.New("the security rules changed while the write was in flight; it was not applied")
)

// codes numbers the sentinels for the wire; a sentinel's number never
// changes (the tree's came first and keep their places).
var codes = []error{nil, tree.ErrInvalidPath, tree.ErrInvalidData, tree.ErrBadRequest, tree.ErrTooLarge, ErrPreconditionFailed,
	ErrPermissionDenied, ErrUnauthenticated, ErrNoLeader, ErrTimeout, ErrShuttingDown, ErrNotReady, ErrUnsupportedVersion,
	ErrRulesChanged}

// Code returns a stable number for err's sentinel (0 for none), so an error
// can cross the wire between nodes and still match with errors.Is.
func Code(err error) uint8 {
	for i, s := range codes {
		if s != nil && errors.Is(err, s) {
			return uint8(i)
		}
	}
	return 0
}

// FromCode rebuilds an error from a code and message made by Code.
func FromCode(code uint8, msg string) error {
	if int(code) >= len(codes) || codes[code] == nil {
		return errors.New(msg)
	}
	return &tree.PublicError{Sentinel: codes[code], Message: msg}
}
