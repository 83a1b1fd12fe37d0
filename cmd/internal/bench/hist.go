package bench

import (
	"math"
	"math/bits"
	"time"
)

// The latency histogram is log-linear, like HdrHistogram: every power of
// two is cut into 2^histSubBits equal buckets, so a reported percentile is
// within 1/128 (< 0.8 %) of the true sample, whatever the scale, in a fixed
// few tens of kilobytes. Each client records into its own histogram (no
// locks on the hot path); they are merged once at the end.
const (
	histSubBits  = 7
	histSubCount = 1 << histSubBits
	// histMaxValue caps a sample (in nanoseconds, about 18 minutes): no
	// request of a bounded run lasts longer, and the cap bounds the array.
	histMaxValue = 1<<40 - 1
	histBuckets  = (40-1-histSubBits)*histSubCount + 2*histSubCount
)

// histogram counts latency samples in nanoseconds.
type histogram struct {
	counts [histBuckets]uint64
	n      uint64
	sum    float64
	min    uint64
	max    uint64
}

// histBucket maps a value to its bucket: values below 2^histSubBits have a
// bucket each; above, the top histSubBits+1 bits pick the bucket.
func histBucket(v uint64) int {
	if v < histSubCount {
		return int(v)
	}
	shift := bits.Len64(v) - 1 - histSubBits
	return shift*histSubCount + int(v>>uint(shift))
}

// histBucketRange is the inclusive range of values bucket i counts.
func histBucketRange(i int) (lo, hi uint64) {
	if i < 2*histSubCount {
		return uint64(i), uint64(i)
	}
	shift := uint(i/histSubCount - 1)
	sub := uint64(i%histSubCount + histSubCount)
	lo = sub << shift
	return lo, lo + (1 << shift) - 1
}

// record adds one sample; negative durations count as zero.
func (h *histogram) record(d time.Duration) {
	v := uint64(max(d, 0))
	v = min(v, histMaxValue)
	h.counts[histBucket(v)]++
	if h.n == 0 || v < h.min {
		h.min = v
	}
	h.max = max(h.max, v)
	h.n++
	h.sum += float64(v)
}

// merge adds o's samples to h.
func (h *histogram) merge(o *histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	h.n += o.n
	h.sum += o.sum
}

// count is the number of samples.
func (h *histogram) count() uint64 { return h.n }

// mean is the exact average of the samples (0 when empty).
func (h *histogram) mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / float64(h.n))
}

// maxValue is the largest sample (0 when empty), exact.
func (h *histogram) maxValue() time.Duration { return time.Duration(h.max) }

// quantile returns the nearest-rank q-quantile (0 < q ≤ 1): the sample
// with rank ceil(q·n), reported as the middle of its bucket, clamped to the
// exact minimum and maximum. An empty histogram returns 0.
func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = max(min(rank, h.n), 1)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			lo, hi := histBucketRange(i)
			v := lo + (hi-lo)/2
			return time.Duration(min(max(v, h.min), h.max))
		}
	}
	return time.Duration(h.max)
}
