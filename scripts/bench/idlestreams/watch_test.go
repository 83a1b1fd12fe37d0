package main

import (
	"bufio"
	"strings"
	"testing"
)

// TestReadPutsCountsMissingAndStale: a stream's rounds are checked in
// order; keep-alives, puts below the location and the first null count
// for nothing.
func TestReadPutsCountsMissingAndStale(t *testing.T) {
	stream := strings.Join([]string{
		"event: put", `data: {"path":"/","data":null}`, "",
		"event: keep-alive", "data: null", "",
		"event: put", `data: {"path":"/","data":1}`, "",
		"event: put", `data: {"path":"/","data":2}`, "",
		"event: put", `data: {"path":"/x","data":9}`, "", // not the location itself
		"event: put", `data: {"path":"/","data":5}`, "", // 3 and 4 missing
		"event: put", `data: {"path":"/","data":5}`, "", // again: stale
		"event: put", `data: {"path":"/","data":4}`, "", // late: stale
		"event: put", `data: {"path":"/","data":6}`, "",
	}, "\n") + "\n"
	var st watchState
	if err := readPuts(bufio.NewReader(strings.NewReader(stream)), &st); err == nil {
		t.Fatal("readPuts returned without the stream's end")
	}
	if st.last.Load() != 6 || st.missing.Load() != 2 || st.stale.Load() != 2 {
		t.Fatalf("last %d, missing %d, stale %d; want 6, 2, 2", st.last.Load(), st.missing.Load(), st.stale.Load())
	}
}

func TestTotals(t *testing.T) {
	states := []*watchState{{}, {}, {}}
	for _, v := range []int64{1, 2, 3} {
		states[0].note(v)
	}
	states[1].note(1)
	states[1].note(3)
	states[2].note(2)
	got := totals(states, 3)
	want := watchTotals{streams: 3, complete: 2, missing: 2, behind: 1, behindLast: 2}
	if got != want {
		t.Fatalf("totals %+v, want %+v", got, want)
	}
}
