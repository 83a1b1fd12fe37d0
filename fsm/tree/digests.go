package tree

import (
	"runtime"
	"sync"
)

// An object's lane sum adds one SHA-256 per child, and a write of a
// million children (a PUT of a large object, a PATCH of many keys)
// spends most of its time there, on the Raft apply loop where everyone
// waits for it. The sum does not depend on the order of its terms, so
// large ones are shared among goroutines.

// parallelMin is the number of digests (or children to merge) from
// which the work is shared among GOMAXPROCS goroutines (a variable for
// tests).
var parallelMin = 2048

// workersFor is how many goroutines share n pieces of work: 1 below
// parallelMin.
func workersFor(n int) int {
	if n < parallelMin {
		return 1
	}
	return max(1, min(runtime.GOMAXPROCS(0), n/(parallelMin/2)))
}

// sumDigests is the lane sum of entries' digests.
func sumDigests(entries []entry) [4]uint64 {
	return parallelLanes(len(entries), func(lo, hi int) [4]uint64 {
		return digestParts([][]entry{entries[lo:hi]})
	})
}

// parallelLanes is the lane sum of sum(lo, hi) over ranges that cover
// [0, n) once, each computed by a goroutine of its own.
func parallelLanes(n int, sum func(lo, hi int) [4]uint64) [4]uint64 {
	workers := workersFor(n)
	sums := make([][4]uint64, workers)
	var wg sync.WaitGroup
	for w := 1; w < workers; w++ {
		wg.Go(func() { sums[w] = sum(w*n/workers, (w+1)*n/workers) })
	}
	sums[0] = sum(0, n/workers)
	wg.Wait()
	var total [4]uint64
	for _, s := range sums {
		total = addLanes(total, s)
	}
	return total
}

// childrenLanes is the lane sum of every child of t: what an object made
// of them keeps in its digest.
func childrenLanes(t *btreeChildren) [4]uint64 {
	var parts [][]entry
	t.Walk(func(items []entry) bool {
		parts = append(parts, items)
		return true
	})
	return sumDigestsOf(parts, t.Len())
}

// sumDigestsOf is the lane sum of the digests of the n entries in parts.
func sumDigestsOf(parts [][]entry, n int) [4]uint64 {
	workers := workersFor(n)
	sums := make([][4]uint64, workers)
	var wg sync.WaitGroup
	w, done := 0, 0
	for len(parts) > 0 {
		// Give worker w the parts that bring it to its share.
		end := (w + 1) * n / workers
		k, count := 0, done
		for k < len(parts) && (count < end || w == workers-1) {
			count += len(parts[k])
			k++
		}
		mine, sum := parts[:k], &sums[w]
		if w == workers-1 || len(parts) == k {
			*sum = digestParts(mine)
		} else {
			wg.Go(func() { *sum = digestParts(mine) })
		}
		parts, done, w = parts[k:], count, w+1
	}
	wg.Wait()
	var total [4]uint64
	for _, s := range sums {
		total = addLanes(total, s)
	}
	return total
}

func digestParts(parts [][]entry) [4]uint64 {
	var sum [4]uint64
	for _, part := range parts {
		for _, e := range part {
			sum = addLanes(sum, entryDigest(e.key, e.node))
		}
	}
	return sum
}
