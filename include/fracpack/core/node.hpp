// What a node offers: its allocatable resources and its GPUs (docs/requests.md rules 2–9).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "fracpack/core/units.hpp"

namespace fracpack {

/// How a fractional pod shares a GPU (`nvidia.com/container.<ctr>.gpu-compute.mode`).
enum class ComputeMode : std::uint8_t {
  kTimeSlicing,  ///< "time-slicing": memory-isolated fractions share SMs by time.
  kSmSharing,    ///< "sm-sharing": fractions run under MPS; compute is accounted too.
};
std::string_view compute_mode_name(ComputeMode mode);

/// How a node's GPUs may be shared.
enum class SharingKind : std::uint8_t {
  /// A plain GPU node: whole GPUs; in `NonMemoryEnforced` mode also legacy fractions.
  kExclusive,
  /// The gpu-fractioning operator runs here (node condition `gpu-fractioning.nvidia.com/Ready`):
  /// driver-enforced memory fractions.
  kNvFractions,
  /// NVIDIA device-plugin replicas (`nvidia.com/gpu.replicas=N`, strategy time-slicing or mps): each
  /// physical GPU shows as N slots. A slot is not a device: whole-GPU and InfiniBand pods never land
  /// here; only pods that ask for a shared slot do.
  kReplicas,
};
std::string_view sharing_kind_name(SharingKind kind);

/// One physical GPU of a node.
struct GpuDevice {
  int index = 0;  ///< device index on the node, as the device plugin numbers it (0-based)
  MiB memory;     ///< labelled memory, floored to 100 MiB (KAI node_info: `gpu.memory` handling)
  bool operator==(const GpuDevice&) const = default;
};

/// Device-plugin replica sharing of a `kReplicas` node (NVIDIA k8s-device-plugin, sharing config).
struct ReplicaSharing {
  ComputeMode strategy = ComputeMode::kTimeSlicing;  ///< time-slicing, or sm-sharing for "mps"
  int replicas = 1;                                  ///< slots per physical GPU (N ≥ 2)
  bool operator==(const ReplicaSharing&) const = default;
};

/// A node as the scheduler sees it. Built by decode_node() from a v1 Node; immutable afterwards.
struct NodeSpec {
  std::string name;
  std::map<std::string, std::string> labels;  ///< ordered, so every iteration is deterministic

  MilliCpu cpu;             ///< allocatable cpu
  Bytes memory;             ///< allocatable memory
  std::int64_t pods = 110;  ///< allocatable pods (kubelet default 110)
  /// Allocatable extended resources other than `nvidia.com/gpu` (for example `rdma/ib`), whole counts.
  std::map<std::string, std::int64_t> extended;

  /// Physical GPUs in index order. Empty for a CPU-only node.
  std::vector<GpuDevice> gpus;
  /// True when the per-GPU memory is known (label `nvidia.com/gpu.memory` or the per-device
  /// inventory annotation). A GPU node without it cannot take memory-sized requests.
  bool gpu_memory_known = false;
  std::string gpu_product;  ///< label `nvidia.com/gpu.product`, for messages and selectors

  SharingKind sharing = SharingKind::kExclusive;
  ReplicaSharing replica;  ///< meaningful only when sharing == kReplicas

  bool ready = true;            ///< node condition Ready (absent conditions: assumed ready)
  bool schedulable = true;      ///< false when cordoned (spec.unschedulable)
  bool fractions_ready = false; ///< condition gpu-fractioning.nvidia.com/Ready=True
  /// Same node as the scheduler sees it (a Node object updated without any of this changing, a
  /// kubelet heartbeat say, compares equal).
  bool operator==(const NodeSpec&) const = default;
};

}  // namespace fracpack
