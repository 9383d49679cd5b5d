"""Apply a GPU node, Filter a pod asking for a 16Gi fraction, Bind it where Filter chose, print the
Snapshot, and show how a refusal reads.
Usage: PYTHONPATH=OUT/python /usr/bin/python3 OUT/python/example.py HOST:PORT   (docs/grpc.md)
"""
import json
import sys

import grpc

from fracpack_client import cluster_pb2, connect, error_details, extender_pb2, types_pb2

# A v1 Node and a v1 Pod as the API server serves them (JSON); only the fields fracpack reads.
NODE = {
    "apiVersion": "v1", "kind": "Node",
    "metadata": {"name": "h200-01", "labels": {
        "nvidia.com/gpu.product": "NVIDIA-H200", "nvidia.com/gpu.count": "2", "nvidia.com/gpu.memory": "143771"}},
    "status": {
        "allocatable": {"cpu": "192", "memory": "2048Gi", "pods": "110", "nvidia.com/gpu": "2"},
        "conditions": [{"type": "Ready", "status": "True"},
                       {"type": "gpu-fractioning.nvidia.com/Ready", "status": "True"}]}}
POD = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "chat-0", "namespace": "team-a", "uid": "4f6c-chat-0",
                 "annotations": {"nvidia.com/container.server.gpu-memory.request": "16Gi"}},
    "spec": {"containers": [{"name": "server", "image": "nvcr.io/nvidia/tritonserver:24.05-py3"}]}}


def seq(values):
    return "[" + " ".join(str(v) for v in values) + "]"  # as Go prints a slice


def main(target):
    with connect(target) as client:
        client.cluster.Apply(cluster_pb2.ApplyRequest(objects=[json.dumps(NODE).encode()]))
        print("applied:", NODE["metadata"]["name"])

        # all_nodes: every node fracpack knows, the best first; max_nodes=1: only the best.
        pod = json.dumps(POD).encode()
        found = client.extender.Filter(extender_pb2.ExtenderArgs(pod=pod, all_nodes=True, max_nodes=1))
        if not found.node_names:
            sys.exit(f"no node fits: {dict(found.failed_nodes)} {dict(found.failed_and_unresolvable_nodes)}")
        node = found.node_names[0]
        print("filter:", node)

        meta = POD["metadata"]
        bound = client.extender.Bind(extender_pb2.ExtenderBindingArgs(
            pod_namespace=meta["namespace"], pod_name=meta["name"], pod_uid=meta["uid"], node=node))
        a = bound.allocation
        print(f"bind: {a.pod} node={a.node} gpus={seq(a.gpu_indices)} mib={seq(a.gpu_memory_mib)}"
              f" mode={types_pb2.ComputeMode.Name(a.compute_mode)}")

        snapshot = client.cluster.Snapshot(cluster_pb2.SnapshotRequest())
        for n in snapshot.nodes:
            for g in n.gpus:
                print(f"gpu: {n.name}/{g.index} {types_pb2.GpuState.Name(g.state)}"
                      f" used={g.used_mib}/{g.memory_mib}MiB holders={seq(g.holders)}")
        for b in snapshot.bindings:
            print(f"binding: {b.pod} node={b.node} gpus={seq(b.gpu_indices)} standing={b.standing}")

        # A refusal is a gRPC status with typed details: here a fraction above 1.
        bad = dict(POD, metadata=dict(meta, name="bad-0", annotations={"gpu-fraction": "1.5"}))
        try:
            client.extender.Filter(extender_pb2.ExtenderArgs(pod=json.dumps(bad).encode(), all_nodes=True))
            sys.exit("the bad pod was not refused")
        except grpc.RpcError as error:
            print(f"refused: {error.code().name}: {error.details()}")
            for detail in error_details(error):
                for v in getattr(detail, "field_violations", []):
                    print(f"detail: {detail.DESCRIPTOR.full_name} field={v.field}: {v.description}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: example.py HOST:PORT")
    main(sys.argv[1])
