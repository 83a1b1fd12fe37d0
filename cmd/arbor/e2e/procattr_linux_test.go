package e2e

import "syscall"

// procAttr makes the kernel kill a node if the test binary dies first, so
// an interrupted test run leaves no arbor processes behind.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
