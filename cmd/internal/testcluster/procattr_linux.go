package testcluster

import "syscall"

// SysProcAttr returns the attributes a node's process starts with. With
// ownGroup the process leads a process group of its own, so a ^C meant
// for the runner does not reach the nodes before the runner can record
// it. On Linux the kernel also kills the process (SIGKILL) if its parent
// dies first, so an interrupted run leaves no node behind.
func SysProcAttr(ownGroup bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: ownGroup, Pdeathsig: syscall.SIGKILL}
}
