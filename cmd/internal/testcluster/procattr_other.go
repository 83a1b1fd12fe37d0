//go:build !linux

package testcluster

import "syscall"

// SysProcAttr returns the attributes a node's process starts with. With
// ownGroup the process leads a process group of its own, so a ^C meant
// for the runner does not reach the nodes before the runner can record
// it. Without a parent-death signal outside Linux, the runner's cleanup
// is what ends the nodes.
func SysProcAttr(ownGroup bool) *syscall.SysProcAttr {
	if !ownGroup {
		return nil
	}
	return &syscall.SysProcAttr{Setpgid: true}
}
