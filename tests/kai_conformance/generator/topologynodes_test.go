package main

import "testing"

// kaiEvenlyDistributedNodes is the helper as KAI d5bc503a declares it in
// pkg/scheduler/actions/allocate/allocateTopology_test.go.
const kaiEvenlyDistributedNodes = `func buildEvenlyDistributedTopologyNodes(numZones, numSpinesPerZone, numRacksPerSpine, numNodesPerRack, gpusPerNode int) map[string]nodes_fake.TestNodeBasic {
	nodes := make(map[string]nodes_fake.TestNodeBasic)
	nodeID := 0
	for z := 1; z <= numZones; z++ {
		zoneLabel := fmt.Sprintf("zone%d", z)
		for sp := 1; sp <= numSpinesPerZone; sp++ {
			spineLabel := fmt.Sprintf("spine%d", sp+(z-1)*numSpinesPerZone)
			for r := 1; r <= numRacksPerSpine; r++ {
				rackLabel := fmt.Sprintf("rack%d", r+(sp-1)*numRacksPerSpine+(z-1)*numSpinesPerZone*numRacksPerSpine)
				for n := 1; n <= numNodesPerRack; n++ {
					nodeName := fmt.Sprintf("node%d", nodeID)
					nodes[nodeName] = nodes_fake.TestNodeBasic{
						GPUs: gpusPerNode,
						Labels: map[string]string{
							"k8s.io/zone":  zoneLabel,
							"k8s.io/spine": spineLabel,
							"k8s.io/rack":  rackLabel,
						},
					}
					nodeID++
				}
			}
		}
	}

	return nodes
}
`

// convertNodes converts `Nodes: call` next to the given helper declaration.
func convertNodes(t *testing.T, helper, call string) string {
	t.Helper()
	files := map[string]string{
		"go.mod": "module example.com/kai\n",
		"pkg/scheduler/test_utils/topology.go": `package test_utils
type TestTopologyBasic struct{ Nodes map[string]Node }
type Node struct{ GPUs int; Labels map[string]string }
`,
	}
	s := convertTable(t, files, `"fmt"
	"example.com/kai/pkg/scheduler/test_utils"
	"example.com/kai/pkg/scheduler/test_utils/nodes_fake"`,
		"test_utils.TestTopologyBasic{Nodes: "+call+"}\n"+helper)
	return compactJSON(t, fieldOf(s.topology, "Nodes"))
}

func TestEvenlyDistributedNodes(t *testing.T) {
	got := convertNodes(t, kaiEvenlyDistributedNodes, "buildEvenlyDistributedTopologyNodes(2, 1, 1, 1, 3)")
	want := `{"node0":{"GPUs":3,"Labels":{"k8s.io/zone":"zone1","k8s.io/spine":"spine1","k8s.io/rack":"rack1"}},` +
		`"node1":{"GPUs":3,"Labels":{"k8s.io/zone":"zone2","k8s.io/spine":"spine2","k8s.io/rack":"rack2"}}}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestEvenlyDistributedNodesOfAnotherHelper(t *testing.T) {
	edited := kaiEvenlyDistributedNodes[:len(kaiEvenlyDistributedNodes)-len("\treturn nodes\n}\n")] +
		"\tnodes[\"extra\"] = nodes_fake.TestNodeBasic{}\n\treturn nodes\n}\n"
	got := convertNodes(t, edited, "buildEvenlyDistributedTopologyNodes(1, 1, 1, 1, 1)")
	if want := `"$expr:buildEvenlyDistributedTopologyNodes(1, 1, 1, 1, 1)"`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestEvenlyDistributedNodesPort(t *testing.T) {
	nodes, ok := evenlyDistributedNodes(1, 2, 2, 2, 1)
	if !ok {
		t.Fatal("not ported")
	}
	obj := nodes.(object)
	if len(obj) != 8 || obj[7].key != "node7" {
		t.Fatalf("got %d nodes, last %q", len(obj), obj[len(obj)-1].key)
	}
	// node7 is the second node of the second spine's second rack: rack4.
	got := compactJSON(t, obj[7].val)
	want := `{"GPUs":1,"Labels":{"k8s.io/zone":"zone1","k8s.io/spine":"spine2","k8s.io/rack":"rack4"}}`
	if got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if _, ok := evenlyDistributedNodes(100, 100, 100, 100, 1); ok {
		t.Error("ported 10^8 nodes")
	}
}
