package main

// open is the number of connections holding a slot.
func (l *limitListener) open() int { return len(l.slots) }
