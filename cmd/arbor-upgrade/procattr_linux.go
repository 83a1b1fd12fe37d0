package main

import "syscall"

// procAttr puts a node in its own process group (a ^C meant for the
// runner does not stop the nodes behind its back) and has the kernel kill
// it if the runner dies, so no node outlives a run.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
