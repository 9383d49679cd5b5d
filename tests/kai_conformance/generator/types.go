package main

import "go/ast"

// basicClass groups builtin types by how a constant converts to them.
type basicClass int

const (
	notBasic basicClass = iota
	intClass
	floatClass
	stringClass
	boolClass
)

// builtinTypes are Go's predeclared types that constants can convert to.
var builtinTypes = map[string]basicClass{
	"int": intClass, "int8": intClass, "int16": intClass, "int32": intClass, "int64": intClass,
	"uint": intClass, "uint8": intClass, "uint16": intClass, "uint32": intClass, "uint64": intClass,
	"uintptr": intClass, "byte": intClass, "rune": intClass,
	"float32": floatClass, "float64": floatClass,
	"string": stringClass, "bool": boolClass,
}

// externalTypes gives the builtin underlying type of named types declared
// outside KAI (whose source is not in the checkout), by import path and name.
// Extend it when a test table converts to another such type.
var externalTypes = map[string]map[string]string{
	"time": {"Duration": "int64"},
}

// compositeShape says how a composite literal of some type is written as JSON.
type compositeShape int

const (
	shapeUnknown compositeShape = iota // decided from the literal's keys
	shapeStruct
	shapeMap
	shapeSlice
)

// shape resolves t to its underlying type and reports the literal shape and,
// for maps and slices, the element type (needed for elided element types).
func (t typeRef) shape() (compositeShape, typeRef) {
	u := t.underlying()
	switch e := u.expr.(type) {
	case *ast.StructType:
		return shapeStruct, typeRef{}
	case *ast.MapType:
		return shapeMap, typeRef{e.Value, u.scope}
	case *ast.ArrayType:
		return shapeSlice, typeRef{e.Elt, u.scope}
	case *ast.SelectorExpr:
		return shapeStruct, typeRef{} // a type outside KAI; assume a struct such as metav1.ObjectMeta
	}
	return shapeUnknown, typeRef{}
}

// elem strips a pointer: elided `{...}` elements of []*T stand for &T{...}.
func (t typeRef) elem() typeRef {
	if star, ok := t.expr.(*ast.StarExpr); ok {
		return typeRef{star.X, t.scope}
	}
	return t
}

// class is the builtin type class t's underlying type belongs to.
func (t typeRef) class() basicClass {
	return builtinTypes[t.underlying().builtinName()]
}

// underlying follows named types declared in KAI (and the few known external
// ones) to the type expression they are defined as.
func (t typeRef) underlying() typeRef {
	for i := 0; i < 32 && t.expr != nil; i++ {
		next, ok := t.definition()
		if !ok {
			return t
		}
		t = next
	}
	return t
}

// definition returns the type expression a named type t is declared as.
func (t typeRef) definition() (typeRef, bool) {
	switch e := t.expr.(type) {
	case *ast.ParenExpr:
		return typeRef{e.X, t.scope}, true
	case *ast.IndexExpr: // generic instantiation T[A]
		return typeRef{e.X, t.scope}, true
	case *ast.IndexListExpr:
		return typeRef{e.X, t.scope}, true
	case *ast.Ident:
		return t.identDefinition(e)
	case *ast.SelectorExpr:
		return t.selectorDefinition(e)
	}
	return typeRef{}, false
}

func (t typeRef) identDefinition(id *ast.Ident) (typeRef, bool) {
	if t.scope == nil {
		return typeRef{}, false
	}
	if id.Obj != nil { // declared in the same file, possibly inside a function
		if ts, ok := id.Obj.Decl.(*ast.TypeSpec); ok {
			return typeRef{ts.Type, t.scope}, true
		}
		return typeRef{}, false
	}
	def, ok := t.scope.pkg.types[id.Name]
	return def, ok
}

func (t typeRef) selectorDefinition(sel *ast.SelectorExpr) (typeRef, bool) {
	x, ok := sel.X.(*ast.Ident)
	if !ok || t.scope == nil {
		return typeRef{}, false
	}
	importPath := t.scope.importPathOf(x.Name)
	if b := externalTypes[importPath][sel.Sel.Name]; b != "" {
		return typeRef{ast.NewIdent(b), nil}, true
	}
	if pkg := t.scope.loader.importedPackage(importPath); pkg != nil {
		def, ok := pkg.types[sel.Sel.Name]
		return def, ok
	}
	return typeRef{}, false
}

// builtinName returns the predeclared type name t denotes, or "".
func (t typeRef) builtinName() string {
	id, ok := t.expr.(*ast.Ident)
	if !ok || id.Obj != nil {
		return ""
	}
	if t.scope != nil {
		if _, shadowed := t.scope.pkg.types[id.Name]; shadowed {
			return ""
		}
	}
	if _, ok := builtinTypes[id.Name]; !ok {
		return ""
	}
	return id.Name
}

// isType reports whether expr names a type, so that a call T(x) is a conversion.
func (t typeRef) isType() bool {
	if t.builtinName() != "" {
		return true
	}
	_, ok := t.definition()
	return ok
}
