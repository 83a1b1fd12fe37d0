package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/hashicorp/memberlist"
)

// GossipKeyLen is the size of a gossip key: memberlist's AES-256.
const GossipKeyLen = 32

// validateGossipKeys checks Config.GossipKeys and SetGossipKeys' argument.
func validateGossipKeys(keys [][]byte) error {
	for i, k := range keys {
		if len(k) != GossipKeyLen {
			return fmt.Errorf("gossip key %d of %d is %d bytes, want %d", i+1, len(keys), len(k), GossipKeyLen)
		}
	}
	return nil
}

// gossipKeyring is memberlist's Keyring with the updates serialised and
// made safe for the readers memberlist runs concurrently.
//
// memberlist decrypts every packet with a slice of keys it took from the
// ring without holding any lock while it iterates. The ring's AddKey and
// UseKey install a fresh slice, so those readers never see a change; but
// RemoveKey shifts the keys after the one removed inside the slice the
// readers may hold (a data race that can make a reader skip a key). It
// only writes nothing when the removed key is the last one, so set removes
// keys from the end of the ring only, putting back the ones it keeps.
type gossipKeyring struct {
	mu   sync.Mutex // serialises set; memberlist locks the ring itself
	ring *memberlist.Keyring
}

// newGossipKeyring makes a ring with keys[0] as the primary.
func newGossipKeyring(keys [][]byte) (*gossipKeyring, error) {
	if len(keys) == 0 {
		return nil, errors.New("gossip: no key")
	}
	if err := validateGossipKeys(keys); err != nil {
		return nil, fmt.Errorf("gossip: %w", err)
	}
	ring, err := memberlist.NewKeyring(keys[1:], keys[0])
	if err != nil {
		return nil, fmt.Errorf("gossip keyring: %w", err)
	}
	return &gossipKeyring{ring: ring}, nil
}

// set makes the ring hold exactly keys, keys[0] the primary. The order is
// what makes a rotation safe for a running cluster: the new keys are
// accepted first, then the primary changes (only ever to keys[0]), and
// only then are the keys that went away dropped. The one blemish: a kept
// secondary key that sits behind a dropped one in the ring is taken out
// and put back within the same call, so for microseconds a packet sealed
// with it would be refused; in the documented rotation no node seals with
// a secondary key, and gossip retries lost packets anyway.
func (k *gossipKeyring) set(keys [][]byte) error {
	if len(keys) == 0 {
		return errors.New("gossip keys: at least one is needed (gossip cannot be switched to clear text while running)")
	}
	if err := validateGossipKeys(keys); err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, key := range keys {
		if err := k.ring.AddKey(key); err != nil {
			return fmt.Errorf("gossip keys: %w", err)
		}
	}
	if err := k.ring.UseKey(keys[0]); err != nil {
		return fmt.Errorf("gossip keys: %w", err)
	}
	want := func(key []byte) bool {
		return slices.ContainsFunc(keys, func(w []byte) bool { return bytes.Equal(w, key) })
	}
	installed := slices.Clone(k.ring.GetKeys())
	first := slices.IndexFunc(installed, func(key []byte) bool { return !want(key) })
	if first < 0 {
		return nil
	}
	// The primary (index 0) is wanted, so first >= 1 and it stays. Remove
	// the tail from its end, each key the last one when removed, then put
	// back the wanted ones (AddKey appends).
	tail := installed[first:]
	for i := len(tail) - 1; i >= 0; i-- {
		if err := k.ring.RemoveKey(tail[i]); err != nil {
			return fmt.Errorf("gossip keys: %w", err)
		}
	}
	for _, key := range tail {
		if want(key) {
			if err := k.ring.AddKey(key); err != nil {
				return fmt.Errorf("gossip keys: %w", err)
			}
		}
	}
	return nil
}

// gossipKeySetter is the discovery that can change its keys (memberlist;
// tests' fakes cannot).
type gossipKeySetter interface {
	setKeys(keys [][]byte) error
}

// setKeys implements gossipKeySetter.
func (g *gossip) setKeys(keys [][]byte) error {
	if g.keys == nil {
		return errors.New("gossip keys: gossip was started without a key; a key can only be added by restarting with one")
	}
	return g.keys.set(keys)
}

// SetGossipKeys replaces the gossip keys while the node runs: keys[0]
// encrypts what this node sends from now on, and all of keys decrypt what
// it receives. A rotation (docs/OPERATIONS.md) is three such changes on
// every node, each finished everywhere before the next: add the new key
// as a second key, make it the first, drop the old one. The node must have
// started with gossip encryption on.
func (n *Node) SetGossipKeys(keys [][]byte) error {
	s, ok := n.disco.(gossipKeySetter)
	if !ok {
		return errors.New("gossip keys: this node runs no encrypted gossip")
	}
	return s.setKeys(keys)
}
