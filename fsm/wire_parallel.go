package fsm

import (
	"errors"
	"runtime"
	"sync"

	"github.com/arbordb/arbor/fsm/tree"
)

// A PATCH of a million fields takes a million leaves to build and hash,
// and every node does it on the Raft apply loop: wireFieldsParallel
// shares the fields among goroutines. A first pass skips over the fields
// (reading lengths and tags only) to find where each goroutine's share
// starts; each share is then decoded exactly as readFields would.

// errWireShare is a share that did not end where the next one starts.
var errWireShare = errors.New("wire: fields share misread")

// wireParallelFields is the number of fields from which the decoding is
// shared (a variable for tests).
var wireParallelFields = 4096

// wireFieldsParallel decodes len(fields) fields into fields with several
// goroutines and reports whether it did. It leaves anything it cannot
// decode (a malformed entry) to readFields, which finds the first error
// as it always has, and d as it was.
func (d *decoder) wireFieldsParallel(fields []tree.Field) bool {
	workers := min(runtime.GOMAXPROCS(0), len(fields)/(wireParallelFields/2))
	if len(fields) < wireParallelFields || workers < 2 {
		return false
	}
	// shares[w] holds the bytes of goroutine w's fields, and no more.
	shares := make([][]byte, workers)
	skip := decoder{b: d.b}
	for w := range workers {
		start := skip.b
		for range (w+1)*len(fields)/workers - w*len(fields)/workers {
			skip.skipField()
		}
		if skip.err != nil {
			return false
		}
		shares[w] = start[:len(start)-len(skip.b)]
	}
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			share := decoder{b: shares[w]}
			share.readFields(fields[w*len(fields)/workers : (w+1)*len(fields)/workers])
			if errs[w] = share.err; errs[w] == nil && len(share.b) != 0 {
				errs[w] = errWireShare // cannot happen: skipField reads what readFields does
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			clear(fields)
			return false
		}
	}
	d.b = skip.b
	return true
}

// skipField skips one field as readFields would read it.
func (d *decoder) skipField() {
	segs := d.uvarint()
	if segs > tree.MaxDepth+1 {
		d.fail()
		return
	}
	for range segs {
		d.bytes()
	}
	d.skipWire(int(segs))
}

// skipWire skips one value as wireNode would read it at depth.
func (d *decoder) skipWire(depth int) {
	if depth > wireDepth {
		d.fail()
		return
	}
	tags := d.take(1)
	if d.err != nil {
		return
	}
	switch tags[0] &^ wireFlags {
	case wireNull, wireFalse, wireTrue, wireTimestamp:
	case wireInt, wireIncInt:
		d.varint()
	case wireFloat, wireIncFloat:
		d.take(8)
	case wireString:
		d.bytes()
	case wireObject:
		count := d.uvarint()
		if count > uint64(len(d.b)) {
			d.fail()
			return
		}
		for range count {
			d.bytes()
			d.skipWire(depth + 1)
			if d.err != nil {
				return
			}
		}
	default:
		d.fail()
		return
	}
	if tags[0]&wirePriority != 0 {
		d.skipWire(depth + 1)
	}
}
