//go:build !linux

package realtime

// canWaitReadable: elsewhere a read waits in the TLS layer.
const canWaitReadable = false

// readable is never called where canWaitReadable is false.
func readable(uintptr) bool { return true }
