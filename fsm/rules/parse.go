package rules

import (
	"regexp"
)

// Limits on one expression, so that parsing, checking and evaluating it
// stay cheap and shallow whatever a client uploads.
const (
	maxExprBytes = 4096
	maxExprDepth = 64
)

// opcode is the kind of an expression node.
type opcode uint8

const (
	opLit        opcode = iota // literal: lit
	opIdent                    // variable: name; check resolves it to opVar or opLocVar
	opVar                      // built-in variable: vr
	opLocVar                   // $location variable: depth of its wildcard
	opMember                   // kids[0].name
	opIndex                    // kids[0][kids[1]]
	opCall                     // kids[0].name(kids[1:]...)
	opArray                    // [kids...]
	opRegex                    // re
	opNot                      // !kids[0]
	opNeg                      // -kids[0]
	opBinary                   // kids[0] bop kids[1]
	opAnd                      // kids[0] && kids[1] && …
	opOr                       // kids[0] || kids[1] || …
	opCond                     // kids[0] ? kids[1] : kids[2]
	opQueryField               // query.<field>: method; made from opMember by check
)

// binop is the operator of an opBinary node.
type binop uint8

const (
	bAdd binop = iota
	bSub
	bMul
	bDiv
	bMod
	bLT
	bLE
	bGT
	bGE
	bEq
	bNe
)

var binops = map[string]binop{
	"+": bAdd, "-": bSub, "*": bMul, "/": bDiv, "%": bMod,
	"<": bLT, "<=": bLE, ">": bGT, ">=": bGE,
	"==": bEq, "===": bEq, "!=": bNe, "!==": bNe,
}

// node is an expression tree node. The parser fills the syntax; check
// resolves names (vr, depth, method, field) and records the static type.
type node struct {
	op     opcode
	bop    binop
	pos    int // byte offset in the expression, for error messages
	name   string
	lit    val
	re     *regexp.Regexp
	kids   []*node
	vr     varID
	depth  int
	method methodID
	t      typ
}

// exprParser is a recursive-descent parser for rule expressions.
type exprParser struct {
	lex   lexer
	tok   token
	depth int
}

// parseExpr parses a complete expression.
func parseExpr(s string) (*node, *exprError) {
	if len(s) > maxExprBytes {
		return nil, &exprError{0, "Expression too long (limit 4096 bytes)."}
	}
	p := &exprParser{lex: lexer{s: s}}
	if err := p.advance(); err != nil {
		return nil, err
	}
	if p.tok.kind == tEOF {
		return nil, &exprError{0, "Empty expression."}
	}
	n, err := p.cond()
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tEOF {
		return nil, p.unexpected()
	}
	if h, at := height(n); h > maxExprDepth {
		return nil, &exprError{at.pos, "Expression is nested too deeply (limit 64 levels)."}
	}
	return n, nil
}

// height is the depth of the tree under n and a node at its bottom.
// Evaluation recurses that deep, so it is bounded at parse time.
func height(n *node) (int, *node) {
	best, at := 0, n
	for _, k := range n.kids {
		if h, a := height(k); h > best {
			best, at = h, a
		}
	}
	return best + 1, at
}

func (p *exprParser) advance() *exprError {
	t, err := p.lex.next()
	if err != nil {
		return err
	}
	p.tok = t
	return nil
}

func (p *exprParser) is(op string) bool {
	return p.tok.kind == tOp && p.tok.text == op
}

func (p *exprParser) unexpected() *exprError {
	switch p.tok.kind {
	case tEOF:
		return &exprError{p.tok.pos, "Unexpected end of expression."}
	case tNum, tStr:
		return &exprError{p.tok.pos, "Unexpected literal."}
	case tRegex:
		return &exprError{p.tok.pos, "Unexpected regular expression."}
	}
	return &exprError{p.tok.pos, "Unexpected '" + p.tok.text + "'."}
}

func (p *exprParser) expect(op string) *exprError {
	if !p.is(op) {
		if p.tok.kind == tEOF {
			return &exprError{p.tok.pos, "Unexpected end of expression: expected '" + op + "'."}
		}
		return p.unexpected()
	}
	return p.advance()
}

// enter guards the parser's recursion, which nested parentheses, unary
// operators and conditionals drive.
func (p *exprParser) enter() *exprError {
	p.depth++
	if p.depth > maxExprDepth {
		return &exprError{p.tok.pos, "Expression is nested too deeply (limit 64 levels)."}
	}
	return nil
}

func (p *exprParser) leave() { p.depth-- }

func (p *exprParser) cond() (*node, *exprError) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	c, err := p.logical("||", opOr, p.and)
	if err != nil || !p.is("?") {
		return c, err
	}
	pos := p.tok.pos
	if err := p.advance(); err != nil {
		return nil, err
	}
	a, err := p.cond()
	if err != nil {
		return nil, err
	}
	if err := p.expect(":"); err != nil {
		return nil, err
	}
	b, err := p.cond()
	if err != nil {
		return nil, err
	}
	return &node{op: opCond, pos: pos, kids: []*node{c, a, b}}, nil
}

func (p *exprParser) and() (*node, *exprError) {
	return p.logical("&&", opAnd, p.equality)
}

// logical parses a chain of && or || into one n-ary node, so that a long
// list of alternatives does not count against the nesting limit.
func (p *exprParser) logical(op string, code opcode, operand func() (*node, *exprError)) (*node, *exprError) {
	first, err := operand()
	if err != nil || !p.is(op) {
		return first, err
	}
	n := &node{op: code, pos: p.tok.pos, kids: []*node{first}}
	for p.is(op) {
		if err := p.advance(); err != nil {
			return nil, err
		}
		k, err := operand()
		if err != nil {
			return nil, err
		}
		n.kids = append(n.kids, k)
	}
	return n, nil
}

func (p *exprParser) equality() (*node, *exprError) {
	return p.binary(p.relational, "==", "!=", "===", "!==")
}

func (p *exprParser) relational() (*node, *exprError) {
	return p.binary(p.additive, "<", "<=", ">", ">=")
}

func (p *exprParser) additive() (*node, *exprError) {
	return p.binary(p.multiplicative, "+", "-")
}

func (p *exprParser) multiplicative() (*node, *exprError) {
	return p.binary(p.unary, "*", "/", "%")
}

// binary parses a left-associative chain of the given operators.
func (p *exprParser) binary(operand func() (*node, *exprError), ops ...string) (*node, *exprError) {
	left, err := operand()
	if err != nil {
		return nil, err
	}
	for {
		if p.tok.kind != tOp {
			return left, nil
		}
		matched := false
		for _, op := range ops {
			if p.tok.text == op {
				matched = true
				break
			}
		}
		if !matched {
			return left, nil
		}
		n := &node{op: opBinary, bop: binops[p.tok.text], pos: p.tok.pos}
		if err := p.advance(); err != nil {
			return nil, err
		}
		right, err := operand()
		if err != nil {
			return nil, err
		}
		n.kids = []*node{left, right}
		left = n
	}
}

func (p *exprParser) unary() (*node, *exprError) {
	if !p.is("!") && !p.is("-") {
		return p.postfix()
	}
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	n := &node{op: opNot, pos: p.tok.pos}
	if p.tok.text == "-" {
		n.op = opNeg
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	k, err := p.unary()
	if err != nil {
		return nil, err
	}
	n.kids = []*node{k}
	return n, nil
}

func (p *exprParser) postfix() (*node, *exprError) {
	n, err := p.primary()
	if err != nil {
		return nil, err
	}
	for {
		switch {
		case p.is("."):
			if err := p.advance(); err != nil {
				return nil, err
			}
			if p.tok.kind != tIdent {
				return nil, &exprError{p.tok.pos, "Expected a property name after '.'."}
			}
			n = &node{op: opMember, pos: p.tok.pos, name: p.tok.text, kids: []*node{n}}
			if err := p.advance(); err != nil {
				return nil, err
			}
		case p.is("["):
			pos := p.tok.pos
			if err := p.advance(); err != nil {
				return nil, err
			}
			key, err := p.cond()
			if err != nil {
				return nil, err
			}
			if err := p.expect("]"); err != nil {
				return nil, err
			}
			if key.op == opLit && key.lit.k == vStr {
				// a['b'] is a.b: one code path, and it is checked statically.
				n = &node{op: opMember, pos: key.pos, name: key.lit.s, kids: []*node{n}}
			} else {
				n = &node{op: opIndex, pos: pos, kids: []*node{n, key}}
			}
		case p.is("("):
			if n.op != opMember {
				return nil, &exprError{p.tok.pos, "Expression is not a function."}
			}
			call := &node{op: opCall, pos: n.pos, name: n.name, kids: []*node{n.kids[0]}}
			if err := p.advance(); err != nil {
				return nil, err
			}
			for !p.is(")") {
				a, err := p.cond()
				if err != nil {
					return nil, err
				}
				call.kids = append(call.kids, a)
				if p.is(",") {
					if err := p.advance(); err != nil {
						return nil, err
					}
					continue
				}
				if !p.is(")") {
					if p.tok.kind == tEOF {
						return nil, &exprError{p.tok.pos, "Unexpected end of expression: expected ')'."}
					}
					return nil, p.unexpected()
				}
			}
			if err := p.advance(); err != nil {
				return nil, err
			}
			n = call
		default:
			return n, nil
		}
	}
}

func (p *exprParser) primary() (*node, *exprError) {
	t := p.tok
	switch t.kind {
	case tNum:
		return p.leaf(&node{op: opLit, pos: t.pos, lit: numVal(t.num)})
	case tStr:
		return p.leaf(&node{op: opLit, pos: t.pos, lit: strVal(t.str)})
	case tIdent:
		switch t.text {
		case "true", "false":
			return p.leaf(&node{op: opLit, pos: t.pos, lit: boolVal(t.text == "true")})
		case "null":
			return p.leaf(&node{op: opLit, pos: t.pos})
		}
		return p.leaf(&node{op: opIdent, pos: t.pos, name: t.text})
	case tOp:
		switch t.text {
		case "(":
			if err := p.advance(); err != nil {
				return nil, err
			}
			n, err := p.cond()
			if err != nil {
				return nil, err
			}
			return n, p.expect(")")
		case "[":
			return p.array()
		case "/":
			rt, err := p.lex.regex(t.pos)
			if err != nil {
				return nil, err
			}
			src := rt.text
			if rt.flags == "i" {
				src = "(?i)" + src
			}
			re, cerr := regexp.Compile(src)
			if cerr != nil {
				return nil, &exprError{t.pos, "Invalid regular expression: " + cerr.Error() + "."}
			}
			return p.leaf(&node{op: opRegex, pos: t.pos, name: "/" + rt.text + "/" + rt.flags, re: re})
		}
	}
	return nil, p.unexpected()
}

// leaf returns n after consuming its single token.
func (p *exprParser) leaf(n *node) (*node, *exprError) {
	return n, p.advance()
}

func (p *exprParser) array() (*node, *exprError) {
	n := &node{op: opArray, pos: p.tok.pos}
	if err := p.advance(); err != nil {
		return nil, err
	}
	for !p.is("]") {
		e, err := p.cond()
		if err != nil {
			return nil, err
		}
		n.kids = append(n.kids, e)
		if p.is(",") {
			if err := p.advance(); err != nil {
				return nil, err
			}
			continue
		}
		if !p.is("]") {
			if p.tok.kind == tEOF {
				return nil, &exprError{p.tok.pos, "Unexpected end of expression: expected ']'."}
			}
			return nil, p.unexpected()
		}
	}
	return n, p.advance()
}
