package realtime

import (
	"errors"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

// The status strings of answers: Firebase's, which the SDKs map to their
// errors (permission_denied, too_big, unavailable, …).
const (
	statusOK               = "ok"
	statusPermissionDenied = "permission_denied"
	statusDataStale        = "datastale"
	statusInvalidToken     = "invalid_token"
	statusExpiredToken     = "expired_token"
	statusTooBig           = "too_big"
	statusUnavailable      = "unavailable"
	// statusInvalidData answers a request whose path, data or query the
	// server refuses (the SDKs validate their input first, so only other
	// clients see it).
	statusInvalidData = "invalid_data"
)

// statusOf is the one table from errors to statuses, with the message
// the client may see (the error's public text, or a generic one).
func statusOf(err error) (status, msg string) {
	var pub *tree.PublicError
	if errors.As(err, &pub) {
		msg = pub.Message
	}
	switch {
	case errors.Is(err, fsm.ErrPermissionDenied), errors.Is(err, fsm.ErrUnauthenticated):
		return statusPermissionDenied, or(msg, tree.MsgPermission)
	case errors.Is(err, fsm.ErrPreconditionFailed):
		return statusDataStale, "the data changed"
	case errors.Is(err, tree.ErrTooLarge):
		return statusTooBig, or(msg, "the write is too big")
	case errors.Is(err, tree.ErrInvalidPath), errors.Is(err, tree.ErrInvalidData), errors.Is(err, tree.ErrBadRequest):
		return statusInvalidData, or(msg, "invalid data")
	}
	// No leader, a timeout, shutting down, not ready, a write whose
	// outcome is unknown, anything else: the client may try again.
	return statusUnavailable, "the database is unavailable; try again"
}

// or is a unless it is empty, else b.
func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
