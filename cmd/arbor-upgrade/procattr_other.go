//go:build !linux

package main

import "syscall"

// procAttr puts a node in its own process group, so a ^C meant for the
// runner does not stop the nodes behind its back.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
