package main

import "testing"

func TestMakeEmptyCollections(t *testing.T) {
	files := map[string]string{
		"go.mod": "module example.com/kai\n",
		"pkg/scheduler/test_utils/topology.go": `package test_utils
type TestTopologyBasic struct{ Jobs []*Job; Results map[string]int; Counts []int }
type Job struct{}
`,
	}
	s := convertTable(t, files, `"example.com/kai/pkg/scheduler/test_utils"`,
		`test_utils.TestTopologyBasic{
			Jobs:    make([]*test_utils.Job, 0),
			Results: make(map[string]int, 4),
			Counts:  make([]int, 2),
		}`)
	got := compactJSON(t, s.topology)
	want := `{"Jobs":[],"Results":{},"Counts":"$expr:make([]int, 2)"}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
