package model

import (
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// TestSearchGivesUpOverTheMemoryLimit: a search still running when the
// heap passes the limit is abandoned quickly and reported as undecided,
// never as a verdict.
func TestSearchGivesUpOverTheMemoryLimit(t *testing.T) {
	slow := porcupine.Model{
		Init: func() any { return 0 },
		Step: func(s, _, _ any) (bool, any) {
			time.Sleep(time.Millisecond)
			return true, s.(int) + 1
		},
	}
	var ops []porcupine.Operation
	for i := range 5000 {
		ops = append(ops, porcupine.Operation{ClientId: 0, Input: i, Call: int64(2 * i), Output: nil, Return: int64(2*i + 1)})
	}
	start := time.Now()
	res, _, why := search(slow, ops, Options{MemoryLimit: 1}, false)
	if res != porcupine.Unknown || !strings.Contains(why, "heap") {
		t.Errorf("got %s (%q), want Unknown because of the heap", res, why)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("the search took %s to give up", took)
	}
}
