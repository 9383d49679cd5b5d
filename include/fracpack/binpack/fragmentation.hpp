// GPU fragmentation as the FGD study defines it (Weng et al., "Beware of Fragmentation:
// Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent", USENIX ATC'23, §3;
// kubernetes-scheduler-simulator pkg/utils/frag.go).
//
// A node's idle GPU capacity is a fragment for a pod when the pod could not use it: all of it
// when the pod cannot run on the node at all (CPU, GPU model, too few GPUs with room), else the
// free capacity of the GPUs too small for the pod. A node's fragmentation for a target workload is
// the popularity-weighted sum over the workload's typical pods. Capacities are in milli-GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fracpack/binpack/cluster_state.hpp"
#include "fracpack/core/request.hpp"
#include "fracpack/core/units.hpp"

namespace fracpack {

/// One request shape of the target workload and its share of the pods.
struct TypicalPod {
  MilliCpu cpu;                     ///< CPU request, 0 raised to 100m (kube-scheduler's non-zero default)
  MilliGpu milli;                   ///< per GPU; 0 for CPU-only pods
  int gpus = 0;                     ///< GPUs asked for (0 for CPU-only pods)
  std::vector<std::string> models;  ///< allowed GPU models (required affinity on gpu.product); empty: any
  double weight = 0;                ///< popularity, the workload's weights sum to 1
  std::vector<std::size_t> model_hashes;  ///< std::hash of each of `models` (typical_pods() fills it; empty: compare the names)
};

/// The most common request shapes covering `coverage` of `pods` (the study: 0.95), at most
/// kMaxTypicalShapes of them, by count,
/// most common first (ties: larger key first), weights renormalised to sum to 1. Pods with a
/// memory-sized fraction have no milli-GPU shape and are left out. Empty for an empty list.
std::vector<TypicalPod> typical_pods(const std::vector<PodRequest>& pods, double coverage = 0.95);

/// At most this many typical shapes: fragmentation costs one pass over a node's GPUs per shape, and
/// a workload whose every pod differs (varied CPU requests, say) would otherwise make every node
/// score cost thousands of passes. The Alibaba pod lists need at most 127 (docs/density.md).
inline constexpr std::size_t kMaxTypicalShapes = 256;

/// A node's free capacity as fragmentation sees it.
struct NodeFree {
  std::int64_t cpu = 0;                ///< milli-CPU left
  std::vector<std::int64_t> gpu_milli; ///< per GPU: 1000 idle, 0 held whole, else the free share
  const std::string* model = nullptr;  ///< GPU model (label nvidia.com/gpu.product); null: none
  std::size_t model_hash = 0;          ///< std::hash of *model (node_free() sets it; 0: not known, names compared)
  /// Σ gpu_milli: the node's free GPU capacity.
  [[nodiscard]] std::int64_t gpu_total() const {
    std::int64_t sum = 0;
    for (auto g : gpu_milli) sum += g;
    return sum;
  }
};

/// Free milli-GPU of GPU `g` of node `n`: 1000 when idle, 0 when held whole or fenced, else the
/// free share of its usable memory, rounded down.
std::int64_t free_milli(const ClusterState& state, std::size_t n, std::size_t g);
/// The node's NodeFree from the ledger.
NodeFree node_free(const ClusterState& state, std::size_t n);

/// Whether typical pod `m` may use the node's GPU model (any when it names none; names matched by
/// hash first when TypicalPod::model_hashes is filled).
bool model_allowed(const NodeFree& node, const TypicalPod& m);
/// Milli-GPU of `node` that typical pod `m` could not use.
double fragment_for(const NodeFree& node, const TypicalPod& m);
/// Σ weight × fragment_for over the workload: the node's fragmentation, in milli-GPU.
double fragmentation(const NodeFree& node, const std::vector<TypicalPod>& workload);

/// The cluster's fragmentation and free GPU capacity (milli-GPU) for a workload, kept current
/// node by node: a node is recomputed only when its ClusterState::node_stamp() changed.
class FragmentationTotals {
 public:
  FragmentationTotals(const ClusterState& state, std::vector<TypicalPod> workload);
  /// Recomputes node `n` if it changed.
  void refresh(const ClusterState& state, std::size_t n);
  /// Recomputes every node that changed (O(nodes) stamp checks).
  void refresh(const ClusterState& state);
  [[nodiscard]] double fragmentation_milli() const { return total_frag_; }
  [[nodiscard]] std::int64_t free_milli() const { return total_free_; }
  /// FGD's fragmentation ratio of idle GPU, in % (0 when nothing is idle).
  [[nodiscard]] double ratio_pct() const {
    return total_free_ > 0 ? 100.0 * total_frag_ / static_cast<double>(total_free_) : 0.0;
  }

 private:
  std::vector<TypicalPod> workload_;
  std::vector<std::uint64_t> stamp_;
  std::vector<double> frag_;
  std::vector<std::int64_t> free_;
  double total_frag_ = 0;
  std::int64_t total_free_ = 0;
};

/// The GPU model of node `n` (its nvidia.com/gpu.product label), or nullptr.
const std::string* gpu_model(const ClusterState& state, std::size_t n);

}  // namespace fracpack
