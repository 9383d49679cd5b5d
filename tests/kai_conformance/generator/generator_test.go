package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// fakeKAI is a miniature KAI checkout exercising the conversion rules.
var fakeKAI = map[string]string{
	"go.mod": "module example.com/kai\n",
	"pkg/scheduler/test_utils/topology.go": `package test_utils
type TestTopologyBasic struct{ Name string; Jobs []*Job; Nodes map[string]Node }
type Job struct{ Priority int; State Status; Quota *float64; Memory string }
type Node struct{ GPUs float64 }
type Status int
func Ptr(x float64) *float64 { return &x }
`,
	"pkg/scheduler/status/status.go": `package status
import tu "example.com/kai/pkg/scheduler/test_utils"
const (
	Pending tu.Status = 1 << iota
	Running
)
const Train = 50
`,
	"pkg/scheduler/actions/demo/demo_test.go": `package demo_test
import (
	"time"
	"k8s.io/apimachinery/pkg/api/resource"
	"example.com/kai/pkg/scheduler/status"
	"example.com/kai/pkg/scheduler/test_utils"
)
type meta struct{ test_utils.TestTopologyBasic; Rounds int; Delay time.Duration }
const local = "node" + "0"
func tables(n int) []meta {
	return []meta{{
		TestTopologyBasic: test_utils.TestTopologyBasic{
			Name: "demo",
			Jobs: []*test_utils.Job{{
				Priority: status.Train - 1,
				State:    status.Running,
				Quota:    test_utils.Ptr(0.5),
				Memory:   resource.MustParse("10Gi"),
			}, {Priority: n}},
			Nodes: map[string]test_utils.Node{local: {GPUs: 2.0}},
		},
		Rounds: 3,
		Delay:  2 * time.Second,
	}}
}
`,
}

func writeTree(t *testing.T, files map[string]string) string {
	root := t.TempDir()
	for name, text := range files {
		path := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestConvertFile(t *testing.T) {
	root := writeTree(t, fakeKAI)
	doc, err := convertFile(newLoader(root), "pkg/scheduler/actions/demo/demo_test.go")
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]interface{}
	if err := json.Unmarshal(encodeJSON(doc.toJSON("abc")), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]interface{}{
		"kai_commit": "abc",
		"source":     "pkg/scheduler/actions/demo/demo_test.go",
		"action":     "demo",
		"scenarios": []interface{}{map[string]interface{}{
			"index": 0.0, "line": 12.0, "function": "tables", "name": "demo",
			"topology": map[string]interface{}{
				"Name": "demo",
				"Jobs": []interface{}{
					map[string]interface{}{
						"Priority": 49.0, "State": "Running", "Quota": 0.5,
						"Memory": "10Gi",
					},
					map[string]interface{}{"Priority": "$expr:n"},
				},
				"Nodes": map[string]interface{}{"node0": map[string]interface{}{"GPUs": 2.0}},
			},
			"metadata":       map[string]interface{}{"Rounds": 3.0, "Delay": 2e9},
			"untranslatable": []interface{}{"n"},
		}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
}

func TestEncodeJSONKeepsKeyOrder(t *testing.T) {
	got := string(encodeJSON(object{{"b", array{}}, {"a", array{scalar("1"), jsonString("<x>")}}}))
	want := "{\n  \"b\": [],\n  \"a\": [\n    1,\n    \"<x>\"\n  ]\n}\n"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// convertTable writes files plus a test file holding `var table = <literal>`
// and returns the single scenario converted from it.
func convertTable(t *testing.T, files map[string]string, imports, literal string) scenario {
	t.Helper()
	tree := map[string]string{}
	for name, text := range files {
		tree[name] = text
	}
	const source = "pkg/scheduler/actions/demo/demo_test.go"
	tree[source] = "package demo_test\nimport (\n" + imports + "\n)\nvar table = " + literal + "\n"
	doc, err := convertFile(newLoader(writeTree(t, tree)), source)
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.scenarios) != 1 {
		t.Fatalf("got %d scenarios, want 1", len(doc.scenarios))
	}
	return doc.scenarios[0]
}

// compactJSON encodes v on one line, keeping the key order.
func compactJSON(t *testing.T, v value) string {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, encodeJSON(v)); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}
