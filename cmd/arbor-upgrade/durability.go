package main

import (
	"encoding/json"
	"fmt"
	"strings"
)

// tree is one of the load's write-once subtrees as read back: client →
// child key → value (JSON text). The load writes only strings there.
type tree map[string]map[string]string

// decodeTree parses a subtree read as JSON (null when empty).
func decodeTree(body []byte) (tree, error) {
	var raw map[string]map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, fmt.Errorf("decode %.80q: %w", body, err)
	}
	t := tree{}
	for c, kids := range raw {
		t[c] = map[string]string{}
		for k, v := range kids {
			t[c][k] = string(v)
		}
	}
	return t, nil
}

// finalState is what one node holds of the write-once subtrees.
type finalState struct {
	Acks, Patch, Push tree
}

// durability is the verdict of checkDurability.
type durability struct {
	Acked    int      // acknowledged writes checked
	Problems []string // lost, phantom or duplicated writes
}

// maxProblems caps how many problems are listed (the count is exact).
const maxProblems = 20

// checkDurability checks one node's final state against the history of
// the write-once keys: every acknowledged write is there with its value
// (nothing acknowledged was lost), nothing is there that was not written
// or whose write certainly failed, and no push was applied twice.
func checkDurability(ops []op, st finalState) durability {
	var d durability
	count := 0
	problem := func(format string, args ...any) {
		count++
		if len(d.Problems) < maxProblems {
			d.Problems = append(d.Problems, fmt.Sprintf(format, args...))
		}
	}
	// Keyed writes (PUT and PATCH): location → the op that wrote it.
	writes := map[string]*op{}
	pushes := map[string]*op{} // value → POST
	for i := range ops {
		o := &ops[i]
		switch {
		case o.Read:
		case o.Kind == ack || o.Kind == patch:
			writes[o.Key] = o
		case o.Kind == push:
			pushes[o.Value] = o
		}
	}
	for _, o := range writes {
		got, present := lookup(st, o.Key)
		switch {
		case o.Outcome == ok:
			d.Acked++
			if !present {
				problem("lost: acknowledged %s of %s = %s (op %d via %s)", o.Kind, o.Key, o.Value, o.ID, o.Node)
			} else if got != o.Value {
				problem("changed: %s = %s, acknowledged as %s (op %d)", o.Key, got, o.Value, o.ID)
			}
		case present && o.Outcome == fail:
			problem("a write that certainly failed took effect: %s = %s (op %d)", o.Key, got, o.ID)
		case present && got != o.Value:
			problem("%s = %s, but %s was written (op %d, %s)", o.Key, got, o.Value, o.ID, o.Outcome)
		}
	}
	for _, sub := range []struct {
		name string
		t    tree
	}{{"acks", st.Acks}, {"patch", st.Patch}} {
		for c, kids := range sub.t {
			for k := range kids {
				if _, found := writes[sub.name+"/"+c+"/"+k]; !found {
					problem("phantom: %s/%s/%s was never written", sub.name, c, k)
				}
			}
		}
	}
	names := map[string]string{} // value → the push key it was found under
	for c, kids := range st.Push {
		for name, v := range kids {
			o := pushes[v]
			switch {
			case o == nil || o.Key != "push/"+c:
				problem("phantom: push/%s/%s = %s was never pushed there", c, name, v)
			case o.Outcome == fail:
				problem("a push that certainly failed took effect: push/%s/%s = %s (op %d)", c, name, v, o.ID)
			case o.Outcome == ok && o.Name != name:
				problem("push %s acknowledged as %s found as %s (op %d)", v, o.Name, name, o.ID)
			}
			if other, dup := names[v]; dup {
				problem("push of %s applied twice: %s and %s", v, other, name)
			}
			names[v] = name
		}
	}
	for _, o := range pushes {
		if o.Outcome != ok {
			continue
		}
		d.Acked++
		if _, found := names[o.Value]; !found {
			problem("lost: acknowledged push of %s to %s as %s (op %d via %s)", o.Value, o.Key, o.Name, o.ID, o.Node)
		}
	}
	if count > len(d.Problems) {
		d.Problems = append(d.Problems, fmt.Sprintf("… and %d more", count-len(d.Problems)))
	}
	return d
}

// lookup finds a keyed write's location ("acks/c1/s42") in st.
func lookup(st finalState, key string) (string, bool) {
	parts := strings.Split(key, "/")
	if len(parts) != 3 {
		return "", false
	}
	var t tree
	switch parts[0] {
	case "acks":
		t = st.Acks
	case "patch":
		t = st.Patch
	default:
		return "", false
	}
	v, found := t[parts[1]][parts[2]]
	return v, found
}
