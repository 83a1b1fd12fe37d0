package fsm

// AnswerOptions say how a write's answer is rendered (cluster renders it,
// on the leader). They travel with a forwarded write, so the leader
// renders the answer once and the follower that took the request relays
// it byte for byte.
type AnswerOptions struct {
	// Pretty indents the body (print=pretty).
	Pretty bool
	// Export renders a failed if-match's current value in the export
	// form (format=export); a successful write's echo ignores it.
	Export bool
	// Delete answers null with the ETag of null, as DELETE does whatever
	// the path (a Set of null at a priority path otherwise answers the
	// node's ETag).
	Delete bool
	// Silent renders no body (print=silent: the client gets 204): the
	// echo of a large write costs the leader as much CPU as the parse.
	Silent bool
}

// Answer is a successful write's answer as a client receives it.
type Answer struct {
	// Body is the response body: the echo of a PUT or PATCH, a POST's
	// {"name": key}, or null for a DELETE.
	Body []byte
	// ETag is the ETag of the written location after the write (for a
	// POST, of the new child).
	ETag string
	// Index is the log index the write was applied at.
	Index uint64
}
