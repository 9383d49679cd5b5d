// A v1 Pod and a v1 Node as `kubectl get -o json` prints them, with the fields kube-scheduler sends
// that fracpack does not read (managedFields, owner references, volumes, images, node info, ...).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace fracpack::test {

inline nlohmann::json kube_pod(const std::string& name, const std::string& annotations_json = "{}") {
  std::string text = R"json({
  "apiVersion": "v1", "kind": "Pod",
  "metadata": {
    "name": "NAME", "namespace": "team-a", "uid": "6b1f0f7e-NAME",
    "creationTimestamp": "2026-11-29T21:51:42Z", "generateName": "chat-7b-",
    "labels": {"app": "chat", "kai.scheduler/queue": "team-a", "pod-template-hash": "5d9c7b8f6"},
    "annotations": ANNOTATIONS,
    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "chat-7b-5d9c7b8f6",
                         "uid": "a1b2c3", "controller": true, "blockOwnerDeletion": true}],
    "managedFields": [{"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
                       "time": "2026-11-29T21:51:42Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {}}}],
    "resourceVersion": "123456"
  },
  "spec": {
    "schedulerName": "kai-scheduler", "priorityClassName": "inference", "priority": 125,
    "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
    "serviceAccountName": "default", "enableServiceLinks": true, "preemptionPolicy": "PreemptLowerPriority",
    "containers": [{
      "name": "server", "image": "nvcr.io/nvidia/tritonserver:24.05-py3", "imagePullPolicy": "IfNotPresent",
      "args": ["--model-repository=/models"], "ports": [{"containerPort": 8000, "protocol": "TCP"}],
      "env": [{"name": "CUDA_VISIBLE_DEVICES", "value": "0"}],
      "resources": {"requests": {"cpu": "2", "memory": "8Gi"}, "limits": {"memory": "8Gi"}},
      "volumeMounts": [{"name": "kube-api-access-x", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}],
      "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"
    }],
    "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
    "volumes": [{"name": "kube-api-access-x", "projected": {"defaultMode": 420, "sources": [{"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}]}}]
  },
  "status": {"phase": "Pending", "qosClass": "Burstable",
             "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "lastTransitionTime": "2026-11-29T21:51:42Z"}]}
})json";
  text.replace(text.find("ANNOTATIONS"), 11, annotations_json);
  for (std::size_t at; (at = text.find("NAME")) != std::string::npos;) text.replace(at, 4, name);
  return nlohmann::json::parse(text);
}

inline nlohmann::json kube_node(const std::string& name, int gpus, const std::string& memory_mib) {
  std::string text = R"json({
  "apiVersion": "v1", "kind": "Node",
  "metadata": {
    "name": "NAME", "uid": "node-uid-NAME", "resourceVersion": "998877", "creationTimestamp": "2026-01-01T00:00:00Z",
    "labels": {"kubernetes.io/hostname": "NAME", "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
               "nvidia.com/gpu.count": "GPUS", "nvidia.com/gpu.memory": "MEMORY", "nvidia.com/gpu.product": "NVIDIA-H200",
               "node.kubernetes.io/instance-type": "p5e.48xlarge", "topology.kubernetes.io/zone": "us-east-1a"},
    "annotations": {"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true"}
  },
  "spec": {"podCIDR": "10.244.1.0/24", "providerID": "aws:///us-east-1a/i-0abc"},
  "status": {
    "addresses": [{"type": "InternalIP", "address": "10.0.1.17"}, {"type": "Hostname", "address": "NAME"}],
    "allocatable": {"cpu": "191500m", "ephemeral-storage": "3426578560Ki", "hugepages-1Gi": "0", "hugepages-2Mi": "0",
                    "memory": "2097152Mi", "nvidia.com/gpu": "GPUS", "pods": "110"},
    "capacity": {"cpu": "192", "ephemeral-storage": "3717922084Ki", "memory": "2113928Mi", "nvidia.com/gpu": "GPUS", "pods": "110"},
    "conditions": [
      {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory"},
      {"type": "DiskPressure", "status": "False", "reason": "KubeletHasNoDiskPressure"},
      {"type": "PIDPressure", "status": "False", "reason": "KubeletHasSufficientPID"},
      {"type": "Ready", "status": "True", "reason": "KubeletReady"},
      {"type": "gpu-fractioning.nvidia.com/Ready", "status": "True", "reason": "OperatorReady"}],
    "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
    "images": [{"names": ["nvcr.io/nvidia/tritonserver:24.05-py3"], "sizeBytes": 14567891234}],
    "nodeInfo": {"architecture": "amd64", "containerRuntimeVersion": "containerd://1.7.13", "kernelVersion": "6.1.0-18-cloud-amd64",
                 "kubeletVersion": "v1.30.2", "operatingSystem": "linux", "osImage": "Debian GNU/Linux 12 (bookworm)"}
  }
})json";
  for (std::size_t at; (at = text.find("NAME")) != std::string::npos;) text.replace(at, 4, name);
  for (std::size_t at; (at = text.find("GPUS")) != std::string::npos;) text.replace(at, 4, std::to_string(gpus));
  for (std::size_t at; (at = text.find("MEMORY")) != std::string::npos;) text.replace(at, 6, memory_mib);
  return nlohmann::json::parse(text);
}

}  // namespace fracpack::test
