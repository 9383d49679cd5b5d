// The Kubernetes label, annotation, condition and resource names fracpack reads and writes
// (docs/placement.md "Node kinds and sharing modes" and docs/requests.md). In the core layer so
// every layer may name them: placement reasons quote them, decoding reads them, Bind writes them.
#pragma once

#include <string_view>

namespace fracpack::k8s {

/// Written by fracpack's Bind: the ledger's device indices ("0,3") of a pod bound to whole GPUs,
/// or of a fraction behind reservation pods (whose `gpus.devices` then names the physical GPUs
/// the reservation pods reported, docs/placement.md rule 17). The device plugin picks the
/// physical devices, so this is bookkeeping, not an instruction; a restart (or a node read
/// again) holds the same indices.
inline constexpr std::string_view kLedgerGpusAnnotation = "fracpack.io/gpus";
/// Written by fracpack's Bind of a fraction: its GPU groups ("g1[,g2]"), so that the link
/// survives a crash between the Binding and the runai-gpu-group label (docs/placement.md rule 17).
inline constexpr std::string_view kGpuGroupsAnnotation = "fracpack.io/gpu-groups";
/// Written by fracpack on a pending pod kube-scheduler should try again now (Unix milliseconds): an
/// update sends a pod back from kube-scheduler's unschedulable queue (docs/kube-scheduler.md).
inline constexpr std::string_view kRetryAnnotation = "fracpack.io/retry";

/// Node labels, annotations and conditions read here (docs/requests.md rules 3–7).
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

}  // namespace fracpack::k8s
