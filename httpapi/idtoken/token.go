package idtoken

import (
	"crypto/sha256"
	"unsafe"
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
	// Hashed in place: converting it to a []byte copied the kilobyte of
	// an ID token on every request, the largest allocation of a token
	// read. SHA-256 only reads its input, so the string's bytes are never
	// written through the slice.
	b := unsafe.Slice(unsafe.StringData(text), len(text))
	return Token{text: text, sum: sha256.Sum256(b)}
}

// String returns the credential's text.
func (t Token) String() string { return t.text }

// Sum returns the SHA-256 of the credential's text.
func (t Token) Sum() [sha256.Size]byte { return t.sum }
