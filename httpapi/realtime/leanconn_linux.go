package realtime

import "syscall"

// canWaitReadable: this platform can tell a readable socket without
// reading it.
const canWaitReadable = true

// readable is a syscall.RawConn read function: true once the socket has
// data, an end or an error to report (a peek of one byte that would not
// block), false to wait.
func readable(fd uintptr) bool {
	var b [1]byte
	_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return err != syscall.EAGAIN && err != syscall.EINTR
}
