package main

import (
	"go/ast"
	"go/constant"
)

// makeCall translates the builtin make when it builds an empty collection:
// make(map[K]V) and make(map[K]V, hint) are {}, make([]T, 0) and
// make([]T, 0, capacity) are []. A slice of non-zero length would hold zero
// values of T, which the generator does not write; it stays untranslatable.
func (c *converter) makeCall(call *ast.CallExpr) (value, bool) {
	if !c.isBuiltin(call.Fun, "make") || len(call.Args) == 0 {
		return nil, false
	}
	shape, _ := typeRef{call.Args[0], c.scope}.shape()
	switch {
	case shape == shapeMap && len(call.Args) <= 2:
		return object{}, true
	case shape == shapeSlice && len(call.Args) >= 2 && isZeroConst(c.scope.evalConst(call.Args[1], -1)):
		return array{}, true
	}
	return nil, false
}

// isBuiltin reports whether fun is the predeclared function name, not shadowed
// by a declaration in the file or package.
func (c *converter) isBuiltin(fun ast.Expr, name string) bool {
	id, ok := fun.(*ast.Ident)
	if !ok || id.Name != name || id.Obj != nil {
		return false
	}
	_, shadowed := c.scope.pkg.funcs[name]
	return !shadowed
}

func isZeroConst(v constant.Value) bool {
	return v != nil && v.Kind() == constant.Int && constant.Sign(v) == 0
}
