package checks

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/arbordb/arbor/cmd/internal/history"
)

// pushAlphabet is the push key alphabet (SPEC §2), in ASCII order, so
// comparing keys as strings compares them as Firebase does.
const pushAlphabet = "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz"

// PushKeys checks the names POST returned: 20 characters of the push key
// alphabet, unique across the cluster, and strictly increasing in commit
// order. Commit order is observed through real time: if append A was
// acknowledged before append B was sent, A committed first, so its key
// must be smaller — on any list, whichever leader took it (the key comes
// from one cluster-wide sequence). And every list read returns children
// sorted by key; the list model then requires that order to be a
// linearization (commit) order.
func PushKeys(ops []history.Op) Result {
	r := NewBuilder("push keys")
	var acked []history.Op
	seen := map[string]int{} // name → op id
	for _, op := range ops {
		if op.Type != history.Append || op.Outcome != history.OK {
			continue
		}
		if !validPushKey(op.Name) {
			r.Fail("op %d (%s on %s): malformed push key %q", op.ID, op.Key, op.Node, op.Name)
			continue
		}
		if prev, dup := seen[op.Name]; dup {
			r.Fail("push key %s returned twice: ops %d and %d", op.Name, prev, op.ID)
		}
		seen[op.Name] = op.ID
		acked = append(acked, op)
	}
	// Sweep the appends by invocation; keep the largest key among those
	// that returned before the current one was invoked.
	byReturn := slices.Clone(acked)
	slices.SortFunc(byReturn, func(a, b history.Op) int { return cmp.Compare(a.Return, b.Return) })
	slices.SortFunc(acked, func(a, b history.Op) int { return cmp.Compare(a.Call, b.Call) })
	var maxBefore history.Op
	j := 0
	for _, b := range acked {
		for j < len(byReturn) && byReturn[j].Return < b.Call {
			if byReturn[j].Name > maxBefore.Name {
				maxBefore = byReturn[j]
			}
			j++
		}
		if maxBefore.Name != "" && b.Name <= maxBefore.Name {
			r.Fail("op %d (%s on %s) got %s, not above %s of op %d (%s on %s), acknowledged before it was sent",
				b.ID, b.Key, b.Node, b.Name, maxBefore.Name, maxBefore.ID, maxBefore.Key, maxBefore.Node)
		}
	}
	// Every read lists children in strictly increasing key order.
	for _, op := range ops {
		if op.Type != history.Read || op.Kind != history.List || op.Outcome != history.OK {
			continue
		}
		for i := 1; i < len(op.Items); i++ {
			if op.Items[i-1].Name >= op.Items[i].Name {
				r.Fail("read op %d (%s on %s): children out of key order: %s before %s", op.ID, op.Key, op.Node, op.Items[i-1].Name, op.Items[i].Name)
				break
			}
		}
	}
	return r.Done(fmt.Sprintf("%d acknowledged push keys, well formed, unique, increasing in commit order", len(acked)))
}

func validPushKey(s string) bool {
	if len(s) != 20 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !strings.ContainsRune(pushAlphabet, rune(s[i])) {
			return false
		}
	}
	return true
}
