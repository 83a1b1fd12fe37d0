package fsm

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/arbordb/arbor/fsm/tree"
)

// The binary form of a parsed value: how a request body, parsed and
// validated once on the node that took the request, crosses to the leader
// and into the log without being parsed as JSON again.
// Decoding rebuilds the node with the same constructors the JSON parser
// uses, so the value, its ETag, its size and its server-value
// placeholders are exactly those of the parse.
//
//	value = tag(1) payload [priority value, when tag has wirePriority]
//	tag 0 null · 1 false · 2 true · 3 int (varint) · 4 double (8 bytes)
//	    5 string (uvarint length, bytes) · 6 object (uvarint count, then
//	    count × (key as a string, value)) · 7 {".sv":"timestamp"} ·
//	    8 increment by an int (varint) · 9 increment by a double (8 bytes)
const (
	wireNull byte = iota
	wireFalse
	wireTrue
	wireInt
	wireFloat
	wireString
	wireObject
	wireTimestamp
	wireIncInt
	wireIncFloat
	// wirePriority marks a value followed by its priority.
	wirePriority byte = 0x80
	// wireValuePriority marks an object whose priority came as
	// {".value": {…}, ".priority": p}: the parser gives it through
	// WithPriority, which leaves the object's size as it was.
	wireValuePriority byte = 0x40
	wireFlags              = wirePriority | wireValuePriority
)

// wireDepth bounds the nesting a decoder accepts: a body is at most
// MaxDepth levels deep and each level may carry a priority.
const wireDepth = 2*tree.MaxDepth + 2

// appendWire appends n's binary form.
func appendWire(b []byte, n *tree.Node) []byte {
	if n == nil {
		return append(b, wireNull)
	}
	var (
		tag   byte
		delta *tree.Node // an increment's
	)
	switch n.Kind() {
	case tree.KindBool:
		tag = wireFalse
		if n.BoolValue() {
			tag = wireTrue
		}
	case tree.KindInt:
		tag = wireInt
	case tree.KindFloat:
		tag = wireFloat
	case tree.KindString:
		tag = wireString
	case tree.KindObject:
		tag = wireObject
	case tree.KindTimestamp:
		tag = wireTimestamp
	case tree.KindIncrement:
		delta = n.IncrementDelta()
		tag = wireIncInt
		if delta.Kind() == tree.KindFloat {
			tag = wireIncFloat
		}
	}
	prio := n.Priority()
	if prio != nil {
		tag |= wirePriority
		if n.ValuePriority() {
			tag |= wireValuePriority
		}
	}
	b = append(b, tag)
	switch tag &^ wireFlags {
	case wireInt:
		b = binary.AppendVarint(b, n.IntValue())
	case wireIncInt:
		b = binary.AppendVarint(b, delta.IntValue())
	case wireFloat:
		b = binary.BigEndian.AppendUint64(b, math.Float64bits(n.FloatValue()))
	case wireIncFloat:
		b = binary.BigEndian.AppendUint64(b, math.Float64bits(delta.FloatValue()))
	case wireString:
		b = appendBytes(b, []byte(n.StringValue()))
	case wireObject:
		b = binary.AppendUvarint(b, uint64(n.Len()))
		n.Each(func(k string, c *tree.Node) bool {
			b = appendBytes(b, []byte(k))
			b = appendWire(b, c)
			return true
		})
	}
	if prio != nil {
		b = appendWire(b, prio)
	}
	return b
}

// appendWireFields appends a PATCH's fields; nil fields (a null body) and
// an empty list are told apart.
func appendWireFields(b []byte, fields []tree.Field) []byte {
	if fields == nil {
		return append(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(fields))+1)
	for _, f := range fields {
		b = binary.AppendUvarint(b, uint64(len(f.Path)))
		for _, k := range f.Path {
			b = appendBytes(b, []byte(k))
		}
		b = appendWire(b, f.Value)
	}
	return b
}

// wireNode reads a value written by appendWire at nesting level depth.
func (d *decoder) wireNode(depth int) *tree.Node {
	if depth > wireDepth {
		d.failWith("value nested too deep")
		return nil
	}
	tags := d.take(1)
	if d.err != nil {
		return nil
	}
	tag := tags[0]
	if tag&wireValuePriority != 0 && tag&^wireFlags != wireObject {
		d.failWith("value priority on a leaf")
		return nil
	}
	var n *tree.Node
	switch tag &^ wireFlags {
	case wireNull:
		if tag != wireNull {
			d.failWith("null with a priority")
		}
		return nil
	case wireFalse:
		n = tree.SharedBool(false)
	case wireTrue:
		n = tree.SharedBool(true)
	case wireInt:
		n = tree.SharedInt(d.varint())
	case wireFloat:
		f := d.float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			d.failWith("double is not a number")
			return nil
		}
		n = tree.Float(f)
	case wireString:
		n = tree.String(string(d.bytes()))
	case wireObject:
		n = d.wireObject(depth)
	case wireTimestamp:
		n = tree.ServerTimestamp()
	case wireIncInt:
		n = tree.ServerIncrement(tree.Int(d.varint()))
	case wireIncFloat:
		n = tree.ServerIncrement(tree.Float(d.float()))
	default:
		d.failWith(fmt.Sprintf("value tag %d", tag))
		return nil
	}
	if tag&wirePriority != 0 {
		p := d.wireNode(depth + 1)
		if d.err != nil {
			return nil
		}
		if tag&wireValuePriority == 0 {
			// As the parser builds it: the priority is part of the object.
			return n.WithMemberPriority(p)
		}
		return n.WithPriority(p)
	}
	if d.err != nil {
		return nil
	}
	return n
}

// wireObject reads an object's members; an object without members is null.
func (d *decoder) wireObject(depth int) *tree.Node {
	count := d.uvarint()
	if count > uint64(len(d.b)) { // every member takes at least two bytes
		d.failWith("member count beyond the entry")
		return nil
	}
	b := tree.NewObjectBuilder()
	for range count {
		key := string(d.bytes())
		child := d.wireNode(depth + 1)
		if d.err != nil {
			return nil
		}
		b.Set(key, child)
	}
	if b.Len() == 0 {
		d.failWith("empty object")
		return nil
	}
	return b.Build(nil)
}

// wireFields reads appendWireFields' list.
func (d *decoder) wireFields() []tree.Field {
	count := d.uvarint()
	if count == 0 || d.err != nil {
		return nil
	}
	count--
	if count > uint64(len(d.b)) {
		d.failWith("field count beyond the entry")
		return nil
	}
	fields := make([]tree.Field, count)
	if d.readFields(fields) {
		return fields
	}
	return nil
}

// readFields reads len(fields) fields into fields; false on an error.
func (d *decoder) readFields(fields []tree.Field) bool {
	// The paths are cut from shared blocks: one allocation for many
	// fields rather than one each (paths are never changed once built).
	var block []string
	for k := range fields {
		segs := d.uvarint()
		if segs > tree.MaxDepth+1 {
			d.failWith("field path too deep")
			return false
		}
		if uint64(len(block)) < segs {
			block = make([]string, max(segs, 1024))
		}
		p := tree.Path(block[:segs:segs])
		block = block[segs:]
		for i := range p {
			p[i] = string(d.bytes())
		}
		v := d.wireNode(len(p))
		if d.err != nil {
			return false
		}
		fields[k] = tree.Field{Path: p, Value: v}
	}
	return true
}

func (d *decoder) float() float64 {
	b := d.take(8)
	if d.err != nil {
		return 0
	}
	return math.Float64frombits(binary.BigEndian.Uint64(b))
}

func (d *decoder) failWith(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%s: %w", what, tree.ErrInvalidData)
	}
	d.b = nil
}
