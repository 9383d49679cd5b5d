// Alibaba's GPU-sharing cluster trace (cluster-trace-gpu-v2023, "openb"), as used by the FGD study
// (Weng et al., "Beware of Fragmentation", USENIX ATC'23). Read from the CSV files as published;
// never copied into the repository.
//
// Node list columns: sn, cpu_milli, memory_mib, gpu, model.
// Pod list columns:  name, cpu_milli, memory_mib, num_gpu, gpu_milli, and when present gpu_spec,
//                    qos, pod_phase, creation_time, deletion_time, scheduled_time (seconds).
// Columns are found by header name, so the five-column multigpu* lists read the same way.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fracpack/core/node.hpp"
#include "fracpack/core/request.hpp"
#include "fracpack/core/status.hpp"
#include "fracpack/core/units.hpp"

namespace fracpack::trace {

/// The node label that carries the GPU model; a pod's gpu_spec becomes required node affinity on it.
inline constexpr std::string_view kModelLabel = "nvidia.com/gpu.product";

/// Per-GPU memory of a trace model as the reference study sets it (MiB): G2 20000, T4 15109,
/// P100 16280, G3 30000, V100M16 16160, V100M32 32510, A10 22731. nullopt for other names.
std::optional<MiB> model_memory(std::string_view model);

struct TraceNode {
  std::string name;
  MilliCpu cpu;
  MiB memory;
  int gpus = 0;
  std::string model;  ///< empty for CPU-only nodes
};

struct TracePod {
  std::string name;
  MilliCpu cpu;
  MiB memory;
  int num_gpu = 0;       ///< 0: CPU only
  MilliGpu gpu_milli;    ///< with num_gpu 1: < 1000 is a shared fraction; otherwise 1000
  std::vector<std::string> gpu_spec;  ///< allowed models; empty: any
  std::string qos;       ///< LS, BE, Burstable, Guaranteed ("" when the column is absent)
  std::int64_t creation_time = 0;  ///< seconds from the trace start
  std::optional<std::int64_t> deletion_time;
  std::optional<std::int64_t> scheduled_time;  ///< when the trace's scheduler started it (absent: never)
  /// Total GPU asked for, in milli-GPU (num_gpu × gpu_milli; 0 for CPU-only pods).
  [[nodiscard]] MilliGpu gpu_total() const { return gpu_milli * num_gpu; }
};

/// Reads a node list. Errors (kInvalidArgument) name the file, the line and the column: missing
/// column, non-integer or negative number, a GPU node of an unknown model, duplicate names.
Result<std::vector<TraceNode>> read_nodes(const std::filesystem::path& csv);

/// Reads a pod list. Errors as read_nodes, plus: duplicate pod names; num_gpu outside 0..64;
/// gpu_milli outside 0..1000; a fraction (gpu_milli < 1000) on more than one GPU; a GPU pod with
/// gpu_milli 0 or a CPU-only pod with gpu_milli > 0; an unknown model in gpu_spec.
Result<std::vector<TracePod>> read_pods(const std::filesystem::path& csv);

/// The node as the scheduler sees it: allocatable cpu and memory, `gpus` devices of the model's
/// memory, label kModelLabel, driver-enforced fractions ready (every trace GPU may be shared).
NodeSpec to_node_spec(const TraceNode& node);

/// The pod as the scheduler sees it, in namespace "trace": CPU only; a gpu-fraction of gpu_milli
/// (KAI legacy `gpu-fraction` semantics: that portion of whichever GPU it lands on, time-slicing);
/// or num_gpu whole GPUs. gpu_spec becomes required node affinity `kModelLabel In [models]`.
PodRequest to_pod_request(const TracePod& pod);

}  // namespace fracpack::trace
