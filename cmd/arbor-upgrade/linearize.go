package main

import (
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
)

// infinity is the return time of an indeterminate write: porcupine may
// place it anywhere after its call, including never.
const infinity = int64(math.MaxInt64)

// registerModel is a register per key (porcupine partitions the history
// by key: a history is linearizable iff each key's is). The state is the
// key's JSON text; a write sets it, a read must return it.
var registerModel = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, o := range h {
			k := o.Input.(*op).Key
			if _, seen := byKey[k]; !seen {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], o)
		}
		slices.Sort(keys)
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() any { return null },
	Step: func(state, input, _ any) (bool, any) {
		o := input.(*op)
		if o.Read {
			return o.Out == state.(string), state
		}
		return true, o.Value
	},
	Equal: func(a, b any) bool { return a.(string) == b.(string) },
	Hash: func(s any) uint64 {
		h := fnv.New64a()
		h.Write([]byte(s.(string)))
		return h.Sum64()
	},
	DescribeOperation: func(input, _ any) string {
		o := input.(*op)
		if o.Read {
			return fmt.Sprintf("%s read → %s [%s #%d]", o.Key, o.Out, o.Node, o.ID)
		}
		return fmt.Sprintf("%s write %s (%s) [%s #%d]", o.Key, o.Value, o.Outcome, o.Node, o.ID)
	},
	DescribeState: func(s any) string { return s.(string) },
}

// registerOperations turns the register operations of ops into porcupine
// operations: reads that observed nothing and writes that certainly
// failed are left out; an indeterminate write returns at infinity, or —
// values being unique — when its value was first seen, which spares the
// search without changing the verdict.
func registerOperations(ops []op) []porcupine.Operation {
	seen := map[string]int64{} // value → earliest return of a read that saw it
	for i := range ops {
		o := &ops[i]
		if o.Kind == register && o.Read && o.Outcome == ok && o.Out != null {
			if t, found := seen[o.Out]; !found || o.Return < t {
				seen[o.Out] = o.Return
			}
		}
	}
	var out []porcupine.Operation
	for i := range ops {
		o := &ops[i]
		if o.Kind != register || o.Outcome == fail || (o.Read && o.Outcome != ok) {
			continue
		}
		ret := o.Return
		if o.Outcome == unknown {
			ret = infinity
			if t, found := seen[o.Value]; found && t >= o.Call {
				ret = t
			}
		}
		out = append(out, porcupine.Operation{ClientId: o.Client, Input: o, Call: o.Call, Output: o, Return: ret})
	}
	return out
}

// linearizability is the verdict on the register histories.
type linearizability struct {
	Ops    int
	Result porcupine.CheckResult
	Took   time.Duration
	// Viz is porcupine's HTML view of a history that failed.
	Viz string
}

// checkLinearizable checks the register histories of ops, within
// timeout; a failure is drawn into dir.
func checkLinearizable(ops []op, timeout time.Duration, dir string) linearizability {
	pops := registerOperations(ops)
	start := time.Now()
	res := porcupine.CheckOperationsTimeout(registerModel, pops, timeout)
	l := linearizability{Ops: len(pops), Result: res, Took: time.Since(start)}
	if res != porcupine.Ok && dir != "" {
		// Only a failure pays for the partial linearizations the drawing
		// shows.
		_, info := porcupine.CheckOperationsVerbose(registerModel, pops, timeout)
		l.Viz = filepath.Join(dir, "linearizability.html")
		if err := porcupine.VisualizePath(registerModel, info, l.Viz); err != nil {
			fmt.Fprintf(os.Stderr, "arbor-upgrade: drawing the history: %v\n", err)
			l.Viz = ""
		}
	}
	return l
}
