package main

import (
	"go/ast"
	"go/token"
)

// The interpreter evaluates the straight-line Go code that test tables use to
// build sub-group trees: function literals called in place,
//
//	func() *subgroup_info.SubGroupSet {
//		root := subgroup_info.NewSubGroupSet(subgroup_info.RootSubGroupSetName, nil)
//		root.AddPodSet(subgroup_info.NewPodSet("a", 2, nil))
//		return root
//	}()
//
// and KAI helpers of the same form called by name, such as
// jobs_fake.DefaultSubGroup(n), whose bodies it reads from KAI's source.
// A body may only hold `x := e` / `x = e` for local x, calls of modelled
// methods (subgroups.go) and one final `return e`. Expressions may be nil,
// local variables and parameters, &topology_info.TopologyConstraintInfo{...}
// (topologyconstraint.go), calls (interpcall.go) and constants (consteval.go;
// these cannot mention variables). Anything else makes the whole call
// untranslatable: the interpreter never guesses.

// nilPointer is the value of the identifier nil.
type nilPointer struct{}

// frame is one activation of an interpreted function body. Its variables
// hold constant.Value, nilPointer, topologyConstraint, *subGroupSet or
// *podSet values.
type frame struct {
	scope *fileScope // the file the body is written in
	vars  map[string]interface{}
	outer *frame // the enclosing activation of a function literal, or nil
	depth int    // number of enclosing interpreted calls
}

// maxCallDepth bounds nested interpreted calls (and so recursion).
const maxCallDepth = 8

func newFrame(scope *fileScope, outer *frame) *frame {
	f := &frame{scope: scope, vars: map[string]interface{}{}, outer: outer}
	if outer != nil {
		f.depth = outer.depth + 1
	}
	return f
}

// lookup finds a variable in this activation or an enclosing one.
func (f *frame) lookup(name string) (interface{}, bool) {
	for ; f != nil; f = f.outer {
		if v, ok := f.vars[name]; ok {
			return v, true
		}
	}
	return nil, false
}

// runBody executes a function body and returns the value it returns.
func (f *frame) runBody(body *ast.BlockStmt) (interface{}, bool) {
	n := len(body.List)
	if n == 0 {
		return nil, false
	}
	for _, stmt := range body.List[:n-1] {
		if !f.exec(stmt) {
			return nil, false
		}
	}
	ret, ok := body.List[n-1].(*ast.ReturnStmt)
	if !ok || len(ret.Results) != 1 {
		return nil, false
	}
	return f.eval(ret.Results[0])
}

// exec executes one statement of a body other than the final return.
func (f *frame) exec(stmt ast.Stmt) bool {
	switch s := stmt.(type) {
	case *ast.AssignStmt:
		return f.assign(s)
	case *ast.ExprStmt:
		call, ok := s.X.(*ast.CallExpr)
		return ok && f.methodCall(call)
	case *ast.EmptyStmt:
		return true
	}
	return false
}

// assign executes `x := e`, or `x = e` for a variable of this activation.
func (f *frame) assign(s *ast.AssignStmt) bool {
	if len(s.Lhs) != 1 || len(s.Rhs) != 1 {
		return false
	}
	id, ok := s.Lhs[0].(*ast.Ident)
	if !ok || id.Name == "_" {
		return false
	}
	switch s.Tok {
	case token.DEFINE:
	case token.ASSIGN:
		if _, local := f.vars[id.Name]; !local {
			return false
		}
	default:
		return false
	}
	v, ok := f.eval(s.Rhs[0])
	if ok {
		f.vars[id.Name] = v
	}
	return ok
}

// eval evaluates an expression to an interpreter value.
func (f *frame) eval(e ast.Expr) (interface{}, bool) {
	switch e := e.(type) {
	case *ast.ParenExpr:
		return f.eval(e.X)
	case *ast.Ident:
		if e.Obj != nil { // declared in the file: a local variable or parameter
			if v, ok := f.lookup(e.Name); ok {
				return v, true
			}
		}
		if e.Name == "nil" && e.Obj == nil {
			return nilPointer{}, true
		}
	case *ast.UnaryExpr:
		if lit, ok := e.X.(*ast.CompositeLit); ok && e.Op == token.AND {
			return f.topologyConstraint(lit)
		}
	case *ast.CallExpr:
		if v, ok := f.call(e); ok {
			return v, true
		} // else perhaps a conversion such as int32(1)
	}
	if v := f.scope.evalConst(e, -1); v != nil {
		return v, true
	}
	return nil, false
}
