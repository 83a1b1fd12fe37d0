package rules

import (
	"errors"
	"math"
	"strconv"
	"sync"
)

// Budget for one CanRead or CanWrite call. A step is one expression node
// evaluated, one path segment walked by child()/parent(), or 256 bytes of
// string work. Writes get more for every path and every node they ask the
// .validate walk to judge, so that the allowance grows with the write but
// no single expression can run long.
const (
	baseBudget     = 100_000
	perNodeBudget  = 1_000
	maxStringBytes = 1 << 20
)

var (
	// errRuntime makes the rule being evaluated false.
	errRuntime = errors.New("rules: runtime error")
	// errBudget denies the whole request.
	errBudget = errors.New("rules: evaluation budget exhausted")
)

// evaluator evaluates expressions for one CanRead or CanWrite call. It is
// not shared between calls.
type evaluator struct {
	// env is a copy of the caller's: holding no pointer to it lets the
	// caller's Env stay on its stack.
	env     Env
	auth    val
	authOK  bool
	root    Value
	newRoot Value
	steps   int
	budget  int

	// The location being judged: loc is its path (shared with the caller;
	// snapshots copy before appending), data and newData the nodes there.
	loc     []string
	data    Value
	newData Value
	// The snapshots root, data and newData evaluate to. They live in the
	// evaluator so that naming a variable allocates nothing; no value
	// outlives the expression evaluated at one location.
	rootSnap, dataSnap, newSnap snap
}

// evaluators recycles evaluators: every read and every write (on each
// replica, and once more before it is proposed) makes one, and at about
// half a kilobyte they were a visible share of a ruled request's garbage.
var evaluators = sync.Pool{New: func() any { return new(evaluator) }}

// newEvaluator returns an evaluator for env; release gives it back.
func newEvaluator(env *Env) *evaluator {
	if env == nil {
		env = &Env{}
	}
	ev := evaluators.Get().(*evaluator)
	*ev = evaluator{env: *env, root: orNull(env.Root), newRoot: orNull(env.NewRoot), budget: baseBudget}
	ev.auth, ev.authOK = fromGo(env.Auth)
	ev.rootSnap = snap{tree: ev.root, node: ev.root}
	return ev
}

// release returns ev to the pool once its judgement is made; nothing of
// it may be used afterwards. It is cleared first, so that a pooled
// evaluator keeps no tree, auth or path alive.
func (ev *evaluator) release() {
	*ev = evaluator{}
	evaluators.Put(ev)
}

// at moves the evaluator to a location.
func (ev *evaluator) at(loc []string, data, newData Value) {
	ev.loc, ev.data, ev.newData = loc, data, newData
	ev.dataSnap = snap{tree: ev.root, node: data, base: loc}
	ev.newSnap = snap{tree: ev.newRoot, node: orNull(newData), base: loc}
}

// charge spends n steps.
func (ev *evaluator) charge(n int) error {
	ev.steps += n
	if ev.steps > ev.budget {
		return errBudget
	}
	return nil
}

// holds evaluates r at the current location. A runtime error makes the rule
// false; only budget exhaustion is returned, since it must deny the whole
// request rather than one rule.
func (ev *evaluator) holds(r *rule) (bool, error) {
	if r.expr == nil {
		return r.value, nil
	}
	v, err := ev.eval(r.expr)
	if err == errBudget {
		return false, err
	}
	return err == nil && v.k == vBool && v.b, nil
}

func (ev *evaluator) eval(n *node) (val, error) {
	if err := ev.charge(1); err != nil {
		return val{}, err
	}
	switch n.op {
	case opLit:
		return n.lit, nil
	case opVar:
		return ev.variable(n.vr)
	case opLocVar:
		if n.depth < len(ev.loc) {
			return strVal(ev.loc[n.depth]), nil
		}
	case opQueryField:
		return ev.queryField(n.method)
	case opMember:
		recv, err := ev.eval(n.kids[0])
		if err != nil {
			return val{}, err
		}
		return ev.member(recv, n.name)
	case opIndex:
		return ev.index(n)
	case opCall:
		return ev.call(n)
	case opNot:
		v, err := ev.evalBool(n.kids[0])
		return boolVal(!v), err
	case opNeg:
		v, err := ev.eval(n.kids[0])
		if err != nil {
			return val{}, err
		}
		if v.k != vNum {
			return val{}, errRuntime
		}
		return numVal(-v.n), nil
	case opAnd, opOr:
		// Short-circuit: `auth != null && auth.uid == $uid` must not
		// evaluate its right side for a signed-out client.
		want := n.op == opOr
		for _, k := range n.kids {
			v, err := ev.evalBool(k)
			if err != nil || v == want {
				return boolVal(v), err
			}
		}
		return boolVal(!want), nil
	case opCond:
		c, err := ev.evalBool(n.kids[0])
		if err != nil {
			return val{}, err
		}
		if c {
			return ev.eval(n.kids[1])
		}
		return ev.eval(n.kids[2])
	case opBinary:
		a, err := ev.eval(n.kids[0])
		if err != nil {
			return val{}, err
		}
		b, err := ev.eval(n.kids[1])
		if err != nil {
			return val{}, err
		}
		return ev.binary(n.bop, a, b)
	}
	// Unresolved identifiers, bare arrays and regexes never pass check.
	return val{}, errRuntime
}

func (ev *evaluator) evalBool(n *node) (bool, error) {
	v, err := ev.eval(n)
	if err != nil {
		return false, err
	}
	if v.k != vBool {
		return false, errRuntime
	}
	return v.b, nil
}

func (ev *evaluator) variable(id varID) (val, error) {
	switch id {
	case varAuth:
		if !ev.authOK {
			return val{}, errRuntime
		}
		return ev.auth, nil
	case varNow:
		if ev.env.NowRead != nil {
			*ev.env.NowRead = true
		}
		return numVal(float64(ev.env.Now)), nil
	case varRoot:
		return snapVal(&ev.rootSnap), nil
	case varData:
		return snapVal(&ev.dataSnap), nil
	case varNewData:
		return snapVal(&ev.newSnap), nil
	}
	return val{}, errRuntime
}

func (ev *evaluator) queryField(id methodID) (val, error) {
	q := ev.env.Query
	if q == nil {
		q = &Query{}
	}
	var x any
	switch id {
	case qOrderByKey:
		return boolVal(q.OrderByKey), nil
	case qOrderByValue:
		return boolVal(q.OrderByValue), nil
	case qOrderByPriority:
		return boolVal(q.OrderByPriority), nil
	case qOrderByChild:
		if q.OrderByChild == "" {
			return val{}, nil
		}
		return strVal(q.OrderByChild), nil
	case qLimitToFirst, qLimitToLast:
		n := q.LimitToFirst
		if id == qLimitToLast {
			n = q.LimitToLast
		}
		if n == 0 {
			return val{}, nil
		}
		return numVal(float64(n)), nil
	case qStartAt:
		x = q.StartAt
	case qEndAt:
		x = q.EndAt
	case qEqualTo:
		x = q.EqualTo
	}
	v, ok := fromGo(x)
	if !ok || !v.isValue() {
		return val{}, errRuntime
	}
	return v, nil
}

// member is recv.name on a value: a string's or an auth array's length, or
// a field of an auth object. Anything else (a property of null, of a number,
// or of val() of a parent node) is an error.
func (ev *evaluator) member(recv val, name string) (val, error) {
	switch recv.k {
	case vStr:
		if name == "length" {
			if err := ev.charge(len(recv.s) / 256); err != nil {
				return val{}, err
			}
			return numVal(float64(utf16Len(recv.s))), nil
		}
	case vArr:
		if name == "length" {
			return numVal(float64(len(recv.a))), nil
		}
		if f, err := strconv.ParseFloat(name, 64); err == nil && jsNumber(f) == name {
			return element(recv.a, f)
		}
		return val{}, nil
	case vMap:
		x, ok := recv.m[name]
		if !ok {
			// A missing claim reads as null, so `auth.token.admin === true`
			// works for users without the claim.
			return val{}, nil
		}
		if v, ok := fromGo(x); ok {
			return v, nil
		}
	}
	return val{}, errRuntime
}

func (ev *evaluator) index(n *node) (val, error) {
	recv, err := ev.eval(n.kids[0])
	if err != nil {
		return val{}, err
	}
	key, err := ev.eval(n.kids[1])
	if err != nil {
		return val{}, err
	}
	switch {
	case recv.k == vMap && key.k == vStr:
		return ev.member(recv, key.s)
	case recv.k == vMap && key.k == vNum:
		return ev.member(recv, jsNumber(key.n))
	case recv.k == vArr && key.k == vNum:
		return element(recv.a, key.n)
	case recv.k == vArr && key.k == vStr:
		return ev.member(recv, key.s)
	}
	return val{}, errRuntime
}

// element is a[i] for an array inside auth: null past the end, an error
// for an index that is not a whole number.
func element(a []any, i float64) (val, error) {
	if i != math.Trunc(i) || i < 0 {
		return val{}, errRuntime
	}
	if i >= float64(len(a)) {
		return val{}, nil
	}
	if v, ok := fromGo(a[int(i)]); ok {
		return v, nil
	}
	return val{}, errRuntime
}

func (ev *evaluator) binary(op binop, a, b val) (val, error) {
	switch op {
	case bEq, bNe:
		eq, ok := equal(a, b)
		if !ok {
			return val{}, errRuntime
		}
		return boolVal(eq == (op == bEq)), nil
	case bAdd:
		if a.k == vNum && b.k == vNum {
			return numVal(a.n + b.n), nil
		}
		if (a.k == vStr || a.k == vNum) && (b.k == vStr || b.k == vNum) {
			return ev.concat(a, b)
		}
		return val{}, errRuntime
	case bLT, bLE, bGT, bGE:
		var c int
		switch {
		case a.k == vNum && b.k == vNum:
			// NaN compares false both ways, as in JavaScript.
			if math.IsNaN(a.n) || math.IsNaN(b.n) {
				return boolVal(false), nil
			}
			c = cmpFloat(a.n, b.n)
		case a.k == vStr && b.k == vStr:
			if err := ev.charge((len(a.s) + len(b.s)) / 256); err != nil {
				return val{}, err
			}
			c = compareUTF16(a.s, b.s)
		default:
			return val{}, errRuntime
		}
		switch op {
		case bLT:
			return boolVal(c < 0), nil
		case bLE:
			return boolVal(c <= 0), nil
		case bGT:
			return boolVal(c > 0), nil
		}
		return boolVal(c >= 0), nil
	}
	if a.k != vNum || b.k != vNum {
		return val{}, errRuntime
	}
	switch op {
	case bSub:
		return numVal(a.n - b.n), nil
	case bMul:
		return numVal(a.n * b.n), nil
	case bDiv:
		return numVal(a.n / b.n), nil
	}
	return numVal(math.Mod(a.n, b.n)), nil
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// concat joins strings (numbers in JavaScript's notation), refusing results
// over maxStringBytes so that repeated doubling cannot exhaust memory.
func (ev *evaluator) concat(a, b val) (val, error) {
	as, bs := a.s, b.s
	if a.k == vNum {
		as = jsNumber(a.n)
	}
	if b.k == vNum {
		bs = jsNumber(b.n)
	}
	if len(as)+len(bs) > maxStringBytes {
		return val{}, errRuntime
	}
	if err := ev.charge((len(as) + len(bs)) / 256); err != nil {
		return val{}, err
	}
	return strVal(as + bs), nil
}

// strArg evaluates a method argument that must be a string.
func (ev *evaluator) strArg(n *node) (string, error) {
	v, err := ev.eval(n)
	if err != nil {
		return "", err
	}
	if v.k != vStr {
		return "", errRuntime
	}
	return v.s, nil
}

func (ev *evaluator) call(n *node) (val, error) {
	recv, err := ev.eval(n.kids[0])
	if err != nil {
		return val{}, err
	}
	if n.method < mLength {
		if recv.k != vSnap {
			return val{}, errRuntime
		}
		return ev.snapCall(recv.sn, n)
	}
	if recv.k != vStr {
		return val{}, errRuntime
	}
	return ev.stringCall(recv.s, n)
}
