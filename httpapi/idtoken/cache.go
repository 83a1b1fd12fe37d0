package idtoken

import (
	"sync"
	"time"
)

// cacheEntry is one verified token.
type cacheEntry struct {
	id *Identity
	// deadline is exp plus leeway; the zero time means the token never
	// expires.
	deadline time.Time
}

// cache maps a token's SHA-256 to its verification, so repeated requests
// with one token pay for RSA or ECDSA once. It evicts the oldest inserted
// entry, which is O(1) through a ring of keys: unlike LRU it needs no list
// update on every hit, and a token is re-verified at worst once per
// CacheSize new tokens.
type cache struct {
	mu   sync.Mutex
	size int // capacity; <= 0 disables the cache
	m    map[[32]byte]*cacheEntry
	ring [][32]byte // grows to size, then wraps
	next int        // ring slot the next insertion takes once full
	gen  uint64     // key-set generation the entries were verified with
}

func newCache(size int) *cache {
	return &cache{size: size, m: make(map[[32]byte]*cacheEntry)}
}

// get returns the entry for key when it is still valid at now.
func (c *cache) get(key [32]byte, now time.Time) (*Identity, bool) {
	if c.size <= 0 {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok {
		return nil, false
	}
	if !e.deadline.IsZero() && now.After(e.deadline) {
		// Left in place: its ring slot evicts it eventually, whereas
		// deleting it here would leave that slot naming a key that may be
		// re-added, and the eviction would then drop the newer entry.
		return nil, false
	}
	return e.id, true
}

// add stores a verification made with key-set generation gen. A key
// reload between the start of that verification and now has reset the
// cache to a newer generation; the result may rest on a key that is gone,
// so it is dropped.
func (c *cache) add(key [32]byte, id *Identity, deadline time.Time, gen uint64) {
	if c.size <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if e, ok := c.m[key]; ok {
		// A concurrent verification of the same token; keep its slot.
		e.id, e.deadline = id, deadline
		return
	}
	if len(c.ring) < c.size {
		c.ring = append(c.ring, key)
	} else {
		slot := c.next
		c.next = (c.next + 1) % c.size
		// Entries leave the map only here and in reset, so each ring slot
		// names exactly one live entry.
		delete(c.m, c.ring[slot])
		c.ring[slot] = key
	}
	c.m[key] = &cacheEntry{id: id, deadline: deadline}
}

// reset drops every entry and accepts only verifications made with
// generation gen from now on.
func (c *cache) reset(gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen = gen
	clear(c.m)
	c.ring = c.ring[:0]
	c.next = 0
}
