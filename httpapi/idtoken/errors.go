package idtoken

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrMalformed means the token cannot be trusted: it is not a JWT, is
	// badly encoded, has a bad signature, names an unknown key or a refused
	// algorithm, has the wrong audience or issuer, is not yet valid, or lacks
	// a required claim. Firebase answers all of these with 401 "Could not
	// parse auth token.", so callers need not tell them apart.
	ErrMalformed = errors.New("idtoken: unusable token")

	// ErrExpired means the token was valid but its exp has passed by more
	// than the leeway. Firebase answers 401 "Auth token is expired.".
	ErrExpired = errors.New("idtoken: token expired")
)

// malformed wraps ErrMalformed with the reason, which only reaches logs:
// telling a client exactly why its forgery failed would help it.
func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)
}

// expired wraps ErrExpired with both times, which tells an operator
// whether the client or the server clock is off.
func expired(exp, now float64) error {
	return fmt.Errorf("%w: exp %s passed (now %s)", ErrExpired,
		unixTime(exp).Format(time.RFC3339), unixTime(now).Format(time.RFC3339))
}
