package tree

import "unicode/utf8"

// keyInfo caches what the Firebase key order needs to know about a key.
type keyInfo struct {
	key   string
	isInt bool
	ival  int32
}

func newKeyInfo(k string) keyInfo {
	v, ok := parseInt32Key(k)
	return keyInfo{key: k, isInt: ok, ival: v}
}

// mayBeIntKey is parseInt32Key's first test, cheap enough to make before
// each comparison: most keys start with a letter and are never integers.
func mayBeIntKey(k string) bool { return len(k) > 0 && (k[0] == '-' || k[0]-'0' <= 9) }

// parseInt32Key reports whether k is a 32-bit signed integer in the form the
// Firebase SDKs accept (`^-?0*\d{1,10}$`, leading zeros allowed).
func parseInt32Key(k string) (int32, bool) {
	if len(k) == 0 || len(k) > 11+20 || !mayBeIntKey(k) {
		return 0, false
	}
	i := 0
	neg := false
	if k[0] == '-' {
		neg = true
		i = 1
		if len(k) == 1 {
			return 0, false
		}
	}
	for i < len(k)-1 && k[i] == '0' {
		i++
	}
	digits := k[i:]
	if len(digits) == 0 || len(digits) > 10 {
		return 0, false
	}
	var v int64
	for j := 0; j < len(digits); j++ {
		c := digits[j]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	if v < -2147483648 || v > 2147483647 {
		return 0, false
	}
	return int32(v), true
}

func compareKeyInfo(a, b *keyInfo) int {
	return compareParsedKeys(a.key, a.ival, a.isInt, b.key, b.ival, b.isInt)
}

// compareKeyTo compares key with a key parsed before.
func compareKeyTo(key string, b *keyInfo) int {
	v, ok := parseInt32Key(key)
	return compareParsedKeys(key, v, ok, b.key, b.ival, b.isInt)
}

// compareParsedKeys is the key order over keys and their integer forms.
func compareParsedKeys(a string, av int32, aInt bool, b string, bv int32, bInt bool) int {
	switch {
	case aInt && bInt:
		if av != bv {
			if av < bv {
				return -1
			}
			return 1
		}
		if len(a) != len(b) {
			if len(a) < len(b) {
				return -1
			}
			return 1
		}
		return CompareUTF16(a, b)
	case aInt:
		return -1
	case bInt:
		return 1
	}
	return CompareUTF16(a, b)
}

// CompareKeys orders two keys the Firebase way: keys that parse as 32-bit
// integers first, numerically (shorter string first on a tie), then all
// others by UTF-16 code units.
func CompareKeys(a, b string) int {
	if !mayBeIntKey(a) && !mayBeIntKey(b) {
		return CompareUTF16(a, b)
	}
	av, aInt := parseInt32Key(a)
	bv, bInt := parseInt32Key(b)
	return compareParsedKeys(a, av, aInt, b, bv, bInt)
}

// CompareUTF16 compares two UTF-8 strings by their UTF-16 code units, the
// order JavaScript and the Firebase SDKs use. It differs from Go's byte order
// only between U+E000..U+FFFF and supplementary-plane characters.
func CompareUTF16(a, b string) int {
	n := len(a)
	if len(b) < n {
		n = len(b)
	}
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		switch {
		case len(a) < len(b):
			return -1
		case len(a) > len(b):
			return 1
		}
		return 0
	}
	// Back up to the start of the rune that differs.
	for i > 0 && !utf8.RuneStart(a[i]) {
		i--
	}
	ra, _ := utf8.DecodeRuneInString(a[i:])
	rb, _ := utf8.DecodeRuneInString(b[i:])
	ua, ub := utf16Lead(ra), utf16Lead(rb)
	if ua != ub {
		if ua < ub {
			return -1
		}
		return 1
	}
	if ra < rb {
		return -1
	}
	return 1
}

// utf16Lead is the first UTF-16 code unit of r.
func utf16Lead(r rune) rune {
	if r >= 0x10000 {
		return 0xD800 + ((r - 0x10000) >> 10)
	}
	return r
}
