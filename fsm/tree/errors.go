package tree

import (
	"errors"
	"fmt"
)

// Sentinel errors of the data model. httpapi/errors.go maps each to one
// HTTP status; the fsm package defines the others (ErrNoLeader, …) and
// numbers them all for the wire (fsm.Code and fsm.FromCode).
var (
	// ErrInvalidPath is a malformed, too long or too deep path.
	ErrInvalidPath = errors.New("invalid path")
	// ErrInvalidData is a request body that is not acceptable JSON data.
	ErrInvalidData = errors.New("invalid data")
	// ErrBadRequest is any other client mistake (query parameters, headers).
	ErrBadRequest = errors.New("bad request")
	// ErrTooLarge is a write bigger than the request's write size limit.
	ErrTooLarge = errors.New("write too large")
)

// PublicError carries the exact message a client sees, wrapping a sentinel
// that decides the status.
type PublicError struct {
	Sentinel error
	Message  string
}

// Error returns the client-facing message.
func (e *PublicError) Error() string { return e.Message }

// Unwrap exposes the sentinel to errors.Is.
func (e *PublicError) Unwrap() error { return e.Sentinel }

// Public builds a PublicError.
func Public(sentinel error, msg string) error { return &PublicError{Sentinel: sentinel, Message: msg} }

// Messages fixed by SPEC §6.
const (
	MsgInvalidJSON  = "Invalid data; couldn't parse JSON object, array, or value."
	MsgInvalidToken = "Invalid path: Invalid token in path"
	MsgPathTooLong  = "Invalid path: Path too long or too deep"
	MsgUnknownSV    = "Invalid data; unrecognized server value"
	MsgWriteTooBig  = "Error: WRITE_TOO_BIG: Data to write exceeds the maximum size that can be modified with a single request."
	MsgMissingData  = "Missing PUT or POST data"
	MsgPermission   = "Permission denied"
	badKeyMsgFormat = "Invalid data; couldn't parse key beginning at %d:%d. Key value can't be empty or contain $ # [ ] / or ."
)

// WriteTooBig is the 413 of a write over one of the limits of a single
// replicated write (not a request's write size limit): Firebase's text,
// then why (what limits it), then how to get such data in.
func WriteTooBig(why string) error {
	return Public(ErrTooLarge, "Error: WRITE_TOO_BIG: Data to write exceeds the maximum size that can be modified with a single request: "+
		why+". Send it as several PATCHes of a part each, or load a whole database with `arbor restore`.")
}

// ByteSize renders n bytes for a client message: in MiB from 1 MiB on.
func ByteSize(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
