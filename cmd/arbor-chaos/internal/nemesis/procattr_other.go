//go:build !linux

package nemesis

import "syscall"

// procAttr puts a node in its own process group; without Pdeathsig
// outside Linux, the runner's Cleanup is what ends the nodes.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
