package nemesis

import "syscall"

// procAttr puts a node in its own process group and has the kernel kill
// it if the runner dies first, so an interrupted run leaves no node
// behind.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
