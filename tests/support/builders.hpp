// Builders for v1 Node and Pod objects as kubectl prints them, and for clusters built from them.
// Tests go through the real decoders, so every test also exercises decoding.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "fracpack/binpack/cluster_state.hpp"
#include "fracpack/k8s/decode.hpp"
#include "fracpack/binpack/ledger.hpp"
#include "fracpack/binpack/fragmentation.hpp"
#include "fracpack/binpack/policy.hpp"
#include "fracpack/binpack/scheduler.hpp"

namespace fracpack::test {

using nlohmann::json;

/// A v1 Node. Defaults: ready, 64 CPUs, 512Gi, 110 pods, no GPUs.
struct NodeBuilder {
  json obj;

  explicit NodeBuilder(std::string name) {
    obj = {{"apiVersion", "v1"},
           {"kind", "Node"},
           {"metadata", {{"name", name}, {"labels", {{"kubernetes.io/hostname", name}}}}},
           {"spec", json::object()},
           {"status",
            {{"allocatable", {{"cpu", "64"}, {"memory", "512Gi"}, {"pods", "110"}}},
             {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
  }
  /// `count` GPUs labelled with `memory_mib` each (label nvidia.com/gpu.memory).
  NodeBuilder& gpus(int count, std::int64_t memory_mib) {
    label("nvidia.com/gpu.count", std::to_string(count));
    if (memory_mib > 0) label("nvidia.com/gpu.memory", std::to_string(memory_mib));
    return allocatable("nvidia.com/gpu", std::to_string(count));
  }
  /// The gpu-fractioning operator's condition (NvFractions node).
  NodeBuilder& fractions(bool ready = true) {
    obj["status"]["conditions"].push_back(
        {{"type", "gpu-fractioning.nvidia.com/Ready"}, {"status", ready ? "True" : "False"}});
    return *this;
  }
  NodeBuilder& replicas(int n, const std::string& strategy) {
    label("nvidia.com/gpu.replicas", std::to_string(n));
    label("nvidia.com/gpu.sharing-strategy", strategy);
    const int physical = std::stoi(obj["metadata"]["labels"]["nvidia.com/gpu.count"].get<std::string>());
    return allocatable("nvidia.com/gpu", std::to_string(physical * n));
  }
  NodeBuilder& label(const std::string& k, const std::string& v) {
    obj["metadata"]["labels"][k] = v;
    return *this;
  }
  NodeBuilder& annotation(const std::string& k, const std::string& v) {
    obj["metadata"]["annotations"][k] = v;
    return *this;
  }
  NodeBuilder& allocatable(const std::string& k, const std::string& v) {
    obj["status"]["allocatable"][k] = v;
    return *this;
  }
  NodeBuilder& not_ready() {
    obj["status"]["conditions"][0]["status"] = "False";
    return *this;
  }
  NodeBuilder& cordoned() {
    obj["spec"]["unschedulable"] = true;
    return *this;
  }
  NodeSpec spec() const {
    auto n = k8s::decode_node(obj, DecodeConfig{});
    REQUIRE_MESSAGE(n.is_ok(), n.status().message());
    return *n;
  }
};

/// An NvFractions node (fractioning Ready) with `gpus` GPUs of `mib` each.
inline NodeBuilder nvf(const std::string& name, int gpus, std::int64_t mib) {
  NodeBuilder b(name);
  b.gpus(gpus, mib).fractions();
  return b;
}

/// A v1 Pod with one container "main" asking for 1 CPU and 1Gi.
struct PodBuilder {
  json obj;

  explicit PodBuilder(std::string name, std::string ns = "default") {
    obj = {{"apiVersion", "v1"},
           {"kind", "Pod"},
           {"metadata", {{"name", name}, {"namespace", ns}, {"uid", "uid-" + name}}},
           {"spec",
            {{"containers",
              json::array({{{"name", "main"},
                            {"image", "busybox"},
                            {"resources", {{"requests", {{"cpu", "1"}, {"memory", "1Gi"}}}}}}})}}}};
  }
  PodBuilder& annotation(const std::string& k, const std::string& v) {
    obj["metadata"]["annotations"][k] = v;
    return *this;
  }
  PodBuilder& label(const std::string& k, const std::string& v) {
    obj["metadata"]["labels"][k] = v;
    return *this;
  }
  PodBuilder& uid(const std::string& u) {
    obj["metadata"]["uid"] = u;
    return *this;
  }
  /// NvFractions request on container `ctr`.
  PodBuilder& gpu_memory(const std::string& request, const std::string& ctr = "main") {
    return annotation("nvidia.com/container." + ctr + ".gpu-memory.request", request);
  }
  PodBuilder& sm_sharing(const std::string& ctr = "main") {
    return annotation("nvidia.com/container." + ctr + ".gpu-compute.mode", "sm-sharing");
  }
  PodBuilder& fraction(const std::string& portion) { return annotation("gpu-fraction", portion); }
  PodBuilder& devices(int n) { return annotation("gpu-fraction-num-devices", std::to_string(n)); }
  /// Whole GPUs on container 0 (limits, like real manifests).
  PodBuilder& whole(int n) { return limit("nvidia.com/gpu", std::to_string(n)); }
  PodBuilder& limit(const std::string& k, const std::string& v, std::size_t ctr = 0) {
    obj["spec"]["containers"][ctr]["resources"]["limits"][k] = v;
    return *this;
  }
  PodBuilder& request(const std::string& k, const std::string& v, std::size_t ctr = 0) {
    obj["spec"]["containers"][ctr]["resources"]["requests"][k] = v;
    return *this;
  }
  PodBuilder& infiniband(int n = 1) { return limit("rdma/ib", std::to_string(n)); }
  PodBuilder& container(const std::string& name) {
    obj["spec"]["containers"].push_back({{"name", name}, {"image", "busybox"}});
    return *this;
  }
  PodBuilder& selector(const std::string& k, const std::string& v) {
    obj["spec"]["nodeSelector"][k] = v;
    return *this;
  }
  PodBuilder& bound_to(const std::string& node) {
    obj["spec"]["nodeName"] = node;
    return *this;
  }
  PodBuilder& gang(const std::string& name) { return annotation("pod-group-name", name); }
  PodBuilder& priority_class(const std::string& name) {
    obj["spec"]["priorityClassName"] = name;
    return *this;
  }

  Result<PodRequest> decode() const { return k8s::decode_pod(obj, DecodeConfig{}, PriorityClasses{}); }
  PodRequest spec() const {
    auto p = decode();
    REQUIRE_MESSAGE(p.is_ok(), p.status().message());
    return *p;
  }
};

/// A KAI Queue object (scheduling.run.ai/v2): GPU quota, limit and over-quota weight as given;
/// CPU and memory unlimited. `parent` "" for a top-level queue.
inline json queue_object(const std::string& name, const std::string& parent, double gpu_quota, double gpu_limit = -1,
                         double weight = 1) {
  json unlimited = {{"quota", -1}, {"limit", -1}, {"overQuotaWeight", 1}};
  json spec = {{"resources",
                {{"gpu", {{"quota", gpu_quota}, {"limit", gpu_limit}, {"overQuotaWeight", weight}}}, {"cpu", unlimited},
                 {"memory", unlimited}}}};
  if (!parent.empty()) spec["parentQueue"] = parent;
  return {{"apiVersion", "scheduling.run.ai/v2"},
          {"kind", "Queue"},
          {"metadata", {{"name", name}, {"creationTimestamp", "2026-01-01T00:00:00Z"}}},
          {"spec", spec}};
}

inline ClusterState cluster(const std::vector<NodeBuilder>& nodes, PlacementConfig config = {}) {
  std::vector<NodeSpec> specs;
  for (const auto& n : nodes) specs.push_back(n.spec());
  auto s = ClusterState::create(std::move(specs), config);
  REQUIRE_MESSAGE(s.is_ok(), s.status().message());
  return std::move(*s);
}

/// fracpack's policies and the FGD study's, for tests that hold for every policy.
inline std::vector<std::string> all_policy_names() {
  std::vector<std::string> out;
  for (auto n : policy_names()) out.emplace_back(n);
  for (auto n : study_policy_names()) out.emplace_back(n);
  return out;
}

/// A small target workload for `fgd` in tests: half shared GPUs, a third whole GPUs, the rest CPU.
inline std::shared_ptr<const std::vector<TypicalPod>> test_workload() {
  auto w = std::make_shared<std::vector<TypicalPod>>();
  w->push_back(TypicalPod{MilliCpu(1000), MilliGpu(500), 1, {}, 0.5, {}});
  w->push_back(TypicalPod{MilliCpu(2000), MilliGpu(1000), 1, {}, 0.3, {}});
  w->push_back(TypicalPod{MilliCpu(4000), MilliGpu(0), 0, {}, 0.2, {}});
  return w;
}

inline std::shared_ptr<const Policy> policy(const std::string& name) {
  PolicyOptions options;
  options.seed = 7;
  options.workload = test_workload();
  auto p = make_policy(name, options);
  REQUIRE_MESSAGE(p.is_ok(), p.status().message());
  return *p;
}

/// Places with `policy_name` and checks every invariant afterwards.
inline PlaceOutcome place(ClusterState& state, const PodRequest& pod, const std::string& policy_name = "pack") {
  PlaceOutcome o = place_pod(state, pod, *policy(policy_name));
  const std::string broken = state.check_invariants();
  REQUIRE_MESSAGE(broken.empty(), broken);
  return o;
}

/// Every node's usage, to compare whole ledgers before and after.
inline std::vector<NodeUsage> usage_of(const ClusterState& s) {
  std::vector<NodeUsage> out;
  for (std::size_t i = 0; i < s.node_count(); ++i) out.push_back(s.usage(i));
  return out;
}

/// Memory used on GPU `g` of `node`.
inline std::int64_t used_mib(const ClusterState& s, const std::string& node, std::size_t g) {
  return s.usage(*s.find_node(node)).gpus[g].used.count();
}
inline GpuState gpu_state(const ClusterState& s, const std::string& node, std::size_t g) {
  return s.usage(*s.find_node(node)).gpus[g].state;
}

}  // namespace fracpack::test
