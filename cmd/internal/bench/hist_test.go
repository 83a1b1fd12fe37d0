package bench

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestHistBucketsAreContiguousAndContainTheirValues(t *testing.T) {
	prevHi := uint64(0)
	for i := range histBuckets {
		lo, hi := histBucketRange(i)
		if i > 0 && lo != prevHi+1 {
			t.Fatalf("bucket %d starts at %d, want %d (right after bucket %d)", i, lo, prevHi+1, i-1)
		}
		if histBucket(lo) != i || histBucket(hi) != i {
			t.Fatalf("bucket %d = [%d, %d], but those values map to %d and %d", i, lo, hi, histBucket(lo), histBucket(hi))
		}
		// The promised precision: a bucket is narrower than 1/128 of its values.
		if width := hi - lo + 1; lo >= histSubCount && width*histSubCount > lo {
			t.Fatalf("bucket %d = [%d, %d] is wider than 1/%d of its lower bound", i, lo, hi, histSubCount)
		}
		prevHi = hi
	}
	if prevHi != histMaxValue {
		t.Fatalf("the last bucket ends at %d, want histMaxValue %d", prevHi, uint64(histMaxValue))
	}
}

func TestHistogramQuantilesOfAUniformSample(t *testing.T) {
	var h histogram
	const n = 100_000
	// 1 µs to 100 ms in a shuffled order: the order must not matter.
	values := make([]time.Duration, n)
	for i := range values {
		values[i] = time.Duration(i+1) * time.Microsecond
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(n, func(i, j int) { values[i], values[j] = values[j], values[i] })
	for _, v := range values {
		h.record(v)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{
		{0.5, 50 * time.Millisecond},
		{0.9, 90 * time.Millisecond},
		{0.99, 99 * time.Millisecond},
		{0.999, 99_900 * time.Microsecond},
		{1, 100 * time.Millisecond},
		{0.00001, time.Microsecond},
	} {
		got := h.quantile(c.q)
		if diff := (got - c.want).Abs(); float64(diff) > float64(c.want)/histSubCount {
			t.Errorf("quantile(%v) = %v, want %v within 1/%d", c.q, got, c.want, histSubCount)
		}
	}
	if h.count() != n || h.maxValue() != 100*time.Millisecond {
		t.Errorf("count %d, max %v; want %d and 100ms", h.count(), h.maxValue(), n)
	}
	if want := 50_000_500 * time.Nanosecond; h.mean() != want {
		t.Errorf("mean = %v, want exactly %v", h.mean(), want)
	}
}

func TestHistogramQuantileIsNearestRank(t *testing.T) {
	var h histogram
	// Small values have exact buckets, so nearest rank is checked exactly.
	for _, v := range []time.Duration{5, 1, 4, 2, 3, 10, 9, 8, 7, 6} {
		h.record(v)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.1, 1}, {0.11, 2}, {0.5, 5}, {0.51, 6}, {0.9, 9}, {0.99, 10}, {1, 10}, {0, 1}} {
		if got := h.quantile(c.q); got != c.want {
			t.Errorf("quantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
}

func TestHistogramEdgeCases(t *testing.T) {
	var empty histogram
	if empty.quantile(0.5) != 0 || empty.mean() != 0 || empty.maxValue() != 0 || empty.count() != 0 {
		t.Errorf("an empty histogram reports %v %v %v %d, want zeros", empty.quantile(0.5), empty.mean(), empty.maxValue(), empty.count())
	}
	var h histogram
	h.record(-time.Second) // a clock step backwards
	h.record(24 * time.Hour)
	if got := h.quantile(0.5); got != 0 {
		t.Errorf("a negative sample counts as %v, want 0", got)
	}
	if got := h.maxValue(); got != histMaxValue {
		t.Errorf("a huge sample is kept as %v, want the cap %v", got, time.Duration(histMaxValue))
	}
	// A single sample is reported exactly: clamped to min and max.
	var one histogram
	one.record(123_456_789)
	if got := one.quantile(0.99); got != 123_456_789 {
		t.Errorf("the only sample reads back as %v", got)
	}
}

func TestHistogramMergeEqualsRecordingEverything(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var all, a, b histogram
	for i := range 10_000 {
		v := time.Duration(rng.ExpFloat64() * float64(time.Millisecond))
		all.record(v)
		if i%3 == 0 {
			a.record(v)
		} else {
			b.record(v)
		}
	}
	var merged histogram
	merged.merge(&histogram{}) // merging nothing changes nothing
	merged.merge(&a)
	merged.merge(&b)
	if merged.count() != all.count() || merged.min != all.min || merged.max != all.max || !slices.Equal(merged.counts[:], all.counts[:]) {
		t.Fatal("merging two halves differs from recording every sample in one histogram")
	}
	for _, q := range []float64{0.5, 0.9, 0.99} {
		if merged.quantile(q) != all.quantile(q) {
			t.Errorf("quantile(%v): merged %v, direct %v", q, merged.quantile(q), all.quantile(q))
		}
	}
}
