package main

import (
	"go/ast"
	"strings"
)

// The generator extracts composite literals of this type, relative to the
// KAI module path.
const (
	topologyPackage = "/pkg/scheduler/test_utils"
	topologyType    = "TestTopologyBasic"
	// topologyKey is the field that holds the topology in an enclosing
	// literal such as integration_tests_utils.TestTopologyMetadata.
	topologyKey = "TestTopologyBasic"
)

// scenario is one TestTopologyBasic literal of a test file, converted.
type scenario struct {
	line           int
	function       string // enclosing function declaration; "" at package level
	name           value  // the literal's Name field
	topology       value
	metadata       object // sibling fields of the enclosing literal
	untranslatable []string
}

// extractScenarios converts the file's TestTopologyBasic literals in source order.
func extractScenarios(sc *fileScope) []scenario {
	var found []scenario
	var stack []ast.Node // ancestors of the node being visited
	ast.Inspect(sc.file, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		if lit, ok := n.(*ast.CompositeLit); ok {
			if t := sc.literalType(lit, stack); sc.isTopology(t) {
				found = append(found, sc.newScenario(lit, t, stack))
			}
		}
		stack = append(stack, n)
		return true
	})
	return found
}

// literalType is the type of lit: written out, or for an elided element of a
// slice or map literal, the element type of the enclosing literal.
func (sc *fileScope) literalType(lit *ast.CompositeLit, stack []ast.Node) typeRef {
	if lit.Type != nil {
		return typeRef{lit.Type, sc}
	}
	i := len(stack) - 1
	if i >= 0 {
		if kv, ok := stack[i].(*ast.KeyValueExpr); ok && kv.Value == lit {
			i--
		}
	}
	if i < 0 {
		return typeRef{}
	}
	parent, ok := stack[i].(*ast.CompositeLit)
	if !ok || parent.Type == nil {
		return typeRef{}
	}
	_, elem := typeRef{parent.Type, sc}.shape()
	return elem.elem()
}

// isTopology reports whether t is test_utils.TestTopologyBasic.
func (sc *fileScope) isTopology(t typeRef) bool {
	want := sc.loader.module + topologyPackage
	switch e := t.expr.(type) {
	case *ast.Ident: // inside package test_utils itself
		return e.Name == topologyType && t.scope.pkg.path == want &&
			!strings.HasSuffix(t.scope.pkg.name, "_test")
	case *ast.SelectorExpr:
		x, ok := e.X.(*ast.Ident)
		return ok && e.Sel.Name == topologyType && t.scope.importPathOf(x.Name) == want
	}
	return false
}

// newScenario converts one topology literal together with its context.
func (sc *fileScope) newScenario(lit *ast.CompositeLit, t typeRef, stack []ast.Node) scenario {
	conv := &converter{scope: sc}
	topology := conv.convert(lit, t)
	metadata := conv.metadata(lit, stack)
	return scenario{
		line:           sc.loader.fset.Position(lit.Pos()).Line,
		function:       enclosingFunction(stack),
		name:           fieldOf(topology, "Name"),
		topology:       topology,
		metadata:       metadata,
		untranslatable: conv.untranslatable,
	}
}

// metadata converts the fields next to `TestTopologyBasic: lit` in the
// enclosing literal (RoundsUntilMatch, SchedulingDuration, ...).
func (c *converter) metadata(lit *ast.CompositeLit, stack []ast.Node) object {
	meta := object{}
	if len(stack) < 2 {
		return meta
	}
	kv, ok := stack[len(stack)-1].(*ast.KeyValueExpr)
	if !ok || kv.Value != lit || !isIdentNamed(kv.Key, topologyKey) {
		return meta
	}
	enclosing, ok := stack[len(stack)-2].(*ast.CompositeLit)
	if !ok {
		return meta
	}
	for _, elt := range enclosing.Elts {
		sibling, ok := elt.(*ast.KeyValueExpr)
		if !ok || sibling == kv {
			continue
		}
		meta = append(meta, field{exprText(c.scope, sibling.Key), c.convert(sibling.Value, typeRef{})})
	}
	return meta
}

func isIdentNamed(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

// enclosingFunction names the innermost function declaration on the stack.
func enclosingFunction(stack []ast.Node) string {
	for i := len(stack) - 1; i >= 0; i-- {
		if fn, ok := stack[i].(*ast.FuncDecl); ok {
			return fn.Name.Name
		}
	}
	return ""
}

// fieldOf returns the value of key in obj, or "" if obj has no such key.
func fieldOf(v value, key string) value {
	if obj, ok := v.(object); ok {
		for _, f := range obj {
			if f.key == key {
				return f.val
			}
		}
	}
	return jsonString("")
}
