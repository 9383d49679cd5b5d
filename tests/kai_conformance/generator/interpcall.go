package main

import (
	"go/ast"
	"go/constant"
)

// call evaluates a call expression: a function literal called in place, a
// pointer helper (whose value is its argument, as in convert.go), a modelled
// subgroup_info constructor, or a function declared in KAI or in the test
// package, interpreted from its source.
func (f *frame) call(call *ast.CallExpr) (interface{}, bool) {
	if f.depth >= maxCallDepth || call.Ellipsis.IsValid() {
		return nil, false
	}
	if lit, ok := call.Fun.(*ast.FuncLit); ok {
		return f.callFunc(lit.Type, lit.Body, newFrame(f.scope, f), call.Args)
	}
	importPath, name, pkg := f.scope.callee(call.Fun)
	switch {
	case importPath == "":
		return nil, false
	case isPointerHelper(importPath, name, pkg) && len(call.Args) == 1:
		return f.eval(call.Args[0])
	case importPath == f.scope.loader.module+subGroupInfoPackage:
		args, ok := f.evalAll(call.Args)
		if !ok {
			return nil, false
		}
		return subGroupConstructor(name, args)
	}
	if fn, ok := pkg.declaredFunc(name); ok {
		callee := newFrame(fn.scope, nil)
		callee.depth = f.depth + 1
		return f.callFunc(fn.decl.Type, fn.decl.Body, callee, call.Args)
	}
	return nil, false
}

// declaredFunc returns the package-level function name of a loaded package.
func (pkg *pkgInfo) declaredFunc(name string) (funcRef, bool) {
	if pkg == nil {
		return funcRef{}, false
	}
	fn, ok := pkg.funcs[name]
	return fn, ok && fn.decl.Body != nil && fn.decl.Type.TypeParams == nil
}

// callFunc binds the arguments (evaluated in f) to the parameters of a
// function with one result and runs its body in callee.
func (f *frame) callFunc(ft *ast.FuncType, body *ast.BlockStmt, callee *frame, args []ast.Expr) (interface{}, bool) {
	if ft.Results == nil || len(ft.Results.List) != 1 || len(ft.Results.List[0].Names) > 1 {
		return nil, false
	}
	if !f.bindParams(callee, ft.Params, args) {
		return nil, false
	}
	return callee.runBody(body)
}

// bindParams sets the callee's parameters to the arguments. Constants are
// converted to the parameter's type, as Go does for untyped constants.
func (f *frame) bindParams(callee *frame, params *ast.FieldList, args []ast.Expr) bool {
	i := 0
	for _, param := range params.List {
		if _, variadic := param.Type.(*ast.Ellipsis); variadic || len(param.Names) == 0 {
			return false
		}
		for _, name := range param.Names {
			if i == len(args) {
				return false
			}
			v, ok := f.eval(args[i])
			if c, isConst := v.(constant.Value); isConst {
				c = convertConst(typeRef{param.Type, callee.scope}, c)
				v, ok = c, c != nil
			}
			if !ok {
				return false
			}
			callee.vars[name.Name] = v
			i++
		}
	}
	return i == len(args)
}

// evalAll evaluates call arguments.
func (f *frame) evalAll(args []ast.Expr) ([]interface{}, bool) {
	values := make([]interface{}, len(args))
	for i, arg := range args {
		v, ok := f.eval(arg)
		if !ok {
			return nil, false
		}
		values[i] = v
	}
	return values, true
}

// methodCall executes a statement x.Method(arg) on a local *SubGroupSet.
func (f *frame) methodCall(call *ast.CallExpr) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || len(call.Args) != 1 || call.Ellipsis.IsValid() {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	if !ok || x.Obj == nil {
		return false
	}
	recv, _ := f.lookup(x.Name)
	set, ok := recv.(*subGroupSet)
	if !ok {
		return false
	}
	arg, ok := f.eval(call.Args[0])
	return ok && set.invoke(sel.Sel.Name, arg)
}
