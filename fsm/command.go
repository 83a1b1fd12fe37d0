package fsm

import (
	"encoding/binary"
	"fmt"

	"github.com/arbordb/arbor/fsm/tree"
)

// CommandKind names what a Command does.
type CommandKind uint8

// Command kinds. New kinds get new numbers; numbers are never reused.
const (
	// CmdSet replaces the value at Path with Body (PUT; DELETE is a Set of null).
	CmdSet CommandKind = 1
	// CmdUpdate merges Body, an object of relative paths, at Path (PATCH).
	CmdUpdate CommandKind = 2
	// CmdPush adds Body as a new child of Path under a generated push key (POST).
	CmdPush CommandKind = 3
	// The entries of CmdSet, CmdUpdate and CmdPush carry the body in its
	// parsed, binary form (wire.go): the body is parsed once, by the node
	// that took the request, and never again.
)

// CommandVersion is the newest entry format this release applies. Decode
// accepts every version up to it. Entry format 1 is the format of
// release v0.1.0, the first; format 2 adds the onDisconnect commands
// (disconnects.go).
const CommandVersion = 2

// kindFormats maps each kind to the entry format that introduced it. A
// release adding a kind (or changing how one is written) raises
// CommandVersion and adds the kind here with the new number; existing
// kinds keep theirs forever, so their entries stay readable by every
// older release of the cluster (SPEC §9).
var kindFormats = map[CommandKind]int{
	CmdSet: 1, CmdUpdate: 1, CmdPush: 1,
	CmdSetRules: 1, CmdAs: 1, CmdAsPrejudged: 1,
	CmdDisconnectRegister: 2, CmdDisconnectCancel: 2, CmdDisconnectRun: 2,
}

// EntryFormat is the entry format an entry of kind k is stamped with and
// a member must apply to read it; 0 for a kind this release does not know.
func (k CommandKind) EntryFormat() int { return kindFormats[k] }

// CommandKinds returns every kind this release writes with its
// EntryFormat (a fresh map the caller may keep).
func CommandKinds() map[CommandKind]int {
	out := make(map[CommandKind]int, len(kindFormats))
	for k, f := range kindFormats {
		out[k] = f
	}
	return out
}

// Command is one replicated write, fully resolved before it enters the log:
// the proposer's clock reading and random bits travel inside it, so Apply
// is deterministic on every replica.
type Command struct {
	Kind CommandKind
	Path tree.Path
	// Body is the request body as JSON text exactly as the client sent it
	// (already validated by the proposer). A CmdSetRules entry carries it
	// (the rules' source); a Set's, Update's or Push's carries Value or
	// Fields instead.
	Body []byte
	// Parsed says that Value (Set, Push) or Fields (Update) hold the body
	// already parsed, as they must for Encode; a decoded write has it.
	Parsed bool
	// Value is a Set's or Push's parsed body (nil: delete).
	Value *tree.Node
	// Fields is an Update's parsed body (nil: a null body).
	Fields []tree.Field
	// IfMatch, when HasIfMatch, is the ETag the current value must have.
	IfMatch    string
	HasIfMatch bool
	// Now is the proposer's clock in milliseconds since the epoch: the
	// value of {".sv":"timestamp"} and the time part of push keys.
	Now int64
	// Rand holds 12 random base-64 digits (0..63) for a push key.
	Rand [12]byte
	// WriteLimit caps the bytes written plus removed (0: no cap).
	WriteLimit int64
	// As, when not nil, is who the write acts as: the entry is a CmdAs
	// wrapping the command, and Apply judges it by the rules in force
	// (nil: an admin's write, not judged).
	As *Access
	// Prejudged says the node that took the write found that the rules
	// of version PrejudgedRules (Rules.Index) allow it whatever the
	// stored data (FSM.Judge sets it): Apply, finding those rules still
	// in force, takes that verdict rather than judging again. The entry
	// is then a CmdAsPrejudged.
	Prejudged      bool
	PrejudgedRules uint64
	// Holder is the session an onDisconnect command concerns (Path is a
	// cancel's prefix; Now and Rand are a run's clock and push bits).
	Holder Holder
	// Op is a CmdDisconnectRegister's operation: the write as it would be
	// proposed, with who it acts as (As) and without its clock.
	Op *Command
}

// Encode serialises c as a versioned log entry:
// version(1) kind(1) flags(1) then uvarint-prefixed fields. The version
// is the one c's kind needs, not the newest this release knows, so a
// newer leader's entries of old kinds stay readable by older members.
func (c *Command) Encode() []byte {
	buf := c.appendHeader(make([]byte, 0, 64+len(c.Body)), c.Kind)
	switch c.Kind {
	case CmdSet, CmdPush:
		buf = appendWire(buf, c.Value)
	case CmdUpdate:
		buf = appendWireFields(buf, c.Fields)
	case CmdDisconnectRegister, CmdDisconnectCancel, CmdDisconnectRun:
		buf = appendDisconnect(buf, c)
	default:
		buf = appendBytes(buf, c.Body)
	}
	return c.wrap(c.appendTrailer(buf))
}

// wrap makes the entry of a judged command (As set) a CmdAs around it.
func (c *Command) wrap(entry []byte) []byte {
	if c.As == nil {
		return entry
	}
	return wrapAs(c, entry)
}

// EntryKind returns the kind of an encoded entry without decoding it.
func EntryKind(b []byte) (CommandKind, error) {
	if len(b) < 3 {
		return 0, fmt.Errorf("entry kind: short entry: %w", tree.ErrInvalidData)
	}
	return CommandKind(b[1]), nil
}

// appendHeader writes the version, kind, flags and path of an entry of kind.
func (c *Command) appendHeader(buf []byte, kind CommandKind) []byte {
	version := kind.EntryFormat()
	if version == 0 {
		version = CommandVersion // an unknown kind: Decode refuses it anyway
	}
	buf = append(buf, byte(version), byte(kind))
	var flags byte
	if c.HasIfMatch {
		flags |= 1
	}
	buf = append(buf, flags)
	buf = binary.AppendUvarint(buf, uint64(len(c.Path)))
	for _, k := range c.Path {
		buf = appendBytes(buf, []byte(k))
	}
	return buf
}

// appendTrailer writes what follows the body.
func (c *Command) appendTrailer(buf []byte) []byte {
	buf = appendBytes(buf, []byte(c.IfMatch))
	buf = binary.AppendVarint(buf, c.Now)
	buf = append(buf, c.Rand[:]...)
	buf = binary.AppendVarint(buf, c.WriteLimit)
	return buf
}

func appendBytes(buf, b []byte) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(b)))
	return append(buf, b...)
}

// DecodeCommand parses an entry made by Encode of this or an older release.
func DecodeCommand(b []byte) (Command, error) { return decodeCommand(b, nil) }

// decodeCommand is DecodeCommand decoding a judged entry's auth through
// auths.
func decodeCommand(b []byte, auths *decodedAuths) (Command, error) {
	var c Command
	if len(b) < 3 {
		return c, fmt.Errorf("decode command: short entry: %w", tree.ErrInvalidData)
	}
	if b[0] == 0 || b[0] > CommandVersion {
		return c, fmt.Errorf("decode command: version %d: %w", b[0], ErrUnsupportedVersion)
	}
	c.Kind = CommandKind(b[1])
	if f := c.Kind.EntryFormat(); f == 0 || f > int(b[0]) {
		return c, fmt.Errorf("decode command: kind %d in entry format %d: %w", c.Kind, b[0], ErrUnsupportedVersion)
	}
	if c.Kind == CmdAs || c.Kind == CmdAsPrejudged {
		return decodeAs(b, auths)
	}
	c.HasIfMatch = b[2]&1 != 0
	d := decoder{b: b[3:]}
	n := d.uvarint()
	if n > tree.MaxDepth+1 {
		return c, fmt.Errorf("decode command: path of %d keys: %w", n, tree.ErrInvalidData)
	}
	if n > 0 {
		c.Path = make(tree.Path, n)
		for i := range c.Path {
			c.Path[i] = string(d.bytes())
		}
	}
	switch c.Kind {
	case CmdSet, CmdPush:
		c.Parsed = true
		c.Value = d.wireNode(len(c.Path))
	case CmdUpdate:
		c.Parsed = true
		c.Fields = d.wireFields()
	case CmdDisconnectRegister, CmdDisconnectCancel, CmdDisconnectRun:
		d.readDisconnect(&c, auths)
	default:
		c.Body = d.bytes()
	}
	c.IfMatch = string(d.bytes())
	c.Now = d.varint()
	copy(c.Rand[:], d.take(12))
	c.WriteLimit = d.varint()
	if d.err != nil {
		return Command{}, fmt.Errorf("decode command: %w", d.err)
	}
	return c, nil
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = fmt.Errorf("truncated entry: %w", tree.ErrInvalidData)
	}
	d.b = nil
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) take(n int) []byte {
	if n < 0 || n > len(d.b) {
		d.fail()
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail()
		return nil
	}
	if n == 0 {
		return nil
	}
	return d.take(int(n))
}

// Result is what a successful (or precondition-failed) write returns.
type Result struct {
	// Value is the echo: for Set the value written, for Update the
	// submitted object, with server values resolved.
	Value *tree.Node
	// Fields is, for an Update, the submitted paths with their resolved
	// values (nil for deletions) in submission order: the PATCH echo.
	Fields []tree.Field
	// Name is the generated key of a Push.
	Name string
	// ETag is the ETag of the node at the written location after the write
	// (for a Push, of the new child).
	ETag string
	// Index is the log index the write was applied at.
	Index uint64
}

// Read asks for the value at a path.
type Read struct {
	Path tree.Path
	// Linearizable asks for a value that reflects every write acknowledged
	// before the read started (SPEC §9); otherwise the local state is read.
	Linearizable bool
	// Access is who reads, judged by the rules in force on the state the
	// read sees (nil: an admin).
	Access *Access
	// Watch asks whether the reader's permission could change with the
	// data or the time (ReadResult.AccessFixed): a stream that keeps
	// reading must be judged again on every change if it could.
	Watch bool
}

// ReadResult is the state a read observed.
type ReadResult struct {
	// Value is the node at the path, at the observed index.
	Value *tree.Node
	Index uint64
	// Rules are the security rules in force at Index (nil: the default).
	Rules *Rules
	// Indexes are the `.indexOn` indexes at Index: Indexes.Lookup finds
	// the one Query.EvalWith walks for a query of Value.
	Indexes *IndexSet
	// AccessFixed (with Read.Watch, or for an admin) is true when the
	// read was allowed whatever the stored data and the time: it stays
	// allowed for as long as the same rules are in force.
	AccessFixed bool
}

// PreconditionError is returned (wrapping ErrPreconditionFailed) when an
// if-match ETag does not match; it carries the current value for the 412.
type PreconditionError struct {
	Current *tree.Node
	// ETag and Body are the 412's header and body once rendered
	// (by cluster, on the leader): the node that took the request sends them as
	// they are.
	ETag string
	Body []byte
}

// Error implements error.
func (e *PreconditionError) Error() string { return "if-match: ETag mismatch" }

// Unwrap makes errors.Is(err, ErrPreconditionFailed) true.
func (e *PreconditionError) Unwrap() error { return ErrPreconditionFailed }
