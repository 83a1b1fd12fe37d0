package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
)

// kind is what an operation works on; it decides how it is checked.
type kind string

// The kinds of keys the load uses.
const (
	// register: a shared key, overwritten with unique values and read
	// (linearizable); its history is checked for linearizability.
	register kind = "register"
	// ack: PUT of a key written exactly once; an acknowledged one must
	// exist at the end with its value.
	ack kind = "ack"
	// patch: PATCH adding one field written exactly once (an update
	// entry); checked like ack.
	patch kind = "patch"
	// push: POST of a unique value (a push entry); an acknowledged one
	// must exist at the end under the name the node returned.
	push kind = "push"
)

// outcome is what the client learnt about an operation.
type outcome string

// The outcomes.
const (
	// ok: answered 200; a write took effect once.
	ok outcome = "ok"
	// fail: certainly had no effect (the connection was refused).
	fail outcome = "fail"
	// unknown: may or may not have taken effect (503, timeout, a broken
	// connection); for a read, nothing was observed.
	unknown outcome = "unknown"
)

// null is the JSON text of an absent value.
const null = "null"

// op is one operation of the history.
type op struct {
	ID     int    `json:"id"`
	Client int    `json:"client"`
	Node   string `json:"node"`
	Kind   kind   `json:"kind"`
	Read   bool   `json:"read,omitempty"`
	// Final marks the reads made after the upgrade, from every node.
	Final bool `json:"final,omitempty"`
	// Key is the written or read location relative to /upgrade, e.g.
	// "reg/k3", "acks/c1/s42", "patch/c1/s43" (a field), "push/c1".
	Key string `json:"key"`
	// Value is the JSON text written (a unique string).
	Value string `json:"value,omitempty"`
	// Out is the JSON text a register read returned; Name the push key
	// a POST returned.
	Out  string `json:"out,omitempty"`
	Name string `json:"name,omitempty"`

	Outcome outcome `json:"outcome"`
	Status  int     `json:"status,omitempty"` // 0: no answer
	Error   string  `json:"error,omitempty"`
	// Call and Return are nanoseconds since the load started.
	Call   int64 `json:"call"`
	Return int64 `json:"return"`
}

// acked reports whether op is a write the cluster acknowledged.
func (o *op) acked() bool { return !o.Read && o.Outcome == ok }

// writeHistory saves ops as JSON lines, for a person looking into a
// failure.
func writeHistory(path string, ops []op) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for i := range ops {
		if err := enc.Encode(&ops[i]); err != nil {
			f.Close()
			return fmt.Errorf("history: %w", err)
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("history: %w", err)
	}
	return f.Close()
}
