package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"go/ast"
	"go/constant"
)

// KAI's pkg/scheduler/actions/allocate/allocateTopology_test.go builds some
// tables' Nodes with a helper that loops, which the interpreter does not
// handle:
//
//	buildEvenlyDistributedTopologyNodes(numZones, numSpinesPerZone,
//		numRacksPerSpine, numNodesPerRack, gpusPerNode int) map[string]nodes_fake.TestNodeBasic
//
// It is a pure function of its integer arguments, so evenlyDistributedNodes
// below ports it. The port is used only while the helper's source is the one
// it was written from (KAI d5bc503a): evenlyDistributedNodesSHA256
// fingerprints the helper's signature and body as gofmt prints them. When
// KAI edits the helper, calls become "$expr:" again until the port and the
// fingerprint are updated.
const (
	evenlyDistributedNodesFunc   = "buildEvenlyDistributedTopologyNodes"
	evenlyDistributedNodesSHA256 = "c9f92dbc5fbd392e8e254a75ef038ce9a93bb7d5495d446eadcbfed64b286d13"
	// maxPortedNodes keeps a typo in a test table from exhausting memory.
	maxPortedNodes = 10000
)

// evenlyDistributedNodesCall translates a call of the KAI helper with
// constant arguments.
func (c *converter) evenlyDistributedNodesCall(call *ast.CallExpr) (value, bool) {
	_, name, pkg := c.scope.callee(call.Fun)
	fn, ok := pkg.declaredFunc(name)
	if name != evenlyDistributedNodesFunc || !ok || funcFingerprint(fn) != evenlyDistributedNodesSHA256 {
		return nil, false
	}
	args, ok := c.intArgs(call.Args)
	if !ok || len(args) != 5 {
		return nil, false
	}
	return evenlyDistributedNodes(args[0], args[1], args[2], args[3], args[4])
}

// funcFingerprint is the SHA-256 of a function's signature and body as gofmt
// prints them, without comments.
func funcFingerprint(fn funcRef) string {
	text := exprText(fn.scope, fn.decl.Type) + exprText(fn.scope, fn.decl.Body)
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:])
}

// intArgs evaluates arguments that are integer constants.
func (c *converter) intArgs(args []ast.Expr) ([]int64, bool) {
	ints := make([]int64, len(args))
	for i, arg := range args {
		v := c.scope.evalConst(arg, -1)
		if v == nil || v.Kind() != constant.Int {
			return nil, false
		}
		n, exact := constant.Int64Val(v)
		if !exact {
			return nil, false
		}
		ints[i] = n
	}
	return ints, true
}

// evenlyDistributedNodes ports the KAI helper. Nodes are numbered node0,
// node1, ... across all racks; zone, spine and rack labels are numbered from
// 1 across the whole cluster. The map is written in the order the helper
// inserts into it (node number order), each node as the helper's literal
// nodes_fake.TestNodeBasic{GPUs: ..., Labels: {zone, spine, rack}} would be.
func evenlyDistributedNodes(zones, spinesPerZone, racksPerSpine, nodesPerRack, gpusPerNode int64) (value, bool) {
	for _, n := range []int64{zones, spinesPerZone, racksPerSpine, nodesPerRack} {
		if n < 0 || n > maxPortedNodes {
			return nil, false
		}
	}
	if zones*spinesPerZone*racksPerSpine*nodesPerRack > maxPortedNodes {
		return nil, false
	}
	nodes := object{}
	for z := int64(1); z <= zones; z++ {
		zone := fmt.Sprintf("zone%d", z)
		for sp := int64(1); sp <= spinesPerZone; sp++ {
			spine := fmt.Sprintf("spine%d", sp+(z-1)*spinesPerZone)
			for r := int64(1); r <= racksPerSpine; r++ {
				rack := fmt.Sprintf("rack%d", r+(sp-1)*racksPerSpine+(z-1)*spinesPerZone*racksPerSpine)
				for n := int64(1); n <= nodesPerRack; n++ {
					nodes = append(nodes, field{fmt.Sprintf("node%d", len(nodes)), object{
						{"GPUs", scalar(fmt.Sprint(gpusPerNode))},
						{"Labels", object{
							{"k8s.io/zone", jsonString(zone)},
							{"k8s.io/spine", jsonString(spine)},
							{"k8s.io/rack", jsonString(rack)},
						}},
					}})
				}
			}
		}
	}
	return nodes, true
}
