package main

import (
	"testing"
	"time"

	"github.com/arbordb/arbor/cmd/internal/history"
)

func TestLongestGap(t *testing.T) {
	for _, tc := range []struct {
		name    string
		acks    []int64
		w       window
		gap, at int64
	}{
		{"no acknowledgement: the whole window", nil, window{10, 110}, 100, 10},
		{"from the window's start", []int64{60, 70}, window{10, 110}, 50, 10},
		{"to the window's end", []int64{20, 30}, window{10, 110}, 80, 30},
		{"in the middle, unsorted", []int64{90, 20, 30}, window{10, 110}, 60, 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gap, at := longestGap(tc.acks, tc.w)
			if gap != tc.gap || at != tc.at {
				t.Fatalf("longestGap = %d at %d, want %d at %d", gap, at, tc.gap, tc.at)
			}
		})
	}
}

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i))
	}
	for _, tc := range []struct {
		p    float64
		want time.Duration
	}{{0.5, 50}, {0.99, 99}, {1, 100}, {0.001, 1}} {
		if got := percentile(d, tc.p); got != tc.want {
			t.Errorf("percentile(1..100, %v) = %d, want %d", tc.p, got, tc.want)
		}
	}
	if got := percentile(nil, 0.99); got != 0 {
		t.Errorf("percentile(none) = %d", got)
	}
}

func TestMeasureWrites(t *testing.T) {
	ms := int64(time.Millisecond)
	ops := []history.Op{
		{Type: history.Write, Outcome: history.OK, Call: 0, Return: 5 * ms},        // before the window: not counted, but no ack inside either
		{Type: history.Write, Outcome: history.OK, Call: 10 * ms, Return: 14 * ms}, // 4 ms
		{Type: history.CAS, Outcome: history.OK, Call: 12 * ms, Return: 20 * ms},   // 8 ms
		{Type: history.Read, Outcome: history.OK, Call: 13 * ms, Return: 15 * ms},  // a read: not counted
		{Type: history.Incr, Outcome: history.Unknown, Call: 20 * ms, Return: 2000 * ms},
		{Type: history.Append, Outcome: history.Fail, Call: 30 * ms, Return: 31 * ms},
		{Type: history.CAS, Outcome: history.Rejected, Call: 40 * ms, Return: 41 * ms},
		{Type: history.Write, Patch: true, Outcome: history.OK, Call: 90 * ms, Return: 100 * ms}, // 10 ms
		{Type: history.Read, Final: true, Outcome: history.OK, Call: 95 * ms, Return: 96 * ms},
	}
	s := measureWrites(ops, window{10 * ms, 110 * ms})
	if s.Invoked != 6 || s.OK != 3 || s.Unknown != 1 || s.Failed != 2 {
		t.Errorf("counts = %+v", s)
	}
	if s.LongestGap != 80*time.Millisecond || s.GapAt != 20*time.Millisecond {
		t.Errorf("longest gap %s at %s, want 80ms at 20ms", s.LongestGap, s.GapAt)
	}
	if s.P50 != 8*time.Millisecond || s.P99 != 10*time.Millisecond || s.Max != 10*time.Millisecond {
		t.Errorf("latencies p50 %s p99 %s max %s", s.P50, s.P99, s.Max)
	}
}
