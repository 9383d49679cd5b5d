// Decoding v1 Node and v1 Pod objects into the scheduler's model.
//
// Every error is Code::kInvalidArgument and its message names the object ("pod team-a/llm",
// "node gpu-07"), the field or annotation key, the offending value and the rule it breaks, e.g.
//   pod team-a/llm: annotation "gpu-fraction" = "1.5": a fraction must be a decimal in (0, 1]
//   (KAI gpu-fraction)
// Nothing that fails to decode is ever placed.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "fracpack/core/config.hpp"
#include "fracpack/core/labels.hpp"
#include "fracpack/core/node.hpp"
#include "fracpack/k8s/priority.hpp"
#include "fracpack/core/request.hpp"
#include "fracpack/core/status.hpp"

namespace fracpack::k8s {

/// Decodes a v1 Node.
///
/// - GPUs: count from label `nvidia.com/gpu.count`, else allocatable `nvidia.com/gpu` (divided by
///   the replica count on replica nodes); memory from label `nvidia.com/gpu.memory`, read as MiB,
///   or as bytes when ≥ 1,048,576, then floored to a multiple of 100 MiB (KAI node_info).
/// - Sharing: `nvidia.com/gpu.replicas` > 1 makes a kReplicas node (strategy from
///   `nvidia.com/gpu.sharing-strategy`: time-slicing (default) or mps); the condition
///   `gpu-fractioning.nvidia.com/Ready` makes a kNvFractions node, ready when its status is True.
/// - Errors: missing metadata.name, malformed quantities in allocatable, non-integer or negative
///   GPU labels, an inventory whose length disagrees with the GPU count, replicas together with
///   the fractioning condition.
Result<NodeSpec> decode_node(const nlohmann::json& node, const DecodeConfig& config);

/// Decodes a v1 Pod: GPU request (docs/requests.md rules 10–14), cpu/memory, RDMA, queue, priority,
/// preemptibility, gang and binding. See docs/requests.md for every rule and its source.
Result<PodRequest> decode_pod(const nlohmann::json& pod, const DecodeConfig& config,
                              const PriorityClasses& classes);

/// The PodGroup a Pod object names, as decode_pod reads it (annotation `pod-group-name`, then
/// `scheduling.k8s.io/group-name`, then the labels `scheduling.x-k8s.io/pod-group` and
/// `pod-group.scheduling.sigs.k8s.io`), without decoding anything else: for a pod that may not
/// decode (a finished one, say). nullopt when it names none.
std::optional<std::string> pod_group_of(const nlohmann::json& pod);

}  // namespace fracpack::k8s
