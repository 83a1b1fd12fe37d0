package rules

import (
	"strings"
	"unicode/utf8"
)

// stringCall evaluates a string method. Every method pays for the bytes it
// scans, and every method that builds a string checks the result's size.
func (ev *evaluator) stringCall(s string, n *node) (val, error) {
	if n.method == mMatches {
		if err := ev.charge(1 + len(s)/64); err != nil {
			return val{}, err
		}
		return boolVal(n.kids[1].re.MatchString(s)), nil
	}
	var args [2]string
	for i, a := range n.kids[1:] {
		x, err := ev.strArg(a)
		if err != nil {
			return val{}, err
		}
		args[i] = x
	}
	if err := ev.charge((len(s) + len(args[0]) + len(args[1])) / 256); err != nil {
		return val{}, err
	}
	switch n.method {
	case mContains:
		return boolVal(strings.Contains(s, args[0])), nil
	case mBeginsWith:
		return boolVal(strings.HasPrefix(s, args[0])), nil
	case mEndsWith:
		return boolVal(strings.HasSuffix(s, args[0])), nil
	case mReplace:
		return replaceAll(s, args[0], args[1])
	case mToLowerCase, mToUpperCase:
		// Case mapping can change a string's length, but not by more than
		// a small factor; refusing oversized inputs keeps results bounded.
		if len(s) > maxStringBytes {
			return val{}, errRuntime
		}
		out := strings.ToLower(s)
		if n.method == mToUpperCase {
			out = strings.ToUpper(s)
		}
		if len(out) > maxStringBytes {
			return val{}, errRuntime
		}
		return strVal(out), nil
	}
	return val{}, errRuntime
}

// replaceAll replaces every occurrence, as Firebase's replace() does,
// after checking that the result fits in maxStringBytes.
func replaceAll(s, old, repl string) (val, error) {
	var count int
	if old == "" {
		count = utf8.RuneCountInString(s) + 1
	} else {
		count = strings.Count(s, old)
	}
	if count == 0 {
		return strVal(s), nil
	}
	if grow := len(repl) - len(old); grow > 0 && (len(s) > maxStringBytes || count > (maxStringBytes-len(s))/grow) {
		return val{}, errRuntime
	}
	out := strings.ReplaceAll(s, old, repl)
	if len(out) > maxStringBytes {
		return val{}, errRuntime
	}
	return strVal(out), nil
}
