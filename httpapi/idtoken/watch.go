package idtoken

import "sync"

// Listener hears what the verifier's looks at its key files find. Either
// func may be nil. They are called on the goroutine that looked (a
// request's, or the caller of Check or Reload), after the new keys are in
// force and with no lock of the verifier held, so they may call Trusts or
// Verify; they must not block.
type Listener struct {
	// KeysChanged is called after the trusted keys changed. A key that
	// left the files no longer verifies any token, and Trusts is false for
	// the identities it verified: their holders should ask again.
	KeysChanged func()

	// KeyFileFailed is called for each key file found unusable (missing,
	// unreadable, empty, truncated, or with no usable key). The keys last
	// loaded from that file stay trusted, so an operator must hear of
	// it. It is called once per failure, not on every look: again only
	// once the file has changed, or on an explicit Reload.
	KeyFileFailed func(err error)
}

// listeners are a Verifier's subscribers.
type listeners struct {
	mu   sync.Mutex
	next int
	m    map[int]Listener
}

// Subscribe registers l until the returned func is called.
func (v *Verifier) Subscribe(l Listener) (unsubscribe func()) {
	ls := &v.listeners
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.m == nil {
		ls.m = make(map[int]Listener)
	}
	id := ls.next
	ls.next++
	ls.m[id] = l
	return func() {
		ls.mu.Lock()
		defer ls.mu.Unlock()
		delete(ls.m, id)
	}
}

// snapshot returns the current listeners, so that none is called with
// the lock held.
func (ls *listeners) snapshot() []Listener {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	out := make([]Listener, 0, len(ls.m))
	for _, l := range ls.m {
		out = append(out, l)
	}
	return out
}

// notify tells the listeners what one look at the files found.
func (ls *listeners) notify(changed bool, failures []error) {
	if !changed && len(failures) == 0 {
		return
	}
	for _, l := range ls.snapshot() {
		for _, err := range failures {
			if l.KeyFileFailed != nil {
				l.KeyFileFailed(err)
			}
		}
		if changed && l.KeysChanged != nil {
			l.KeysChanged()
		}
	}
}
