// Apply a GPU node, Filter a pod asking for a 16Gi fraction, Bind it where Filter chose, print the
// Snapshot, and show how a refusal reads. Usage: example HOST:PORT (docs/grpc.md).
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"fracpack/client"
	pb "fracpack/v1"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/status"
)

// A v1 Node and a v1 Pod as the API server serves them (JSON); only the fields fracpack reads.
const node = `{"apiVersion": "v1", "kind": "Node",
  "metadata": {"name": "h200-01", "labels": {
    "nvidia.com/gpu.product": "NVIDIA-H200", "nvidia.com/gpu.count": "2", "nvidia.com/gpu.memory": "143771"}},
  "status": {
    "allocatable": {"cpu": "192", "memory": "2048Gi", "pods": "110", "nvidia.com/gpu": "2"},
    "conditions": [{"type": "Ready", "status": "True"}, {"type": "gpu-fractioning.nvidia.com/Ready", "status": "True"}]}}`

const pod = `{"apiVersion": "v1", "kind": "Pod",
  "metadata": {"name": "NAME", "namespace": "team-a", "uid": "4f6c-NAME", "annotations": {ANNOTATIONS}},
  "spec": {"containers": [{"name": "server", "image": "nvcr.io/nvidia/tritonserver:24.05-py3"}]}}`

func podJSON(name, annotations string) []byte {
	return []byte(strings.NewReplacer("NAME", name, "ANNOTATIONS", annotations).Replace(pod))
}

// must stops the example at the first refused call.
func must[T any](answer T, err error) T {
	if err != nil {
		log.Fatal(err)
	}
	return answer
}

func main() {
	if len(os.Args) != 2 {
		log.Fatal("usage: example HOST:PORT")
	}
	c := must(client.Dial(os.Args[1], 10*time.Second))
	defer c.Close()
	ctx := context.Background()

	must(c.Cluster.Apply(ctx, &pb.ApplyRequest{Objects: [][]byte{[]byte(node)}}))
	fmt.Println("applied: h200-01")

	// AllNodes: every node fracpack knows, the best first; MaxNodes 1: only the best.
	pod := podJSON("chat-0", `"nvidia.com/container.server.gpu-memory.request": "16Gi"`)
	found := must(c.Extender.Filter(ctx, &pb.ExtenderArgs{Pod: pod, AllNodes: true, MaxNodes: 1}))
	if len(found.NodeNames) == 0 {
		log.Fatalf("no node fits: %v %v", found.FailedNodes, found.FailedAndUnresolvableNodes)
	}
	fmt.Println("filter:", found.NodeNames[0])

	bound := must(c.Extender.Bind(ctx, &pb.ExtenderBindingArgs{
		PodNamespace: "team-a", PodName: "chat-0", PodUid: "4f6c-chat-0", Node: found.NodeNames[0]}))
	a := bound.Allocation
	fmt.Printf("bind: %s node=%s gpus=%v mib=%v mode=%s\n", a.Pod, a.Node, a.GpuIndices, a.GpuMemoryMib, a.ComputeMode)

	snapshot := must(c.Cluster.Snapshot(ctx, &pb.SnapshotRequest{}))
	for _, n := range snapshot.Nodes {
		for _, g := range n.Gpus {
			fmt.Printf("gpu: %s/%d %s used=%d/%dMiB holders=%v\n", n.Name, g.Index, g.State, g.UsedMib, g.MemoryMib, g.Holders)
		}
	}
	for _, b := range snapshot.Bindings {
		fmt.Printf("binding: %s node=%s gpus=%v standing=%s\n", b.Pod, b.Node, b.GpuIndices, b.Standing)
	}

	// A refusal is a gRPC status with typed details: here a fraction above 1.
	_, err := c.Extender.Filter(ctx, &pb.ExtenderArgs{Pod: podJSON("bad-0", `"gpu-fraction": "1.5"`), AllNodes: true})
	fmt.Printf("refused: %s: %s\n", status.Code(err), status.Convert(err).Message())
	for _, d := range client.Details(err) {
		if bad, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range bad.FieldViolations {
				fmt.Printf("detail: google.rpc.BadRequest field=%s: %s\n", v.Field, v.Description)
			}
		}
	}
}
