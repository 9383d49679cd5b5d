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

#include "fracpack/config.hpp"
#include "fracpack/node.hpp"
#include "fracpack/priority.hpp"
#include "fracpack/request.hpp"
#include "fracpack/status.hpp"

namespace fracpack::k8s {

/// Written by fracpack's Bind: the ledger's device indices ("0,3") of a pod bound to whole GPUs,
/// or of a fraction behind reservation pods (whose `gpus.devices` then names the physical GPUs
/// the reservation pods reported, docs/placement.md rule 17). The device plugin picks the
/// physical devices, so this is bookkeeping, not an instruction; a restart (or a node read
/// again) holds the same indices.
inline constexpr std::string_view kLedgerGpusAnnotation = "fracpack.io/gpus";

/// Node labels, annotations and conditions read here (domain.md §2).
inline constexpr std::string_view kGpuMemoryLabel = "nvidia.com/gpu.memory";      // MiB, or bytes ≥ 2^20
inline constexpr std::string_view kGpuCountLabel = "nvidia.com/gpu.count";
inline constexpr std::string_view kGpuProductLabel = "nvidia.com/gpu.product";
inline constexpr std::string_view kGpuReplicasLabel = "nvidia.com/gpu.replicas";
inline constexpr std::string_view kSharingStrategyLabel = "nvidia.com/gpu.sharing-strategy";
inline constexpr std::string_view kFractioningCondition = "gpu-fractioning.nvidia.com/Ready";
inline constexpr std::string_view kGpuResource = "nvidia.com/gpu";
/// fracpack's own per-device inventory for nodes that mix GPU sizes: comma-separated MiB, one per
/// device index ("81920,81920,40960"). Overrides the memory and count labels.
inline constexpr std::string_view kGpuInventoryAnnotation = "fracpack.io/gpu-memory-mib";

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

/// Decodes a v1 Pod: GPU request (domain.md §1.1–1.3), cpu/memory, RDMA, queue, priority,
/// preemptibility, gang and binding. See docs/requests.md for every rule and its source.
Result<PodRequest> decode_pod(const nlohmann::json& pod, const DecodeConfig& config,
                              const PriorityClasses& classes);

}  // namespace fracpack::k8s
