package watch

import "sync"

// spread keeps the watchers on different nodes where it can: a fault
// that ends the streams on one node, or a kill-all after which the first
// node back catches every watcher, would otherwise leave them moving in
// step on the same node, and a fault on another node would go unwatched.
type spread struct {
	mu sync.Mutex
	on []string // per watcher, the node of its open stream ("" while none)
}

func newSpread(watchers int) *spread {
	return &spread{on: make([]string, watchers)}
}

// next returns the index, among nodes, of the node watcher id should try
// after the one at index cur: the first other one, in order, that no
// other watcher streams from; the next one if every other node has one.
func (s *spread) next(id int, nodes []string, cur int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for step := 1; step < len(nodes); step++ {
		i := (cur + step) % len(nodes)
		taken := false
		for w, n := range s.on {
			taken = taken || (w != id && n == nodes[i])
		}
		if !taken {
			return i
		}
	}
	return (cur + 1) % len(nodes)
}

// set records the node watcher id streams from ("" for none).
func (s *spread) set(id int, node string) {
	s.mu.Lock()
	s.on[id] = node
	s.mu.Unlock()
}
