// Placement policies: how a feasible node and the GPUs inside it are preferred.
//
// Feasibility is not a policy's business: the core decides fit (domain.md §3) for every policy
// alike. A policy only orders (1) the fitting GPUs inside a node and (2) the feasible nodes. Both
// orders are integer keys, lower first, with ties broken by GPU index and node name, so every run
// places the same way (domain.md §3 rule 9). A new policy is one file pair: implement Policy and
// register it in policy_registry.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fracpack/node_summary.hpp"
#include "fracpack/placement.hpp"
#include "fracpack/request.hpp"
#include "fracpack/status.hpp"

namespace fracpack {

/// A GPU that can take the pod, as a policy sees it.
struct GpuCandidate {
  int index = 0;
  MiB memory;          ///< labelled memory (floored to 100 MiB)
  MiB usable;          ///< memory minus the per-GPU reserve
  MiB used;            ///< held before this pod
  MiB need;            ///< what this pod would take here (0 for whole GPUs and time-slicing slots)
  bool shared = false; ///< already carries fractions (or slots) of the pod's mode
};

/// What a policy needs to know about the pod beyond the PodRequest, computed once per decision.
struct PodTraits {
  GpuHold hold = GpuHold::kNone;
  ComputeMode mode = ComputeMode::kTimeSlicing;
  int devices = 0;        ///< GPUs (or slots) asked for
  MiB min_need;           ///< lower bound of the memory the pod takes on any single GPU
  // The cluster's scale, for policies that normalise across resources.
  std::int64_t max_node_cpu = 1;        ///< milli-CPU of the largest node
  std::int64_t max_node_gpu_milli = 1;  ///< milli-GPU of the node with the most GPUs
};

class Policy {
 public:
  virtual ~Policy() = default;
  [[nodiscard]] virtual std::string_view name() const = 0;
  /// One line for `fracpack policies`.
  [[nodiscard]] virtual std::string_view summary() const = 0;

  /// Order of the fitting GPUs inside a node; lower is taken first, ties by index.
  [[nodiscard]] virtual std::int64_t gpu_rank(const PodTraits& pod, const GpuCandidate& gpu) const = 0;

  /// Exact key of a feasible node once its GPUs are chosen; lower is better. The caller sets
  /// NodeKey::position.
  [[nodiscard]] virtual NodeKey node_key(const PodTraits& pod, const NodeSummary& node,
                                         const GpuChoice& choice) const = 0;

  /// A key ≤ node_key() of every node whose summary lies in `range` (position included: use
  /// range.lo.position). Used to skip whole subtrees of the node index.
  [[nodiscard]] virtual NodeKey key_lower_bound(const PodTraits& pod, const SummaryRange& range) const = 0;
};

/// Names accepted by make_policy(), in documentation order.
std::vector<std::string_view> policy_names();

/// The policy called `name` ("pack", "spread", "best-fit", "first-fit");
/// kInvalidArgument listing the valid names otherwise.
Result<std::shared_ptr<const Policy>> make_policy(std::string_view name);

}  // namespace fracpack
