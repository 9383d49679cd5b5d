// What a pod asks for (docs/requests.md rules 10–22), decoded and validated once by decode_pod().
//
// A PodRequest that exists is valid: every rule of docs/requests.md has been checked, so the
// bin-packing core never re-validates annotations, it only decides fit.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "fracpack/core/node.hpp"
#include "fracpack/core/node_affinity.hpp"
#include "fracpack/core/units.hpp"

namespace fracpack {

/// No GPU at all (a CPU-only pod).
struct NoGpu {
  bool operator==(const NoGpu&) const = default;
};

/// `nvidia.com/gpu: N` (N ≥ 1) — N whole, idle devices on one node.
/// When `shared_slot` is set the pod asked for a device-plugin replica slot instead (its
/// nodeSelector names `nvidia.com/gpu.sharing-strategy`, `nvidia.com/gpu.replicas` or a `-SHARED`
/// product); then it goes only to kReplicas nodes and takes N slots there.
struct WholeGpus {
  int count = 1;
  bool shared_slot = false;
  bool operator==(const WholeGpus&) const = default;
};

/// A fraction of a GPU, the same on `num_devices` distinct GPUs of one node.
/// Exactly one of `memory` (absolute size) or `portion` (of whichever GPU it lands on) is set.
struct GpuFraction {
  std::optional<MiB> memory;         ///< NvFractions gpu-memory.request, or legacy gpu-memory (MiB)
  std::optional<MilliGpu> portion;   ///< legacy gpu-fraction, in (0, 1000]
  std::optional<MiB> memory_limit;   ///< NvFractions gpu-memory.limit (≥ request); a GPU must hold it
  int num_devices = 1;               ///< legacy gpu-fraction-num-devices
  ComputeMode mode = ComputeMode::kTimeSlicing;
  std::string container;             ///< the container that receives the fraction
  bool operator==(const GpuFraction&) const = default;

  /// The memory this request takes on a GPU with `gpu_memory` labelled memory.
  [[nodiscard]] MiB memory_on(MiB gpu_memory) const {
    return memory ? *memory : portion_of(*portion, gpu_memory);
  }
};

using GpuRequest = std::variant<NoGpu, WholeGpus, GpuFraction>;

/// A pod already bound to a node (spec.nodeName set), with the GPUs it holds there.
struct Binding {
  std::string node;
  /// From `nvidia.com/container.<ctr>.gpus.devices`; empty when the pod carries no such annotation.
  std::vector<int> devices;
  bool operator==(const Binding&) const = default;
};

struct PodRequest {
  std::string namespace_name = "default";
  std::string name;
  std::string uid;

  MilliCpu cpu;     ///< effective request: max(sum of containers, each init container) + overhead
  Bytes memory;     ///< same rule as cpu
  GpuRequest gpu;
  /// RDMA / InfiniBand device resources asked for (configurable names, e.g. `rdma/ib: 1`).
  std::map<std::string, std::int64_t> rdma;
  /// Other extended resources asked for, checked against node allocatable.
  std::map<std::string, std::int64_t> extended;
  std::map<std::string, std::string> node_selector;
  /// Required node affinity (any term must match; node_affinity.hpp). Empty: any node.
  std::vector<NodeSelectorTerm> node_affinity;

  std::string queue = "default-queue";
  std::string priority_class;
  std::int32_t priority = 0;
  bool preemptible = true;
  std::optional<std::string> gang;  ///< PodGroup name (KAI annotation `pod-group-name`)
  std::string sub_group;            ///< its PodGroup's sub-group (KAI label `kai.scheduler/subgroup-name`); "" for none
  std::int64_t created = 0;         ///< metadata.creationTimestamp, seconds since the epoch (0 when absent)
  /// When it started running, seconds since the epoch: the moment the scheduling state bound or
  /// placed it, or for a pod it adopted, status.startTime; none for a pod not started
  /// (min-runtime protection: queues/min_runtime.hpp, docs/queues.md rule 13).
  std::optional<std::int64_t> started;
  std::string scheduler_name;       ///< spec.schedulerName ("" when absent)

  std::optional<Binding> bound;

  [[nodiscard]] std::string key() const { return namespace_name + "/" + name; }
  /// "namespace/PodGroup name", the key PodGroups are held by; "" when the pod is in no gang.
  [[nodiscard]] std::string gang_key() const { return gang ? namespace_name + "/" + *gang : std::string(); }
  [[nodiscard]] bool infiniband() const { return !rdma.empty(); }
  [[nodiscard]] const GpuFraction* fraction() const { return std::get_if<GpuFraction>(&gpu); }
  [[nodiscard]] const WholeGpus* whole() const { return std::get_if<WholeGpus>(&gpu); }
  [[nodiscard]] bool cpu_only() const { return std::holds_alternative<NoGpu>(gpu); }
};

}  // namespace fracpack
