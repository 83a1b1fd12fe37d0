package tree

import (
	"strings"
	"unicode/utf8"
)

// Limits of the data model (SPEC §1).
const (
	MaxDepth     = 32               // segments in a path, and levels below the root in a write
	MaxKeyBytes  = 768              // bytes in one key
	MaxStringLen = 10 * 1024 * 1024 // bytes in one string value
)

// Path is a location in the tree: a list of keys from the root. The root is
// the empty path. A Path is never modified after it is built.
type Path []string

// String renders the path as "/a/b" ("/" for the root).
func (p Path) String() string {
	if len(p) == 0 {
		return "/"
	}
	return "/" + strings.Join(p, "/")
}

// Child returns p extended by key, without sharing p's backing array.
func (p Path) Child(key string) Path {
	q := make(Path, len(p)+1)
	copy(q, p)
	q[len(p)] = key
	return q
}

// HasPrefix reports whether q is p or an ancestor of p.
func (p Path) HasPrefix(q Path) bool {
	if len(q) > len(p) {
		return false
	}
	for i := range q {
		if p[i] != q[i] {
			return false
		}
	}
	return true
}

// ValidKey reports whether k may name a child: non-empty UTF-8 of at most
// 768 bytes with none of . $ # [ ] / and no ASCII control characters.
func ValidKey(k string) bool {
	if len(k) == 0 || len(k) > MaxKeyBytes || !utf8.ValidString(k) {
		return false
	}
	for i := 0; i < len(k); i++ {
		switch c := k[i]; c {
		case '.', '$', '#', '[', ']', '/', 0x7f:
			return false
		default:
			if c < 0x20 {
				return false
			}
		}
	}
	return true
}

// NewPath checks keys as a path from the root: at most MaxDepth keys (a
// final ".priority", which addresses a node's priority, aside), each a
// ValidKey of at most MaxKeyBytes. The REST grammar (percent-decoding the
// URL, httpapi) turns a request's path into keys; this is the data model's
// part.
func NewPath(keys []string) (Path, error) {
	p := Path(keys)
	if len(p) > MaxDepth+1 {
		return nil, Public(ErrInvalidPath, MsgPathTooLong)
	}
	for i, k := range p {
		if k == ".priority" && i == len(p)-1 {
			continue
		}
		if len(k) > MaxKeyBytes {
			return nil, Public(ErrInvalidPath, MsgPathTooLong)
		}
		if !ValidKey(k) {
			return nil, Public(ErrInvalidPath, MsgInvalidToken)
		}
	}
	depth := len(p)
	if depth > 0 && p[depth-1] == ".priority" {
		depth--
	}
	if depth > MaxDepth {
		return nil, Public(ErrInvalidPath, MsgPathTooLong)
	}
	return p, nil
}

// SplitPath is NewPath of the non-empty "/"-separated segments of s, taken
// as they are: the path notation String renders ("/a/b"), not a URL.
func SplitPath(s string) (Path, error) {
	var keys []string
	for _, k := range strings.Split(s, "/") {
		if k != "" {
			keys = append(keys, k)
		}
	}
	return NewPath(keys)
}

// IsPriority reports whether p addresses a priority (its last key is ".priority").
func (p Path) IsPriority() bool { return len(p) > 0 && p[len(p)-1] == ".priority" }
