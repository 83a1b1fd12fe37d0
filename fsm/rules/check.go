package rules

import (
	"strconv"
)

// typ is a static type: the set of runtime types an expression may have.
// Values whose type is only known at run time (auth.*, val()) have a union
// type and are checked again when evaluated.
type typ uint16

const (
	tyNull typ = 1 << iota
	tyBool
	tyNum
	tyStr
	tyObj    // val() of a parent node, or an object/array inside auth
	tySnap   // a RuleDataSnapshot
	tyQuery  // the `query` object; only its fields may be used
	tyMethod // a method named but not called
	tyRegex  // a regular expression literal
	tyArray  // an array literal

	tyValue = tyNull | tyBool | tyNum | tyStr | tyObj
)

// ruleKind says which rule an expression belongs to: the variables in scope
// differ.
type ruleKind uint8

const (
	kRead ruleKind = iota
	kWrite
	kValidate
)

var ruleKindNames = [...]string{".read", ".write", ".validate"}

// varID names a built-in variable.
type varID uint8

const (
	varAuth varID = iota
	varNow
	varRoot
	varData
	varNewData
	varQuery
)

// methodID names a method, string property or query field.
type methodID uint8

const (
	mNone methodID = iota
	// snapshot methods
	mVal
	mChild
	mParent
	mHasChild
	mHasChildren
	mExists
	mGetPriority
	mIsNumber
	mIsString
	mIsBoolean
	// string members
	mLength
	mContains
	mBeginsWith
	mEndsWith
	mReplace
	mToLowerCase
	mToUpperCase
	mMatches
	// query fields
	qOrderByKey
	qOrderByValue
	qOrderByPriority
	qOrderByChild
	qStartAt
	qEndAt
	qEqualTo
	qLimitToFirst
	qLimitToLast
)

// signature describes a method: its id, argument count range and result.
type signature struct {
	id       methodID
	min, max int
	ret      typ
}

var snapMethods = map[string]signature{
	"val":         {mVal, 0, 0, tyValue},
	"child":       {mChild, 1, 1, tySnap},
	"parent":      {mParent, 0, 0, tySnap},
	"hasChild":    {mHasChild, 1, 1, tyBool},
	"hasChildren": {mHasChildren, 0, 1, tyBool},
	"exists":      {mExists, 0, 0, tyBool},
	"getPriority": {mGetPriority, 0, 0, tyNull | tyNum | tyStr},
	"isNumber":    {mIsNumber, 0, 0, tyBool},
	"isString":    {mIsString, 0, 0, tyBool},
	"isBoolean":   {mIsBoolean, 0, 0, tyBool},
}

// stringMethods excludes length, which is a property.
var stringMethods = map[string]signature{
	"contains":    {mContains, 1, 1, tyBool},
	"beginsWith":  {mBeginsWith, 1, 1, tyBool},
	"endsWith":    {mEndsWith, 1, 1, tyBool},
	"replace":     {mReplace, 2, 2, tyStr},
	"toLowerCase": {mToLowerCase, 0, 0, tyStr},
	"toUpperCase": {mToUpperCase, 0, 0, tyStr},
	"matches":     {mMatches, 1, 1, tyBool},
}

var queryFields = map[string]signature{
	"orderByKey":      {id: qOrderByKey, ret: tyBool},
	"orderByValue":    {id: qOrderByValue, ret: tyBool},
	"orderByPriority": {id: qOrderByPriority, ret: tyBool},
	"orderByChild":    {id: qOrderByChild, ret: tyStr | tyNull},
	"startAt":         {id: qStartAt, ret: tyNull | tyBool | tyNum | tyStr},
	"endAt":           {id: qEndAt, ret: tyNull | tyBool | tyNum | tyStr},
	"equalTo":         {id: qEqualTo, ret: tyNull | tyBool | tyNum | tyStr},
	"limitToFirst":    {id: qLimitToFirst, ret: tyNum | tyNull},
	"limitToLast":     {id: qLimitToLast, ret: tyNum | tyNull},
}

// checker resolves names in an expression and computes static types.
type checker struct {
	kind ruleKind
	// vars[i] is the "$name" of the wildcard that matched path segment i,
	// or "" where a named rule matched.
	vars []string
}

// checkRule checks a whole rule expression, which must be able to produce
// a boolean.
func (c *checker) checkRule(n *node) *exprError {
	t, err := c.check(n)
	if err != nil {
		return err
	}
	if t&^tyValue != 0 || t&tyBool == 0 {
		return &exprError{n.pos, "Expression must evaluate to a boolean."}
	}
	return nil
}

func (c *checker) check(n *node) (typ, *exprError) {
	t, err := c.typeOf(n)
	n.t = t
	return t, err
}

func (c *checker) typeOf(n *node) (typ, *exprError) {
	switch n.op {
	case opLit:
		return litType(n.lit), nil
	case opIdent:
		return c.ident(n)
	case opMember:
		return c.member(n)
	case opIndex:
		return c.index(n)
	case opCall:
		return c.call(n)
	case opArray:
		return 0, &exprError{n.pos, "Array literals are only allowed as the argument of hasChildren()."}
	case opRegex:
		return 0, &exprError{n.pos, "Regular expressions are only allowed as the argument of matches()."}
	case opNot:
		if err := c.want(n.kids[0], tyBool, "a boolean"); err != nil {
			return 0, err
		}
		return tyBool, nil
	case opNeg:
		if err := c.want(n.kids[0], tyNum, "a number"); err != nil {
			return 0, err
		}
		return tyNum, nil
	case opAnd, opOr:
		for _, k := range n.kids {
			if err := c.want(k, tyBool, "a boolean"); err != nil {
				return 0, err
			}
		}
		return tyBool, nil
	case opCond:
		if err := c.want(n.kids[0], tyBool, "a boolean"); err != nil {
			return 0, err
		}
		a, err := c.check(n.kids[1])
		if err != nil {
			return 0, err
		}
		b, err := c.check(n.kids[2])
		if err != nil {
			return 0, err
		}
		return a | b, nil
	case opBinary:
		return c.binary(n)
	}
	return 0, &exprError{n.pos, "Unsupported expression."}
}

func litType(v val) typ {
	switch v.k {
	case vBool:
		return tyBool
	case vNum:
		return tyNum
	case vStr:
		return tyStr
	}
	return tyNull
}

// want checks that n is a value that may have a type in w.
func (c *checker) want(n *node, w typ, what string) *exprError {
	t, err := c.check(n)
	if err != nil {
		return err
	}
	if t&^tyValue != 0 || t&w == 0 {
		return misuse(n, t, "Expected "+what+".")
	}
	return nil
}

// misuse explains why a value of type t cannot be used where n stands.
func misuse(n *node, t typ, fallback string) *exprError {
	switch {
	case t&tyMethod != 0 && n.op == opMember:
		return &exprError{n.pos, "'" + n.name + "' is a method; call it with ()."}
	case t&tyMethod != 0:
		return &exprError{n.pos, fallback + " A method must be called with ()."}
	case t&tySnap != 0:
		return &exprError{n.pos, fallback + " Found a snapshot; use val() to get its value."}
	case t&tyQuery != 0:
		return &exprError{n.pos, fallback + " Found the query object; use one of its fields."}
	}
	return &exprError{n.pos, fallback}
}

func (c *checker) ident(n *node) (typ, *exprError) {
	name := n.name
	if len(name) > 0 && name[0] == '$' {
		for i := len(c.vars) - 1; i >= 0; i-- {
			if c.vars[i] == name {
				n.op, n.depth = opLocVar, i
				return tyStr, nil
			}
		}
		return 0, &exprError{n.pos, "Unknown variable '" + name + "'."}
	}
	n.op = opVar
	switch name {
	case "auth":
		n.vr = varAuth
		return tyNull | tyObj, nil
	case "now":
		n.vr = varNow
		return tyNum, nil
	case "root":
		n.vr = varRoot
		return tySnap, nil
	case "data":
		n.vr = varData
		return tySnap, nil
	case "newData":
		if c.kind == kRead {
			return 0, &exprError{n.pos, "Unknown variable 'newData': it is not available in .read rules."}
		}
		n.vr = varNewData
		return tySnap, nil
	case "query":
		if c.kind != kRead {
			return 0, &exprError{n.pos, "Unknown variable 'query': it is only available in .read rules."}
		}
		n.vr = varQuery
		return tyQuery, nil
	}
	n.op = opIdent
	return 0, &exprError{n.pos, "Unknown variable '" + name + "'."}
}

func noSuchMember(n *node) *exprError {
	return &exprError{n.pos, "No such method/property '" + n.name + "'."}
}

func (c *checker) member(n *node) (typ, *exprError) {
	rt, err := c.check(n.kids[0])
	if err != nil {
		return 0, err
	}
	switch {
	case rt == tySnap:
		if sig, ok := snapMethods[n.name]; ok {
			n.method = sig.id
			return tyMethod, nil
		}
		return 0, noSuchMember(n)
	case rt == tyQuery:
		sig, ok := queryFields[n.name]
		if !ok {
			return 0, noSuchMember(n)
		}
		if k := n.kids[0]; k.op != opVar || k.vr != varQuery {
			return 0, &exprError{n.pos, "Use query fields directly, as in query.orderByChild."}
		}
		n.op, n.method = opQueryField, sig.id
		return sig.ret, nil
	case rt&^tyValue != 0:
		return 0, misuse(n.kids[0], rt, "No such method/property '"+n.name+"'.")
	}
	// A value: a string's length, or a field of an object inside auth.
	var t typ
	if rt&tyStr != 0 {
		if n.name == "length" {
			t |= tyNum
		} else if _, ok := stringMethods[n.name]; ok && rt&tyObj == 0 {
			return tyMethod, nil
		}
	}
	if rt&tyObj != 0 {
		t |= tyValue
	}
	if t == 0 {
		return 0, noSuchMember(n)
	}
	return t, nil
}

func (c *checker) index(n *node) (typ, *exprError) {
	rt, err := c.check(n.kids[0])
	if err != nil {
		return 0, err
	}
	if rt&^tyValue != 0 || rt&tyObj == 0 {
		return 0, misuse(n.kids[0], rt, "Only objects can be indexed with [].")
	}
	if err := c.want(n.kids[1], tyStr|tyNum, "a string or a number"); err != nil {
		return 0, err
	}
	return tyValue, nil
}

func (c *checker) call(n *node) (typ, *exprError) {
	rt, err := c.check(n.kids[0])
	if err != nil {
		return 0, err
	}
	var sig signature
	var ok bool
	switch {
	case rt == tySnap:
		sig, ok = snapMethods[n.name]
	case rt&^tyValue == 0 && rt&tyStr != 0:
		sig, ok = stringMethods[n.name]
	case rt&^tyValue != 0:
		return 0, misuse(n.kids[0], rt, "No such method/property '"+n.name+"'.")
	}
	if !ok {
		return 0, noSuchMember(n)
	}
	n.method = sig.id
	args := n.kids[1:]
	if len(args) < sig.min || len(args) > sig.max {
		want := strconv.Itoa(sig.min)
		if sig.max != sig.min {
			want += " or " + strconv.Itoa(sig.max)
		}
		return 0, &exprError{n.pos, "Wrong number of arguments to '" + n.name + "': expected " + want + ", got " + strconv.Itoa(len(args)) + "."}
	}
	switch sig.id {
	case mMatches:
		if args[0].op != opRegex {
			return 0, &exprError{args[0].pos, "matches() expects a regular expression literal, such as /^[a-z]+$/."}
		}
		args[0].t = tyRegex
	case mHasChildren:
		if len(args) == 1 {
			if err := c.keyList(args[0]); err != nil {
				return 0, err
			}
		}
	default:
		for _, a := range args {
			if err := c.want(a, tyStr, "a string"); err != nil {
				return 0, err
			}
		}
	}
	return sig.ret, nil
}

// keyList checks hasChildren's argument: an array literal of strings, or a
// value that may turn out to be an array at run time.
func (c *checker) keyList(n *node) *exprError {
	if n.op != opArray {
		return c.want(n, tyObj, "an array of strings")
	}
	n.t = tyArray
	for _, e := range n.kids {
		if err := c.want(e, tyStr, "a string"); err != nil {
			return err
		}
	}
	return nil
}

func (c *checker) binary(n *node) (typ, *exprError) {
	a, err := c.check(n.kids[0])
	if err != nil {
		return 0, err
	}
	b, err := c.check(n.kids[1])
	if err != nil {
		return 0, err
	}
	sym := binopSymbols[n.bop]
	for i, t := range []typ{a, b} {
		if t&^tyValue != 0 {
			return 0, misuse(n.kids[i], t, "Invalid operand for '"+sym+"'.")
		}
	}
	switch n.bop {
	case bEq, bNe:
		return tyBool, nil
	case bAdd:
		var t typ
		if a&tyNum != 0 && b&tyNum != 0 {
			t |= tyNum
		}
		if (a&tyStr != 0 && b&(tyStr|tyNum) != 0) || (a&tyNum != 0 && b&tyStr != 0) {
			t |= tyStr
		}
		if t == 0 {
			return 0, &exprError{n.pos, "Operator '+' expects numbers or strings."}
		}
		return t, nil
	case bLT, bLE, bGT, bGE:
		if (a&tyNum != 0 && b&tyNum != 0) || (a&tyStr != 0 && b&tyStr != 0) {
			return tyBool, nil
		}
		return 0, &exprError{n.pos, "Operator '" + sym + "' expects two numbers or two strings."}
	}
	if a&tyNum == 0 || b&tyNum == 0 {
		return 0, &exprError{n.pos, "Operator '" + sym + "' expects numbers."}
	}
	return tyNum, nil
}

var binopSymbols = [...]string{
	bAdd: "+", bSub: "-", bMul: "*", bDiv: "/", bMod: "%",
	bLT: "<", bLE: "<=", bGT: ">", bGE: ">=", bEq: "==", bNe: "!=",
}
