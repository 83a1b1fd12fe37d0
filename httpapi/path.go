package httpapi

import (
	"net/url"
	"strings"

	"github.com/arbordb/arbor/fsm/tree"
)

// parsePath parses the path part of a request URL in its escaped form (for
// example "/users/jack%20b"), without the ".json" suffix (SPEC §1): empty
// segments are dropped, each segment is percent-decoded as UTF-8 ('+'
// stays a plus), and fsm.NewPath checks the keys. A final ".priority"
// segment is kept, so that the caller can address a node's priority.
func parsePath(escaped string) (tree.Path, error) {
	var keys []string
	for _, seg := range strings.Split(escaped, "/") {
		if seg == "" {
			continue
		}
		key, err := url.PathUnescape(seg)
		if err != nil {
			return nil, tree.Public(tree.ErrInvalidPath, tree.MsgInvalidToken)
		}
		if key != "" {
			keys = append(keys, key)
		}
	}
	return tree.NewPath(keys)
}
