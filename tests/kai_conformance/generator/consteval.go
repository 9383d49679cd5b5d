package main

import (
	"go/ast"
	"go/constant"
	"go/token"
	"time"
)

// externalConsts gives the values of constants declared outside KAI (whose
// source is not in the checkout), by import path and name. Extend it when a
// test table uses another such constant.
var externalConsts = map[string]map[string]constant.Value{
	"time": {
		"Nanosecond":  constant.MakeInt64(int64(time.Nanosecond)),
		"Microsecond": constant.MakeInt64(int64(time.Microsecond)),
		"Millisecond": constant.MakeInt64(int64(time.Millisecond)),
		"Second":      constant.MakeInt64(int64(time.Second)),
		"Minute":      constant.MakeInt64(int64(time.Minute)),
		"Hour":        constant.MakeInt64(int64(time.Hour)),
	},
}

// constDecl is one declared constant. As the Go spec prescribes, a spec
// without values repeats the type and values of the previous spec in its group
// (with its own iota).
type constDecl struct {
	name  *ast.Ident
	typ   ast.Expr // declared or inherited type; nil when untyped
	expr  ast.Expr // declared or inherited value expression
	iota  int
	scope *fileScope

	state evalState
	val   constant.Value // nil when the value cannot be evaluated
}

type evalState int

const (
	unevaluated evalState = iota
	evaluating
	evaluated
)

// indexConstGroup records every constant of a const declaration.
func (l *loader) indexConstGroup(sc *fileScope, d *ast.GenDecl) {
	var typ ast.Expr
	var values []ast.Expr
	for i, spec := range d.Specs {
		vs := spec.(*ast.ValueSpec)
		if len(vs.Values) > 0 {
			typ, values = vs.Type, vs.Values
		}
		for j, name := range vs.Names {
			c := &constDecl{name: name, typ: typ, iota: i, scope: sc}
			if j < len(values) {
				c.expr = values[j]
			}
			l.consts[name] = c
		}
	}
}

// value evaluates the constant once; cycles and unsupported expressions give nil.
func (c *constDecl) value() constant.Value {
	switch c.state {
	case evaluated:
		return c.val
	case evaluating:
		return nil
	}
	c.state = evaluating
	v := c.scope.evalConst(c.expr, c.iota)
	if v != nil && c.typ != nil {
		v = convertConst(typeRef{c.typ, c.scope}, v)
	}
	c.val, c.state = v, evaluated
	return v
}

// isEnum reports whether c belongs to an iota enum of a named integer type,
// such as pod_status.Running; such constants are emitted by name.
func (c *constDecl) isEnum() bool {
	if c.typ == nil || c.expr == nil || !mentionsIota(c.expr) {
		return false
	}
	t := typeRef{c.typ, c.scope}
	return t.builtinName() == "" && t.class() == intClass
}

func mentionsIota(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && id.Name == "iota" && id.Obj == nil {
			found = true
		}
		return !found
	})
	return found
}

// constRef returns the declaration of the constant an identifier or a
// package-qualified selector refers to, or nil.
func (sc *fileScope) constRef(e ast.Expr) *constDecl {
	switch e := e.(type) {
	case *ast.ParenExpr:
		return sc.constRef(e.X)
	case *ast.Ident:
		return sc.identConst(e)
	case *ast.SelectorExpr:
		x, ok := e.X.(*ast.Ident)
		if !ok || x.Obj != nil { // x is a local variable, not a package
			return nil
		}
		if pkg := sc.loader.importedPackage(sc.importPathOf(x.Name)); pkg != nil {
			return pkg.consts[e.Sel.Name]
		}
	}
	return nil
}

// identConst resolves an unqualified identifier. The parser has already bound
// identifiers declared in the same file (including function-local constants
// and variables that shadow package-level names); the rest are looked up in
// the package and in dot-imported packages.
func (sc *fileScope) identConst(id *ast.Ident) *constDecl {
	if id.Obj != nil {
		if id.Obj.Kind != ast.Con {
			return nil
		}
		if spec, ok := id.Obj.Decl.(*ast.ValueSpec); ok {
			for _, name := range spec.Names {
				if name.Name == id.Name {
					return sc.loader.consts[name]
				}
			}
		}
		return nil
	}
	if c := sc.pkg.consts[id.Name]; c != nil {
		return c
	}
	for _, pkg := range sc.dotImports() {
		if c := pkg.consts[id.Name]; c != nil {
			return c
		}
	}
	return nil
}

// evalConst evaluates a constant expression, or returns nil if e is not one
// the generator understands. iota is the value of iota, or -1 outside a const
// declaration.
func (sc *fileScope) evalConst(e ast.Expr, iota int) constant.Value {
	switch e := e.(type) {
	case *ast.BasicLit:
		return known(constant.MakeFromLiteral(e.Value, e.Kind, 0))
	case *ast.ParenExpr:
		return sc.evalConst(e.X, iota)
	case *ast.Ident:
		return sc.evalIdent(e, iota)
	case *ast.SelectorExpr:
		return sc.evalSelector(e)
	case *ast.UnaryExpr:
		return sc.evalUnary(e, iota)
	case *ast.BinaryExpr:
		return sc.evalBinary(e, iota)
	case *ast.CallExpr:
		return sc.evalConversion(e, iota)
	}
	return nil
}

func (sc *fileScope) evalIdent(id *ast.Ident, iota int) constant.Value {
	if c := sc.identConst(id); c != nil {
		return c.value()
	}
	if id.Obj != nil {
		return nil
	}
	switch {
	case id.Name == "true" || id.Name == "false":
		return constant.MakeBool(id.Name == "true")
	case id.Name == "iota" && iota >= 0:
		return constant.MakeInt64(int64(iota))
	}
	return nil
}

func (sc *fileScope) evalSelector(sel *ast.SelectorExpr) constant.Value {
	if c := sc.constRef(sel); c != nil {
		return c.value()
	}
	if x, ok := sel.X.(*ast.Ident); ok && x.Obj == nil {
		return externalConsts[sc.importPathOf(x.Name)][sel.Sel.Name]
	}
	return nil
}

func (sc *fileScope) evalUnary(u *ast.UnaryExpr, iota int) constant.Value {
	x := sc.evalConst(u.X, iota)
	if x == nil {
		return nil
	}
	switch u.Op {
	case token.ADD, token.SUB, token.XOR, token.NOT:
		return tryConstant(func() constant.Value { return constant.UnaryOp(u.Op, x, 0) })
	}
	return nil
}

func (sc *fileScope) evalBinary(b *ast.BinaryExpr, iota int) constant.Value {
	x, y := sc.evalConst(b.X, iota), sc.evalConst(b.Y, iota)
	if x == nil || y == nil {
		return nil
	}
	op := b.Op
	switch op {
	case token.SHL, token.SHR:
		s, ok := constant.Uint64Val(constant.ToInt(y))
		if !ok {
			return nil
		}
		return tryConstant(func() constant.Value { return constant.Shift(constant.ToInt(x), op, uint(s)) })
	case token.EQL, token.NEQ, token.LSS, token.LEQ, token.GTR, token.GEQ:
		return tryConstant(func() constant.Value { return constant.MakeBool(constant.Compare(x, op, y)) })
	case token.QUO:
		if x.Kind() == constant.Int && y.Kind() == constant.Int {
			op = token.QUO_ASSIGN // Go divides integer constants with truncation
		}
	}
	return tryConstant(func() constant.Value { return constant.BinaryOp(x, op, y) })
}

// evalConversion evaluates T(c) for a type T and a constant c.
func (sc *fileScope) evalConversion(call *ast.CallExpr, iota int) constant.Value {
	t := typeRef{call.Fun, sc}
	if len(call.Args) != 1 || !t.isType() {
		return nil
	}
	v := sc.evalConst(call.Args[0], iota)
	if v == nil {
		return nil
	}
	return convertConst(t, v)
}

// convertConst converts v to type t, or returns nil if Go would reject it
// (or the generator cannot tell). Types of unknown class leave v unchanged.
func convertConst(t typeRef, v constant.Value) constant.Value {
	switch t.class() {
	case intClass:
		if v = constant.ToInt(v); v.Kind() != constant.Int {
			return nil
		}
	case floatClass:
		if v = constant.ToFloat(v); v.Kind() != constant.Float {
			return nil
		}
	case stringClass:
		if v.Kind() != constant.String {
			return nil
		}
	case boolClass:
		if v.Kind() != constant.Bool {
			return nil
		}
	}
	return v
}

// tryConstant runs a go/constant operation. Those panic on operands of
// mismatched kinds or on division by zero, which an untyped evaluator cannot
// rule out up front; such expressions are simply not evaluable.
func tryConstant(op func() constant.Value) (v constant.Value) {
	defer func() {
		if recover() != nil {
			v = nil
		}
	}()
	return known(op())
}

// known maps constant.Unknown to nil.
func known(v constant.Value) constant.Value {
	if v == nil || v.Kind() == constant.Unknown {
		return nil
	}
	return v
}
