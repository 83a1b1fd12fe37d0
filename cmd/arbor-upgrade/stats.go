package main

import (
	"math"
	"slices"
	"time"

	"github.com/arbordb/arbor/cmd/internal/history"
)

// window is a stretch of the run, in nanoseconds since the load started.
type window struct{ From, To int64 }

// writeStats describes the writes of one window.
type writeStats struct {
	// Invoked counts the writes called in the window, by outcome (Failed:
	// refused, or a compare-and-set that lost).
	Invoked, OK, Unknown, Failed int
	// LongestGap is the longest time within the window during which no
	// write was acknowledged: the write unavailability a client saw.
	LongestGap time.Duration
	// GapAt is when that gap began (since the load started).
	GapAt time.Duration
	// P50, P99 and Max are latencies of the acknowledged writes called
	// in the window.
	P50, P99, Max time.Duration
}

// measureWrites computes the statistics of w from the history: the
// workload's writes (every kind: PUT, PATCH, compare-and-set, increment,
// POST), not the final reads.
func measureWrites(ops []history.Op, w window) writeStats {
	var s writeStats
	var acks []int64
	var lat []time.Duration
	for i := range ops {
		o := &ops[i]
		if !o.IsWrite() || o.Final {
			continue
		}
		if o.Acked() && o.Return > w.From && o.Return < w.To {
			acks = append(acks, o.Return)
		}
		if o.Call < w.From || o.Call >= w.To {
			continue
		}
		s.Invoked++
		switch o.Outcome {
		case history.OK:
			s.OK++
			lat = append(lat, time.Duration(o.Return-o.Call))
		case history.Unknown:
			s.Unknown++
		default: // refused, or a compare-and-set that lost (412)
			s.Failed++
		}
	}
	gap, at := longestGap(acks, w)
	s.LongestGap, s.GapAt = time.Duration(gap), time.Duration(at)
	slices.Sort(lat)
	s.P50, s.P99 = percentile(lat, 0.50), percentile(lat, 0.99)
	if len(lat) > 0 {
		s.Max = lat[len(lat)-1]
	}
	return s
}

// longestGap returns the longest interval of w free of the times in acks
// (each inside w), and where it starts. The window's edges count as
// acknowledgements: a window with none is one gap.
func longestGap(acks []int64, w window) (gap, at int64) {
	acks = slices.Clone(acks)
	slices.Sort(acks)
	prev := w.From
	gap, at = 0, w.From
	for _, t := range append(acks, w.To) {
		if t-prev > gap {
			gap, at = t-prev, prev
		}
		prev = t
	}
	return gap, at
}

// percentile returns the p-quantile (0 < p ≤ 1) of sorted durations by
// the nearest-rank method; 0 when there are none.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}
