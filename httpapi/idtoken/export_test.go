package idtoken

// len reports the number of entries, for tests.
func (c *cache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
