package idtoken

import (
	"crypto/sha256"
)

// Token is a credential with its SHA-256, hashed once per request: the
// server compares the digest with its admin secrets' (in constant time)
// and the verification cache is keyed by it, so an ID token, about a
// kilobyte, is hashed once rather than once for each. Make it with
// NewToken, which keeps the digest that of the text.
type Token struct {
	text string
	sum  [sha256.Size]byte
}

// NewToken hashes text.
func NewToken(text string) Token {
	// The conversion copies the token (about a kilobyte, tens of
	// nanoseconds); reading the string in place would need unsafe.
	return Token{text: text, sum: sha256.Sum256([]byte(text))}
}

// String returns the credential's text.
func (t Token) String() string { return t.text }

// Sum returns the SHA-256 of the credential's text.
func (t Token) Sum() [sha256.Size]byte { return t.sum }
