package main

import (
	"strings"
	"testing"
)

// fakeSubGroupKAI holds what the sub-group interpreter reads from KAI: the
// constants, the TopologyConstraintInfo declaration and jobs_fake's helper
// (as in KAI d5bc503a). The constructors' bodies are not needed: they are
// modelled, not interpreted.
var fakeSubGroupKAI = map[string]string{
	"go.mod": "module example.com/kai\n",
	"pkg/scheduler/test_utils/topology.go": `package test_utils
import "example.com/kai/pkg/scheduler/api/podgroup_info/subgroup_info"
type TestTopologyBasic struct{ Name string; Jobs []*Job }
type Job struct{ RootSubGroupSet *subgroup_info.SubGroupSet }
`,
	"pkg/scheduler/api/topology_info/topology_info.go": `package topology_info
type TopologyConstraintInfo struct {
	PreferredLevel string
	RequiredLevel  string
	Topology       string

	schedulingConstraintsSignature string
}
`,
	"pkg/scheduler/api/podgroup_info/job_info.go": `package podgroup_info
const DefaultSubGroup = "default"
`,
	"pkg/scheduler/api/podgroup_info/subgroup_info/factory.go": `package subgroup_info
const RootSubGroupSetName = ""
`,
	"pkg/scheduler/test_utils/jobs_fake/jobs.go": `package jobs_fake
import (
	"example.com/kai/pkg/scheduler/api/podgroup_info"
	"example.com/kai/pkg/scheduler/api/podgroup_info/subgroup_info"
)
func DefaultSubGroup(minAvailable int32) *subgroup_info.SubGroupSet {
	subGroup := subgroup_info.NewSubGroupSet(subgroup_info.RootSubGroupSetName, nil)
	subGroup.AddPodSet(subgroup_info.NewPodSet(podgroup_info.DefaultSubGroup, minAvailable, nil))
	return subGroup
}
`,
}

const subGroupImports = `
	"k8s.io/utils/ptr"
	"example.com/kai/pkg/scheduler/api/podgroup_info/subgroup_info"
	"example.com/kai/pkg/scheduler/api/topology_info"
	"example.com/kai/pkg/scheduler/test_utils"
	"example.com/kai/pkg/scheduler/test_utils/jobs_fake"`

// convertRootSubGroupSet converts expr as a job's RootSubGroupSet and returns
// its JSON on one line.
func convertRootSubGroupSet(t *testing.T, expr string) string {
	t.Helper()
	s := convertTable(t, fakeSubGroupKAI, subGroupImports,
		`test_utils.TestTopologyBasic{Name: "t", Jobs: []*test_utils.Job{{RootSubGroupSet: `+expr+`}}}`)
	jobs, _ := fieldOf(s.topology, "Jobs").(array)
	if len(jobs) != 1 {
		t.Fatalf("Jobs = %v", fieldOf(s.topology, "Jobs"))
	}
	return compactJSON(t, fieldOf(jobs[0], "RootSubGroupSet"))
}

func TestSubGroupSets(t *testing.T) {
	const (
		noTopology = `"topology":null`
		rack       = `{"PreferredLevel":"","RequiredLevel":"rack","Topology":"t"}`
		empty      = `{"PreferredLevel":"","RequiredLevel":"","Topology":""}`
	)
	tests := []struct{ name, expr, want string }{{
		name: "KAI helper interpreted from its source",
		expr: `jobs_fake.DefaultSubGroup(3)`,
		want: `{"$subGroupSet":{"name":"",` + noTopology + `,"minSubGroup":null,` +
			`"podSets":[{"name":"default","minAvailable":3,` + noTopology + `}],"subGroupSets":[]}}`,
	}, {
		name: "constructor with a topology constraint",
		expr: `subgroup_info.NewSubGroupSet(subgroup_info.RootSubGroupSetName,
			&topology_info.TopologyConstraintInfo{Topology: "t", RequiredLevel: "rack"})`,
		want: `{"$subGroupSet":{"name":"","topology":` + rack + `,"minSubGroup":null,"podSets":[],"subGroupSets":[]}}`,
	}, {
		name: "function literal building a tree",
		expr: `func() *subgroup_info.SubGroupSet {
			root := subgroup_info.NewSubGroupSet(subgroup_info.RootSubGroupSetName, nil)
			root.SetMinSubGroup(ptr.To(int32(1)))
			child := subgroup_info.NewSubGroupSet("child", &topology_info.TopologyConstraintInfo{})
			root.AddSubGroup(child)
			child.AddPodSet(subgroup_info.NewPodSet("a", 2,
				&topology_info.TopologyConstraintInfo{RequiredLevel: "rack", Topology: "t"}))
			root.AddPodSet(subgroup_info.NewPodSet("b", 1, nil))
			return root
		}()`,
		want: `{"$subGroupSet":{"name":"",` + noTopology + `,"minSubGroup":1,` +
			`"podSets":[{"name":"b","minAvailable":1,` + noTopology + `}],` +
			`"subGroupSets":[{"name":"child","topology":` + empty + `,"minSubGroup":null,` +
			`"podSets":[{"name":"a","minAvailable":2,"topology":` + rack + `}],"subGroupSets":[]}]}}`,
	}, {
		name: "loop",
		expr: `func() *subgroup_info.SubGroupSet {
			root := subgroup_info.NewSubGroupSet("", nil)
			for i := 0; i < 2; i++ {
				root.AddPodSet(subgroup_info.NewPodSet("a", 1, nil))
			}
			return root
		}()`,
	}, {
		name: "method that is not modelled",
		expr: `func() *subgroup_info.SubGroupSet {
			root := subgroup_info.NewSubGroupSet("", nil)
			root.SetParent(nil)
			return root
		}()`,
	}, {
		name: "cycle",
		expr: `func() *subgroup_info.SubGroupSet {
			root := subgroup_info.NewSubGroupSet("", nil)
			root.AddSubGroup(root)
			return root
		}()`,
	}, {
		name: "unknown topology field",
		expr: `subgroup_info.NewSubGroupSet("", &topology_info.TopologyConstraintInfo{Level: "rack"})`,
	}, {
		name: "pod set as root",
		expr: `subgroup_info.NewPodSet("a", 1, nil)`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := convertRootSubGroupSet(t, tt.expr)
			if tt.want == "" { // untranslatable
				if !strings.HasPrefix(got, `"$expr:`) {
					t.Errorf("got %s, want a $expr: placeholder", got)
				}
				return
			}
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}
