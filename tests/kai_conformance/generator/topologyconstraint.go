package main

import "go/ast"

// A sub-group or pod set may carry a topology constraint, written in test
// tables as &topology_info.TopologyConstraintInfo{Topology: ..., RequiredLevel:
// ...}. Its JSON is an object with every exported field of KAI's struct, in
// declaration order, unset fields as "" (Go's zero value):
//
//	{"PreferredLevel": "", "RequiredLevel": "k8s.io/rack", "Topology": "cluster-topology"}
//
// The field list is read from KAI's source, so a new field shows up by
// itself; a field that is not a string makes such literals untranslatable.
const (
	topologyInfoPackage    = "/pkg/scheduler/api/topology_info"
	topologyConstraintType = "TopologyConstraintInfo"
)

// topologyConstraint is a modelled *TopologyConstraintInfo, already as JSON.
type topologyConstraint object

// topologyConstraint evaluates &topology_info.TopologyConstraintInfo{...}
// whose fields are set to string constants.
func (f *frame) topologyConstraint(lit *ast.CompositeLit) (interface{}, bool) {
	if !f.isTopologyConstraintType(lit.Type) {
		return nil, false
	}
	names, ok := f.scope.loader.topologyConstraintFields()
	if !ok {
		return nil, false
	}
	set := map[string]string{}
	for _, elt := range lit.Elts {
		key, val, ok := f.stringField(elt)
		if !ok || !contains(names, key) {
			return nil, false
		}
		set[key] = val
	}
	obj := object{}
	for _, name := range names {
		obj = append(obj, field{name, jsonString(set[name])})
	}
	return topologyConstraint(obj), true
}

// isTopologyConstraintType reports whether t is topology_info.TopologyConstraintInfo.
func (f *frame) isTopologyConstraintType(t ast.Expr) bool {
	sel, ok := t.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && x.Obj == nil && sel.Sel.Name == topologyConstraintType &&
		f.scope.importPathOf(x.Name) == f.scope.loader.module+topologyInfoPackage
}

// stringField evaluates a `Field: "constant"` element of a struct literal.
func (f *frame) stringField(elt ast.Expr) (key, val string, ok bool) {
	kv, ok := elt.(*ast.KeyValueExpr)
	if !ok {
		return "", "", false
	}
	id, ok := kv.Key.(*ast.Ident)
	if !ok {
		return "", "", false
	}
	v, ok := f.eval(kv.Value)
	if !ok {
		return "", "", false
	}
	val, ok = stringArg(v)
	return id.Name, val, ok
}

// topologyConstraintFields lists the exported fields of KAI's
// TopologyConstraintInfo in declaration order; all must be strings and none
// embedded.
func (l *loader) topologyConstraintFields() ([]string, bool) {
	pkg := l.importedPackage(l.module + topologyInfoPackage)
	if pkg == nil {
		return nil, false
	}
	st, ok := pkg.types[topologyConstraintType].expr.(*ast.StructType)
	if !ok {
		return nil, false
	}
	var names []string
	for _, fld := range st.Fields.List {
		if len(fld.Names) == 0 { // an embedded struct's fields are not modelled
			return nil, false
		}
		for _, name := range fld.Names {
			if !name.IsExported() {
				continue
			}
			if !isIdentNamed(fld.Type, "string") {
				return nil, false
			}
			names = append(names, name.Name)
		}
	}
	return names, true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
