package realtime

import (
	"crypto/sha1"
	"encoding/base64"
	"math"
	"slices"
	"strings"

	"github.com/arbordb/arbor/fsm/tree"
)

// Hash is the Firebase SDKs' "simple hash" of v: the base-64 SHA-1 of a
// canonical text of the value, or "" for null. Clients send it with a
// listen (the data they hold, so an unchanged location need not be sent
// again) and with a transaction's set (the data the transaction ran on,
// so a stale guess is refused with datastale). It must be the SDKs' hash
// bit for bit:
//
//   - a leaf is its priority's text, if any ("priority:" + type + ":" +
//     value + ":"), then its JavaScript type, ":", and its value, numbers
//     written by ieee754Hex;
//   - an object is its priority's text, if any, then ":" + key + ":" +
//     the child's hash for each child in priority order (no priority
//     first, then numbers, then strings; ties by key order);
//   - integers are JavaScript numbers, so 1 and 1.0 hash alike.
//
// SHA-1 is the SDKs' choice, not a security measure: it names versions.
func Hash(v *tree.Node) string {
	if v == nil {
		return ""
	}
	var b strings.Builder
	appendPriorityText(&b, v.Priority())
	if v.Kind() != tree.KindObject {
		appendLeafText(&b, v)
		return sha1Base64(b.String())
	}
	type child struct {
		key  string
		node *tree.Node
	}
	kids := make([]child, 0, v.Len())
	v.Each(func(k string, c *tree.Node) bool {
		kids = append(kids, child{k, c})
		return true
	})
	// Each walks key order; a stable sort by priority keeps it for ties.
	slices.SortStableFunc(kids, func(a, b child) int { return comparePriorities(a.node.Priority(), b.node.Priority()) })
	for _, c := range kids {
		h := Hash(c.node)
		if h == "" {
			continue
		}
		b.WriteByte(':')
		b.WriteString(c.key)
		b.WriteByte(':')
		b.WriteString(h)
	}
	if b.Len() == 0 {
		return ""
	}
	return sha1Base64(b.String())
}

// sha1Base64 is the standard (padded) base-64 of the SHA-1 of s's UTF-8.
func sha1Base64(s string) string {
	sum := sha1.Sum([]byte(s))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// appendPriorityText writes a priority's part of a hash text (nothing
// when p is nil).
func appendPriorityText(b *strings.Builder, p *tree.Node) {
	if p == nil {
		return
	}
	b.WriteString("priority:")
	appendLeafText(b, p)
	b.WriteByte(':')
}

// appendLeafText writes "<JavaScript type>:<value>" for a leaf.
func appendLeafText(b *strings.Builder, n *tree.Node) {
	switch n.Kind() {
	case tree.KindBool:
		if n.BoolValue() {
			b.WriteString("boolean:true")
		} else {
			b.WriteString("boolean:false")
		}
	case tree.KindString:
		b.WriteString("string:")
		b.WriteString(n.StringValue())
	default:
		f, _ := n.Number()
		b.WriteString("number:")
		b.WriteString(ieee754Hex(f))
	}
}

// comparePriorities is the SDKs' priority order: no priority first, then
// numbers (as JavaScript doubles), then strings by UTF-16 code units.
func comparePriorities(a, b *tree.Node) int {
	ra, rb := priorityRank(a), priorityRank(b)
	if ra != rb {
		return ra - rb
	}
	switch ra {
	case 1:
		fa, _ := a.Number()
		fb, _ := b.Number()
		switch {
		case fa < fb:
			return -1
		case fa > fb:
			return 1
		}
		return 0
	case 2:
		return tree.CompareUTF16(a.StringValue(), b.StringValue())
	}
	return 0
}

// priorityRank is 0 for no priority, 1 for a number, 2 for a string.
func priorityRank(p *tree.Node) int {
	switch {
	case p == nil:
		return 0
	case p.Kind() == tree.KindString:
		return 2
	}
	return 1
}

// ieee754Hex writes v as the SDKs do when they hash a number: meant as the
// 16 hex digits of its IEEE-754 bits, but computed with floating-point
// steps whose rounding the hash depends on. The exponent comes from
// floor(log(v)/ln 2), which misses by one near some powers of two; the
// fraction comes from v·2^(52−exponent), which overflows to infinity for
// tiny numbers and loses their fraction bits. A client's hash of such a
// value is what these steps give, so they are reproduced step for step
// (JavaScript's %, Math.floor and Math.round on doubles) rather than read
// from math.Float64bits.
func ieee754Hex(v float64) string {
	const ebits, fbits, bias = 11, 52, 1023
	var sign bool
	var e, f float64
	if v == 0 {
		sign = math.Signbit(v)
	} else {
		sign = v < 0
		v = math.Abs(v)
		if v >= math.Pow(2, 1-bias) {
			ln := math.Min(math.Floor(math.Log(v)/math.Ln2), bias)
			e = ln + bias
			f = jsRound(v*math.Pow(2, fbits-ln) - math.Pow(2, fbits))
		} else {
			f = jsRound(v / math.Pow(2, 1-bias-fbits))
		}
	}
	var bits [64]bool // least significant first, as the SDK pushes them
	for i := 0; i < fbits; i++ {
		bits[i] = jsTruthy(math.Mod(f, 2))
		f = math.Floor(f / 2)
	}
	for i := 0; i < ebits; i++ {
		bits[fbits+i] = jsTruthy(math.Mod(e, 2))
		e = math.Floor(e / 2)
	}
	bits[63] = sign
	const digits = "0123456789abcdef"
	out := make([]byte, 16)
	for i := range out {
		var nibble byte
		for j := 0; j < 4; j++ {
			nibble <<= 1
			if bits[63-(i*4+j)] {
				nibble |= 1
			}
		}
		out[i] = digits[nibble]
	}
	return string(out)
}

// jsRound is JavaScript's Math.round: the nearest integer, halves up.
func jsRound(x float64) float64 {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return x
	}
	r := math.Floor(x)
	if x-r >= 0.5 {
		r++
	}
	return r
}

// jsTruthy is a JavaScript number in a condition: false for 0, -0 and NaN.
func jsTruthy(x float64) bool { return x != 0 && !math.IsNaN(x) }
