package fsm

import (
	"encoding/json"
	"sync"
)

// decodedAuths remembers the decoded auth of an FSM's recent judged
// entries: a user's writes all carry the same auth JSON, and decoding it
// into maps for every entry on every replica was a visible share of a
// judged write's cost. Decoding is a pure function of the bytes and the
// rules only read the values, so sharing them between entries changes
// nothing. A nil *decodedAuths decodes every time.
type decodedAuths struct {
	mu sync.Mutex
	m  map[string]any
}

// maxCachedAuths bounds the cache; it is emptied when full.
const maxCachedAuths = 4096

// decode returns the JSON value b holds.
func (c *decodedAuths) decode(b []byte) (any, error) {
	if c == nil {
		var v any
		err := json.Unmarshal(b, &v)
		return v, err
	}
	c.mu.Lock()
	v, ok := c.m[string(b)]
	c.mu.Unlock()
	if ok {
		return v, nil
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	c.mu.Lock()
	if len(c.m) >= maxCachedAuths {
		clear(c.m)
	}
	c.m[string(b)] = v
	c.mu.Unlock()
	return v, nil
}
