package main

import (
	"bytes"
	"go/ast"
	"go/constant"
	"go/printer"
	"go/token"
	"math"
	"strconv"
	"strings"
)

// untranslatablePrefix marks, in the JSON, an expression that could not be
// evaluated; the rest of the string is the expression's Go source.
const untranslatablePrefix = "$expr:"

// pointerPackages are the k8s.io/utils packages whose one-argument helpers
// (ptr.To, pointer.Int32, pointer.Float64Ptr, ...) only take their argument's
// address; the JSON keeps the argument.
var pointerPackages = map[string]bool{
	"k8s.io/utils/ptr":     true,
	"k8s.io/utils/pointer": true,
}

// resourcePackage declares MustParse, whose quantity string is kept as is.
const resourcePackage = "k8s.io/apimachinery/pkg/api/resource"

// converter turns the Go expressions of one scenario into JSON values and
// records the source of those it cannot evaluate.
type converter struct {
	scope          *fileScope
	untranslatable []string
}

// convert translates e. hint is e's type when the source elides it (elements
// of slice and map literals), otherwise the zero typeRef.
func (c *converter) convert(e ast.Expr, hint typeRef) value {
	switch e := e.(type) {
	case *ast.CompositeLit:
		return c.composite(e, hint)
	case *ast.ParenExpr:
		return c.convert(e.X, hint)
	case *ast.UnaryExpr:
		if lit, ok := e.X.(*ast.CompositeLit); ok && e.Op == token.AND {
			return c.composite(lit, hint) // &T{...} is written as T{...}
		}
	case *ast.Ident:
		if e.Name == "nil" && e.Obj == nil {
			return jsonNull
		}
	case *ast.CallExpr:
		if v, ok := c.call(e); ok {
			return v
		}
	}
	if v, ok := c.constant(e); ok {
		return v
	}
	return c.markUntranslatable(e)
}

// composite translates a composite literal according to its type's shape.
func (c *converter) composite(lit *ast.CompositeLit, hint typeRef) value {
	t := hint.elem()
	if lit.Type != nil {
		t = typeRef{lit.Type, c.scope}
	}
	shape, elemType := t.shape()
	if shape == shapeUnknown {
		shape = guessShape(lit)
	}
	switch shape {
	case shapeStruct:
		return c.structLit(lit)
	case shapeMap:
		return c.mapLit(lit, elemType)
	default:
		return c.sliceLit(lit, elemType)
	}
}

// guessShape decides the shape of a literal whose type is unknown from its
// elements: `Field: v` is a struct, `"key": v` a map, and bare values a slice.
func guessShape(lit *ast.CompositeLit) compositeShape {
	if len(lit.Elts) == 0 {
		return shapeStruct
	}
	kv, ok := lit.Elts[0].(*ast.KeyValueExpr)
	switch {
	case !ok:
		return shapeSlice
	case isIdent(kv.Key):
		return shapeStruct
	default:
		return shapeMap
	}
}

func isIdent(e ast.Expr) bool {
	_, ok := e.(*ast.Ident)
	return ok
}

// structLit writes keyed fields as an object in source order. Positional
// struct literals (T{a, b}) become an array of their values.
func (c *converter) structLit(lit *ast.CompositeLit) value {
	obj := object{}
	for _, elt := range lit.Elts {
		kv, ok := elt.(*ast.KeyValueExpr)
		if !ok {
			return c.sliceLit(lit, typeRef{})
		}
		name := exprText(c.scope, kv.Key)
		obj = append(obj, field{name, c.convert(kv.Value, typeRef{})})
	}
	return obj
}

// mapLit writes a map literal as an object whose keys are the evaluated keys.
func (c *converter) mapLit(lit *ast.CompositeLit, valueType typeRef) value {
	obj := object{}
	for _, elt := range lit.Elts {
		kv, ok := elt.(*ast.KeyValueExpr)
		if !ok {
			c.markUntranslatable(elt)
			continue
		}
		obj = append(obj, field{c.mapKey(kv.Key), c.convert(kv.Value, valueType)})
	}
	return obj
}

// mapKey renders a constant map key as a string.
func (c *converter) mapKey(e ast.Expr) string {
	if name := c.enumName(e); name != "" {
		return name
	}
	v := c.scope.evalConst(e, -1)
	if v != nil && v.Kind() == constant.String {
		return constant.StringVal(v)
	}
	if s, ok := constantScalar(v); ok {
		return string(s)
	}
	return untranslatablePrefix + c.record(e)
}

// sliceLit writes slice and array literals as arrays.
func (c *converter) sliceLit(lit *ast.CompositeLit, elemType typeRef) value {
	arr := array{}
	for _, elt := range lit.Elts {
		if _, indexed := elt.(*ast.KeyValueExpr); indexed {
			arr = append(arr, c.markUntranslatable(elt)) // [...]T{3: x}
			continue
		}
		arr = append(arr, c.convert(elt, elemType))
	}
	return arr
}

// call translates the calls the generator understands. Conversions such as
// int64(3) are not among them: they are constants.
func (c *converter) call(call *ast.CallExpr) (value, bool) {
	for _, translate := range []func(*ast.CallExpr) (value, bool){
		c.wrapperCall,                // ptr.To(x), resource.MustParse("1Gi")
		c.makeCall,                   // make(map[K]V), make([]T, 0)
		c.evenlyDistributedNodesCall, // topologynodes.go
		c.subGroupSetCall,            // interp.go
	} {
		if v, ok := translate(call); ok {
			return v, true
		}
	}
	return nil, false
}

// wrapperCall translates the calls that only wrap a value: pointer helpers
// and resource.MustParse.
func (c *converter) wrapperCall(call *ast.CallExpr) (value, bool) {
	if len(call.Args) != 1 {
		return nil, false
	}
	importPath, name, pkg := c.scope.callee(call.Fun)
	switch {
	case isPointerHelper(importPath, name, pkg):
		return c.convert(call.Args[0], typeRef{}), true
	case importPath == resourcePackage && name == "MustParse":
		if v := c.scope.evalConst(call.Args[0], -1); v != nil && v.Kind() == constant.String {
			return jsonString(constant.StringVal(v)), true
		}
	}
	return nil, false
}

// subGroupSetCall interprets a call that builds a sub-group tree, such as
// jobs_fake.DefaultSubGroup(2) or a function literal called in place.
func (c *converter) subGroupSetCall(call *ast.CallExpr) (value, bool) {
	v, ok := newFrame(c.scope, nil).call(call)
	set, isSet := v.(*subGroupSet)
	if !ok || !isSet {
		return nil, false
	}
	return set.rootJSON(), true
}

// isPointerHelper reports whether importPath.name is a one-argument function
// returning a pointer to its argument.
func isPointerHelper(importPath, name string, pkg *pkgInfo) bool {
	if pointerPackages[importPath] {
		base := strings.TrimSuffix(name, "Ptr")
		_, basic := builtinTypes[strings.ToLower(base)]
		return name == "To" || base == "Duration" || basic
	}
	return pkg != nil && pkg.ptrHelpers[name]
}

// callee identifies the function a call invokes: the import path of its
// package, its name and, for KAI packages, the loaded package.
func (sc *fileScope) callee(fun ast.Expr) (importPath, name string, pkg *pkgInfo) {
	switch f := fun.(type) {
	case *ast.IndexExpr: // explicit instantiation, ptr.To[int32](x)
		return sc.callee(f.X)
	case *ast.IndexListExpr:
		return sc.callee(f.X)
	case *ast.Ident:
		if f.Obj == nil || f.Obj.Kind == ast.Fun {
			return sc.pkg.path, f.Name, sc.pkg
		}
	case *ast.SelectorExpr:
		if x, ok := f.X.(*ast.Ident); ok && x.Obj == nil {
			importPath = sc.importPathOf(x.Name)
			return importPath, f.Sel.Name, sc.loader.importedPackage(importPath)
		}
	}
	return "", "", nil
}

// constant translates a constant expression: an iota enum member by name,
// anything else by value.
func (c *converter) constant(e ast.Expr) (value, bool) {
	if name := c.enumName(e); name != "" {
		return jsonString(name), true
	}
	return constantScalar(c.scope.evalConst(e, -1))
}

// enumName returns the name of the iota enum constant e refers to, or "".
func (c *converter) enumName(e ast.Expr) string {
	if d := c.scope.constRef(e); d != nil && d.value() != nil && d.isEnum() {
		return d.name.Name
	}
	return ""
}

// constantScalar encodes a constant as a JSON number, string or bool.
func constantScalar(v constant.Value) (scalar, bool) {
	if v == nil {
		return "", false
	}
	switch v.Kind() {
	case constant.Bool:
		return scalar(strconv.FormatBool(constant.BoolVal(v))), true
	case constant.String:
		return jsonString(constant.StringVal(v)), true
	case constant.Int:
		return scalar(v.ExactString()), true
	case constant.Float:
		if i := constant.ToInt(v); i.Kind() == constant.Int {
			return scalar(i.ExactString()), true // 2.0 is written as 2
		}
		f, _ := constant.Float64Val(v)
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return "", false
		}
		return scalar(strconv.FormatFloat(f, 'g', -1, 64)), true
	}
	return "", false
}

// markUntranslatable records e and returns its placeholder string.
func (c *converter) markUntranslatable(e ast.Expr) value {
	return jsonString(untranslatablePrefix + c.record(e))
}

func (c *converter) record(e ast.Expr) string {
	text := exprText(c.scope, e)
	c.untranslatable = append(c.untranslatable, text)
	return text
}

// gofmtStyle prints expressions the way gofmt formats them.
var gofmtStyle = printer.Config{Mode: printer.UseSpaces | printer.TabIndent, Tabwidth: 8}

// exprText prints e in gofmt style.
func exprText(sc *fileScope, e ast.Node) string {
	var buf bytes.Buffer
	if err := gofmtStyle.Fprint(&buf, sc.loader.fset, e); err != nil {
		return "<unprintable>"
	}
	return buf.String()
}
