// The parts decode_pod() assembles: container resources and GPU-fraction annotations.
// Internal to src/k8s/.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fracpack/core/config.hpp"
#include "fracpack/core/request.hpp"
#include "fracpack/core/status.hpp"

namespace fracpack::k8s {

/// A pod's effective requests, computed like Kubernetes' PodRequests
/// (k8s.io/component-helpers/resource/helpers.go): the sum over containers, raised to the largest
/// init container (sidecar init containers with restartPolicy Always run alongside and add to
/// both), plus spec.overhead. cpu/memory requests default to their limits; extended resources must
/// have equal requests and limits.
struct PodResources {
  MilliCpu cpu;
  Bytes memory;
  std::int64_t gpus = 0;                          ///< nvidia.com/gpu
  std::map<std::string, std::int64_t> rdma;       ///< names matched by DecodeConfig::rdma_resources
  std::map<std::string, std::int64_t> extended;   ///< every other extended resource
  std::vector<std::string> containers;            ///< spec.containers[].name in order
  std::vector<std::string> gpu_containers;        ///< containers (any kind) that ask for nvidia.com/gpu
};

Result<PodResources> read_pod_resources(const nlohmann::json& spec, const std::string& who,
                                        const DecodeConfig& config);

/// What the GPU-fraction annotations say (docs/requests.md rules 10, 11 and 14).
struct FractionAnnotations {
  std::optional<GpuFraction> fraction;
  std::vector<int> devices;  ///< `nvidia.com/container.<ctr>.gpus.devices` on a bound pod
};

/// Validates and merges the NvFractions keys and the legacy KAI keys. `bound` pods may carry the
/// scheduler-written keys (gpus.devices, gpu-compute.portion); pending pods may not.
Result<FractionAnnotations> read_fraction_annotations(
    const std::map<std::string, std::string>& annotations, const std::vector<std::string>& containers,
    bool bound, const std::string& who);

/// spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution as terms (empty when
/// absent). Errors name the field: a term with matchFields (not supported: refused rather than
/// ignored, so a pod is never placed on a node its author excluded), an unknown operator, In/NotIn
/// without values, Exists/DoesNotExist with values, Gt/Lt without exactly one integer.
Result<std::vector<NodeSelectorTerm>> read_required_node_affinity(const nlohmann::json& spec, const std::string& who);

}  // namespace fracpack::k8s
