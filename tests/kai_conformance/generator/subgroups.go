package main

import (
	"fmt"
	"go/constant"
	"math"
)

// Test tables give a job its sub-group tree (TestJobBasic.RootSubGroupSet)
// by calling constructors of KAI's
// pkg/scheduler/api/podgroup_info/subgroup_info. Their bodies fill unexported
// fields, so the generator does not interpret them: it models them here, after
// their KAI source (subgroupset.go, podset.go, subgroup_info.go):
//
//	NewSubGroupSet(name string, topologyConstraint *TopologyConstraintInfo) *SubGroupSet
//	    a set with no minSubGroup (nil), no child sets and no pod sets
//	NewPodSet(name string, minAvailable int32, topologyConstraint *TopologyConstraintInfo) *PodSet
//	(*SubGroupSet).AddSubGroup(subGroup *SubGroupSet)   appends to the child sets
//	(*SubGroupSet).AddPodSet(podSet *PodSet)            appends to the pod sets
//	(*SubGroupSet).SetMinSubGroup(minSubGroup *int32)
//
// Children keep their insertion order, as KAI's slices do. The parent
// pointers that the Add methods set are implied by the nesting of the JSON.
const subGroupInfoPackage = "/pkg/scheduler/api/podgroup_info/subgroup_info"

// subGroupSet models *subgroup_info.SubGroupSet. Like the Go value it is
// shared by pointer, so a set changed after being added to its parent is
// seen changed in the parent too.
type subGroupSet struct {
	name         string
	topology     value // topologyConstraint or jsonNull
	minSubGroup  value // number or jsonNull
	subGroupSets []*subGroupSet
	podSets      []*podSet
}

// podSet models *subgroup_info.PodSet.
type podSet struct {
	name         string
	minAvailable int64
	topology     value // topologyConstraint or jsonNull
}

// subGroupConstructor builds the value of a subgroup_info function call from
// its evaluated arguments, or reports false for other functions and for
// arguments of the wrong kind.
func subGroupConstructor(name string, args []interface{}) (interface{}, bool) {
	switch {
	case name == "NewSubGroupSet" && len(args) == 2:
		setName, ok1 := stringArg(args[0])
		topology, ok2 := topologyArg(args[1])
		set := &subGroupSet{name: setName, topology: topology, minSubGroup: jsonNull}
		return set, ok1 && ok2
	case name == "NewPodSet" && len(args) == 3:
		podSetName, ok1 := stringArg(args[0])
		minAvailable, ok2 := int32Arg(args[1])
		topology, ok3 := topologyArg(args[2])
		return &podSet{podSetName, minAvailable, topology}, ok1 && ok2 && ok3
	}
	return nil, false
}

// invoke applies a method of *SubGroupSet that takes one argument.
func (s *subGroupSet) invoke(method string, arg interface{}) bool {
	switch method {
	case "AddPodSet":
		p, ok := arg.(*podSet)
		if ok {
			s.podSets = append(s.podSets, p)
		}
		return ok
	case "AddSubGroup":
		g, ok := arg.(*subGroupSet)
		if !ok || g.reaches(s) { // a cycle could not be written as JSON
			return false
		}
		s.subGroupSets = append(s.subGroupSets, g)
		return true
	case "SetMinSubGroup":
		return s.setMinSubGroup(arg)
	}
	return false
}

// setMinSubGroup takes a *int32: nil, or a pointer helper's argument (which
// the interpreter evaluates to the pointee).
func (s *subGroupSet) setMinSubGroup(arg interface{}) bool {
	if _, isNil := arg.(nilPointer); isNil {
		s.minSubGroup = jsonNull
		return true
	}
	n, ok := int32Arg(arg)
	if ok {
		s.minSubGroup = scalar(fmt.Sprint(n))
	}
	return ok
}

// reaches reports whether target is s or one of its descendants.
func (s *subGroupSet) reaches(target *subGroupSet) bool {
	if s == target {
		return true
	}
	for _, g := range s.subGroupSets {
		if g.reaches(target) {
			return true
		}
	}
	return false
}

// subGroupSetKey wraps the root of a tree in the JSON, telling a modelled
// sub-group set apart from a converted struct literal.
const subGroupSetKey = "$subGroupSet"

// rootJSON writes a tree as {"$subGroupSet": {...}}.
func (s *subGroupSet) rootJSON() value {
	return object{{subGroupSetKey, s.toJSON()}}
}

func (s *subGroupSet) toJSON() value {
	podSets := array{}
	for _, p := range s.podSets {
		podSets = append(podSets, p.toJSON())
	}
	subGroupSets := array{}
	for _, g := range s.subGroupSets {
		subGroupSets = append(subGroupSets, g.toJSON())
	}
	return object{
		{"name", jsonString(s.name)},
		{"topology", s.topology},
		{"minSubGroup", s.minSubGroup},
		{"podSets", podSets},
		{"subGroupSets", subGroupSets},
	}
}

func (p *podSet) toJSON() value {
	return object{
		{"name", jsonString(p.name)},
		{"minAvailable", scalar(fmt.Sprint(p.minAvailable))},
		{"topology", p.topology},
	}
}

// stringArg accepts a string constant.
func stringArg(arg interface{}) (string, bool) {
	v, ok := arg.(constant.Value)
	if !ok || v.Kind() != constant.String {
		return "", false
	}
	return constant.StringVal(v), true
}

// int32Arg accepts an integer constant representable as an int32.
func int32Arg(arg interface{}) (int64, bool) {
	v, ok := arg.(constant.Value)
	if !ok {
		return 0, false
	}
	n, exact := constant.Int64Val(constant.ToInt(v))
	return n, exact && n >= math.MinInt32 && n <= math.MaxInt32
}

// topologyArg accepts a *TopologyConstraintInfo: nil or a modelled literal.
func topologyArg(arg interface{}) (value, bool) {
	switch t := arg.(type) {
	case nilPointer:
		return jsonNull, true
	case topologyConstraint:
		return object(t), true
	}
	return nil, false
}
