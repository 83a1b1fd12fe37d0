package main

import (
	"context"
	"io"
	"testing"
	"time"
)

func TestGap(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	var s loadStats
	s.acks = map[string]time.Time{}
	for i, ms := range []int{100, 200, 1500, 1600, 3000} {
		s.ack(string(rune('a'+i)), at(ms))
	}
	for _, c := range []struct {
		from, to, want, wantAt int
	}{
		{0, 4000, 1400, 1600},   // 1600 → 3000 vs 200 → 1500 (1300)
		{0, 1000, 800, 200},     // the window's end counts
		{2000, 2500, 500, 2000}, // no acknowledgement at all: one gap
		{150, 1550, 1300, 200},
	} {
		gap, start := s.gap(at(c.from), at(c.to))
		if gap != time.Duration(c.want)*time.Millisecond || !start.Equal(at(c.wantAt)) {
			t.Errorf("gap(%d, %d) = %s at %s, want %dms at %d", c.from, c.to, gap, start.Sub(base), c.want, c.wantAt)
		}
	}
}

func TestWatcherFollowsPods(t *testing.T) {
	w := newWatcher(kube{})
	ev := func(typ, uid, ip string, ready, running bool) watchEvent {
		var o podJSON
		o.Metadata.Name, o.Metadata.UID = "arbor-0", uid
		o.Status.PodIP = ip
		status := "False"
		if ready {
			status = "True"
		}
		o.Status.Conditions = []podCondition{{Type: "Ready", Status: status}}
		if running {
			o.Status.ContainerStatuses = []containerStatus{{}}
			o.Status.ContainerStatuses[0].State.Running = &runningState{}
		}
		return watchEvent{Type: typ, Object: o}
	}
	t0 := time.Now()
	w.apply(ev("ADDED", "u1", "10.244.0.10", false, true), t0)
	w.apply(ev("MODIFIED", "u1", "10.244.0.10", true, true), t0.Add(time.Second))
	p, ok := w.get("arbor-0")
	if !ok || !p.Ready || p.SeenReady.Sub(p.SeenRunning) != time.Second {
		t.Fatalf("pod %+v", p)
	}
	if got := w.ready(); len(got) != 1 || got[0] != "arbor-0" {
		t.Fatalf("ready %v", got)
	}
	w.apply(ev("DELETED", "u1", "10.244.0.10", true, true), t0.Add(2*time.Second))
	if _, ok := w.get("arbor-0"); ok {
		t.Fatal("a deleted pod is still current")
	}
	if _, err := w.dial(context.Background(), "tcp", "arbor-0.arbor-headless.arbor.svc.cluster.local:8443"); err == nil {
		t.Fatal("dialled a pod that has no address")
	}
	w.apply(ev("ADDED", "u2", "10.244.0.11", false, false), t0.Add(3*time.Second))
	if p, _ := w.get("arbor-0"); p.UID != "u2" || p.IP != "10.244.0.11" || p.Ready {
		t.Fatalf("replacement %+v", p)
	}
	if old, _ := w.byID("u1"); old.SeenGone.IsZero() {
		t.Fatal("the old pod's deletion was not recorded")
	}
}

func TestFlagsRequired(t *testing.T) {
	if _, err := parseFlags(nil, io.Discard); err == nil {
		t.Fatal("no flags accepted")
	}
	o, err := parseFlags([]string{"-kubeconfig", "k", "-old-tag", "a", "-new-tag", "b", "-certs", "c", "-work", "w"}, io.Discard)
	if err != nil || o.maxReady != 3*time.Second {
		t.Fatalf("%+v %v", o, err)
	}
}
