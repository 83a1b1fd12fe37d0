package fsm

import "github.com/arbordb/arbor/fsm/tree"

// EventKind says how a change event should be applied by a listener.
type EventKind uint8

// Event kinds, as in the streaming protocol.
const (
	// EventPut replaces the value at Path with Value.
	EventPut EventKind = iota + 1
	// EventPatch replaces, for each field of Fields, the value at Path+field.
	EventPatch
	// EventRules says the security rules changed: listeners re-check
	// whether they may still read (SPEC §5 cancel). It has no Path.
	EventRules
	// EventDisconnectsRan says the onDisconnect operations of Holders'
	// sessions ran (their writes have their own events): the node that
	// holds such a session closes its connection if it still lives. It
	// has no Path.
	EventDisconnectsRan
)

// Event is one change made by an applied entry.
type Event struct {
	Index  uint64
	Kind   EventKind
	Path   tree.Path
	Value  *tree.Node   // EventPut: the new value (nil: deleted)
	Fields []tree.Field // EventPatch: relative paths and their new values
	// Holders are EventDisconnectsRan's sessions.
	Holders []Holder
}
