//go:build unix

package main

import "syscall"

// raiseFDLimit raises this process's soft descriptor limit to its hard
// limit and returns the limit in force.
func raiseFDLimit() (uint64, error) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0, err
	}
	if r.Cur < r.Max {
		raised := r
		raised.Cur = r.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err != nil {
			return uint64(r.Cur), err
		}
		r = raised
	}
	return uint64(r.Cur), nil
}
