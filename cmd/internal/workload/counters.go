package workload

import (
	"fmt"
	"sync"
)

// bitsPerKey is how many increments one counter key takes: each adds its
// own power of two, 2^0 … 2^61, so the value stays below 2^62 and an
// int64 never overflows.
const bitsPerKey = 62

// counters hands out counter keys and increments. Every increment of a
// key adds a power of two no other increment of that key adds, so the
// counter's value shows exactly which increments it holds — an
// increment is as observable as a unique write. That lets the checker
// settle an increment whose outcome the client never learnt: seen in a
// later value, it happened before that read returned; seen nowhere, not
// even in the final reads, it did not happen. Left open-ended instead,
// every set of such increments would have to be tried at every point of
// the history (a real run's key with 94 of them exceeded 4 GiB).
//
// Each of the slots uses one key at a time and moves to a fresh key when
// its bits run out, so keys rotate by use rather than by time.
type counters struct {
	mu   sync.Mutex
	seq  []int // per slot: which key is in use
	next []int // per slot: the next bit of that key
}

func newCounters(slots int) *counters {
	return &counters{seq: make([]int, slots), next: make([]int, slots)}
}

func counterKey(slot, seq int) string {
	return fmt.Sprintf("ctr/s%d/n%d", slot, seq)
}

// nextIncr returns the key and the delta of a new increment in slot.
func (c *counters) nextIncr(slot int) (string, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.next[slot] == bitsPerKey {
		c.seq[slot]++
		c.next[slot] = 0
	}
	bit := c.next[slot]
	c.next[slot]++
	return counterKey(slot, c.seq[slot]), 1 << bit
}

// current returns the key slot uses now.
func (c *counters) current(slot int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return counterKey(slot, c.seq[slot])
}
