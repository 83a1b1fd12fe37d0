package fsm

import "errors"

// Sentinel errors that cross the seam between httpapi and the replicated
// state. httpapi/errors.go maps each to one HTTP status; they survive
// forwarding between nodes as a numeric code (see Code and FromCode).
var (
	// ErrInvalidPath is a malformed, too long or too deep path.
	ErrInvalidPath = errors.New("invalid path")
	// ErrInvalidData is a request body that is not acceptable JSON data.
	ErrInvalidData = errors.New("invalid data")
	// ErrBadRequest is any other client mistake (query parameters, headers).
	ErrBadRequest = errors.New("bad request")
	// ErrTooLarge is a write bigger than the request's write size limit.
	ErrTooLarge = errors.New("write too large")
	// ErrPreconditionFailed is an if-match ETag that no longer matches.
	ErrPreconditionFailed = errors.New("precondition failed")
	// ErrPermissionDenied is a request the rules or credentials do not allow.
	ErrPermissionDenied = errors.New("permission denied")
	// ErrUnauthenticated is a credential that cannot be used.
	ErrUnauthenticated = errors.New("unauthenticated")
	// ErrNoLeader means no Raft leader could be reached in time.
	ErrNoLeader = errors.New("no leader")
	// ErrTimeout means the operation did not finish in time; a write's outcome is unknown.
	ErrTimeout = errors.New("timeout")
	// ErrShuttingDown means the node is stopping.
	ErrShuttingDown = errors.New("shutting down")
	// ErrNotReady means the node is not ready to serve.
	ErrNotReady = errors.New("not ready")
	// ErrUnsupportedVersion is a log entry or snapshot of a newer format.
	ErrUnsupportedVersion = errors.New("unsupported format version")
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

var codes = []error{nil, ErrInvalidPath, ErrInvalidData, ErrBadRequest, ErrTooLarge, ErrPreconditionFailed,
	ErrPermissionDenied, ErrUnauthenticated, ErrNoLeader, ErrTimeout, ErrShuttingDown, ErrNotReady, ErrUnsupportedVersion}

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
	return &PublicError{Sentinel: codes[code], Message: msg}
}
