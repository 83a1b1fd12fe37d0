package testcluster

import (
	"syscall"
	"testing"
	"time"
)

// TestSysProcAttr: an own process group when asked, and on Linux always
// the parent-death signal.
func TestSysProcAttr(t *testing.T) {
	for _, own := range []bool{false, true} {
		a := SysProcAttr(own)
		if a.Setpgid != own || a.Pdeathsig != syscall.SIGKILL {
			t.Errorf("SysProcAttr(%v) = %+v", own, a)
		}
	}
	c := helper(t, "serve")
	c.OwnGroup = true
	p, err := Start(c)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill(30 * time.Second)
	if pgid, err := syscall.Getpgid(p.Pid()); err != nil || pgid != p.Pid() {
		t.Errorf("process group %d (%v), want its own, %d", pgid, err, p.Pid())
	}
}
