package httpapi

// open is the number of open streams.
func (h *hub) open() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.count
}
