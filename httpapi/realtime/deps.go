package realtime

import (
	"context"
	"errors"
	"time"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

// Deps are what a Server needs from the rest of the node. DB, Events and
// Tokens are required; Disconnects may be nil (onDisconnect requests are
// then refused with "unavailable").
type Deps struct {
	DB          DB
	Events      Events
	Tokens      Tokens
	Disconnects Disconnects
}

// DB is the replicated state as the protocol needs it: the REST API's
// seam (httpapi.DB) minus what only REST uses, so the node that serves
// one serves the other.
type DB interface {
	// Read returns the value at r.Path, locally or after a read barrier,
	// judged as r.Access (fsm.ErrDenied when the rules refuse it).
	Read(ctx context.Context, r fsm.Read) (fsm.ReadResult, error)
	// Propose replicates c (forwarding it to the leader if need be) and
	// returns its answer; a failed if-match wraps
	// fsm.ErrPreconditionFailed.
	Propose(ctx context.Context, c fsm.Command, o fsm.AnswerOptions) (fsm.Answer, error)
	// Judge reports whether the rules would let c be applied: nil,
	// fsm.ErrDenied, or why it could not tell; with fresh, on a state
	// that covers every acknowledged write.
	Judge(ctx context.Context, c *fsm.Command, fresh bool) error
}

// Events is where listens learn of the applied log's changes: the node's
// event hub, the one SSE streams use.
type Events interface {
	// Subscribe starts a feed of the changes at, above or below loc, as
	// a reader acting as as (nil: an admin). Changes applied after
	// Subscribe returns are never missed; the caller reads the location
	// after subscribing and skips the changes its read already shows
	// (Change.Index). wake is called, without blocking and never under a
	// lock the caller could need, whenever the feed has changes to Take.
	Subscribe(loc tree.Path, as *fsm.Access, wake func()) (Feed, error)
	// WaitDelivered returns once the changes of every log entry up to
	// index have been handed to the feeds they concern, or with ctx's
	// error. A write's ok waits for it, so that the client's listens show
	// its own write first, as the SDKs expect: a node applies a write it
	// forwarded to the leader only after the leader has answered it. It
	// returns nil at once when they were delivered already, whatever ctx.
	WaitDelivered(ctx context.Context, index uint64) error
}

// Feed is one subscription of Events.
type Feed interface {
	// Take returns the changes delivered since the last call, in commit
	// order (nil when there are none).
	Take() []Change
	// Close ends the subscription; it may be called more than once.
	Close()
}

// EndReason says why a feed ended.
type EndReason uint8

// Reasons a feed ends; a feed delivers no change after its end.
const (
	// EndNone: the feed goes on.
	EndNone EndReason = iota
	// EndDenied: the reader may no longer read the location (the rules
	// or the data they look at changed). The listen is revoked.
	EndDenied
	// EndTooSlow: the connection fell behind the feed's budget. The
	// connection is cut off, as a slow SSE stream is.
	EndTooSlow
	// EndShutdown: the node is stopping. The connection is closed.
	EndShutdown
)

// Change is what one batch of applied log entries did to a feed's
// location, or the end of the feed.
type Change struct {
	// Index is the log index of the batch's last entry that concerned
	// the location.
	Index uint64
	// Events are the batch's events that concern the location (at, above
	// or below it), with absolute paths, in commit order.
	Events []fsm.Event
	// Value is the location's value in the state right after the batch,
	// and Indexes that state's `.indexOn` indexes (queries use them).
	Value   *tree.Node
	Indexes *fsm.IndexSet
	// End, when not EndNone, ends the feed (the other fields are unset).
	End EndReason
}

// Tokens verifies the ID tokens a client sends with auth, with the same
// verifier and keys as REST.
type Tokens interface {
	// Verify returns who token speaks for, or an error: wrapping
	// ErrExpiredToken for a token past its expiry, anything else for a
	// token that cannot be used.
	Verify(token string) (Identity, error)
}

// Identity is a verified ID token.
type Identity struct {
	// Auth is the rules' `auth` variable.
	Auth map[string]any
	// AuthJSON is Auth encoded as JSON, when the verifier has it (a write
	// carries it in its log entry).
	AuthJSON []byte
	// Claims are the token's claims, sent back in the auth answer.
	Claims map[string]any
	// Expires is the token's expiry; the connection falls back to
	// unauthenticated then, and the client is told with `ac`.
	Expires time.Time
}

// ErrExpiredToken is a token past its expiry (status expired_token).
var ErrExpiredToken = errors.New("realtime: token expired")

// Disconnects holds the onDisconnect operations of sessions. Each is a
// write, judged by the rules when it is registered, to be made when its
// connection ends: for any reason, once, and never while it lives.
type Disconnects interface {
	// Register records op for session. op is built as the write would be
	// now (kind, path, parsed value or fields, who it acts as) and already
	// allowed by the rules; its clock (Now) and push randomness are set
	// when it runs, so {".sv":"timestamp"} is the time it runs.
	Register(ctx context.Context, session string, op fsm.Command) error
	// Cancel forgets session's operations at path and below it.
	Cancel(ctx context.Context, session string, path tree.Path) error
	// End says session's connection ended: its operations run now. It is
	// called once per session that registered any, after the connection
	// is closed, with a context of its own.
	End(ctx context.Context, session string)
}
