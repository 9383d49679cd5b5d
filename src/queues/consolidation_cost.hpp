// What it costs to make room for a pod on one node by moving pods off it: per GPU, the fewest
// pods to take off and the least GPU memory that frees; per node, lower bounds of any plan's
// moves and moved memory. Internal to consolidation.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "fracpack/binpack/cluster_state.hpp"
#include "fracpack/core/request.hpp"
#include "fracpack/queues/failed_pods.hpp"

namespace fracpack::queues::detail {

/// A pod on a node, and the pod to place again when it may move (null: it may not).
struct HeldPod {
  HeldPod(const Allocation* a, const PodRequest* m) : allocation(a), movable(m) {}
  const Allocation* allocation = nullptr;
  const PodRequest* movable = nullptr;
  /// The movable pod's FailedPods::ask_of(), worked out when first asked, once per node stamp.
  [[nodiscard]] const FailedPods::Ask& ask() const {
    if (!ask_) ask_ = FailedPods::ask_of(*movable);
    return *ask_;
  }

 private:
  mutable std::optional<FailedPods::Ask> ask_;
};

/// What one node holds, as of its stamp: its pods, and per GPU the pods there with the memory
/// each holds on it, most memory first (then key). Pointers stay valid while the stamp does.
struct NodeHeld {
  std::uint64_t stamp = 0;  ///< ClusterState::node_stamp(); 0 = never read
  std::vector<HeldPod> pods;
  std::vector<std::vector<std::pair<std::size_t, std::int64_t>>> gpus;  ///< (index in pods, MiB)
  std::size_t widest = 1;   ///< the most devices one pod here holds
};

/// Reads node `n` into `held` (movable: the caller's MovablePod).
void read_node(const ClusterState& state, std::size_t n, const std::function<const PodRequest*(const Allocation&)>& movable,
               NodeHeld& held);

/// Whether a pod on the node may move for this job (the job's queue rule and what the plan froze).
using MayMove = std::function<bool(const HeldPod&)>;

/// GPU `gpu` of a node made usable for the pod: take `pods` (indices in NodeHeld::pods) off in
/// this order, `pods.size()` moves; `memory` is the least GPU memory any way of making it usable
/// frees there (its deficit for a fraction, all it holds otherwise).
struct GpuCost {
  std::size_t gpu = 0;
  std::int64_t memory = 0;  ///< MiB
  std::vector<std::size_t> pods;
  [[nodiscard]] std::size_t moves() const { return pods.size(); }
};

/// Lower bounds of the moves and GPU memory (MiB) of any plan that fits the pod on the node.
struct NodeBound {
  std::size_t moves = 0;
  std::int64_t memory = 0;
  friend bool operator<(const NodeBound& a, const NodeBound& b) {
    return a.moves != b.moves ? a.moves < b.moves : a.memory < b.memory;
  }
};

/// What a node would cost a pod of one ask, as of the node's stamp (ConsolidationPass::options).
struct NodeOption {
  std::uint64_t stamp = 0;          ///< 0: never worked out
  std::optional<NodeBound> bound;   ///< nullopt: no moving makes room here
};

/// How many distinct GPUs the pod needs on one node (0: none, or replica slots).
std::size_t devices_needed(const PodRequest& pod);

/// The GPUs of node `n` that moving pods can make usable for `pod`, cheapest first (moves, then
/// memory, then index); GPUs no moving helps (fenced, too small, a pod there may not move) are
/// left out. Empty for a pod without GPUs or with replica slots (nothing per GPU to free).
std::vector<GpuCost> gpu_costs(const ClusterState& state, std::size_t n, const PodRequest& pod, const NodeHeld& held,
                               const MayMove& may_move);

/// The bound for the node from its `costs`: nullopt when fewer GPUs than the pod needs can be made
/// usable. At least one move: the pod fits nowhere as the cluster stands.
std::optional<NodeBound> node_bound(const PodRequest& pod, const NodeHeld& held, const std::vector<GpuCost>& costs);

/// The pods the `devices` cheapest GPUs of `costs` must shed (each once), in `costs` order:
/// indices in NodeHeld::pods.
std::vector<std::size_t> core_victims(const NodeHeld& held, const std::vector<GpuCost>& costs, std::size_t devices);

/// The order in which to take the rest of the movable pods off the node: the pods of the cheapest
/// GPUs first (`costs` order), then CPU-only pods by CPU (most first), then every other movable
/// pod by GPU memory (most first). Indices in NodeHeld::pods; pods marked in `taken` (the core,
/// taken first; their pointers are not read) are left out.
std::vector<std::size_t> removal_order(const NodeHeld& held, const std::vector<GpuCost>& costs, const MayMove& may_move,
                                       std::vector<bool> taken);

}  // namespace fracpack::queues::detail
