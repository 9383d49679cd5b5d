// Placement policies: how a feasible node and the GPUs inside it are preferred.
//
// Feasibility is not a policy's business: the core decides fit (docs/placement.md) for every policy
// alike. A policy only orders (1) the fitting GPUs inside a node and (2) the feasible nodes. Both
// orders are integer keys, lower first, with ties broken by GPU index and node name, so every run
// places the same way (docs/placement.md rule 9). A new policy is one file pair: implement Policy and
// register it in policy_registry.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fracpack/binpack/node_summary.hpp"
#include "fracpack/core/placement.hpp"
#include "fracpack/core/request.hpp"
#include "fracpack/core/status.hpp"

namespace fracpack {

class ClusterState;

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

  /// A node's exact key and GPUs, for a node where the pod passed every rule of docs/placement.md;
  /// nullopt when its GPUs cannot take the pod after all. The default orders GPUs by gpu_rank()
  /// and the node by node_key() on its summary. Policies that need the node's whole state (the FGD
  /// study's scorers: per-GPU free capacity, the pods already there) override it, and their
  /// key_lower_bound() must then stay ≤ every key evaluate() can return.
  struct Evaluated {
    NodeKey key;
    GpuChoice choice;
  };
  [[nodiscard]] virtual std::optional<Evaluated> evaluate(const ClusterState& state, std::size_t node,
                                                          const PodRequest& pod, const PodTraits& traits) const;

  /// How nodes of equal key are ordered. kByName: by name (docs/placement.md rule 9; fracpack's own
  /// policies). kNodeOrder: by a fixed shuffle of the nodes drawn from tie_seed(), the same for every
  /// pod; this is how the FGD study's simulator breaks its (many) integer-score ties, and
  /// reproducing its published numbers depends on it (docs/density.md). kPerPod: a fresh draw per
  /// pod (the study's Random). The caller sets NodeKey::value2 from tie_break(); the draws are
  /// hashes, so the same input still gives the same placement.
  enum class Ties : unsigned char { kByName, kNodeOrder, kPerPod };
  [[nodiscard]] virtual Ties ties() const { return Ties::kByName; }
  [[nodiscard]] virtual std::uint64_t tie_seed() const { return 0; }
};

/// Parts per million: how policies write a fraction (a share of free capacity) into an integer key.
inline constexpr std::int64_t kPpm = 1'000'000;

/// The tie-breaking draw of `pod_key` (empty for kNodeOrder) on `node_name`: uniform over
/// [0, 2^62), a pure function of its arguments.
std::int64_t tie_break(std::uint64_t seed, std::string_view pod_key, std::string_view node_name);

struct TypicalPod;  // fragmentation.hpp

/// What some policies need beyond their name.
struct PolicyOptions {
  std::uint64_t seed = 0;  ///< tie-breaking draws (Policy::ties() other than kByName)
  /// The target workload of `fgd`, `fgd-cpu` and `fgd-lp` (typical_pods() of the pod list;
  /// fragmentation.hpp).
  std::shared_ptr<const std::vector<TypicalPod>> workload;
};

/// fracpack's own policies, accepted by make_policy() without options, in documentation order.
std::vector<std::string_view> policy_names();
/// The FGD study's policies (Weng et al., USENIX ATC'23), reproduced for the density harness:
/// random, dot-product, gpu-clustering, gpu-packing, study-best-fit, fgd; and fracpack's refinements
/// of fgd: fgd-cpu (CPU-stranded GPUs) and fgd-lp (fgd-cpu plus the cutting-stock LP's prices of GPU
/// shares), docs/density.md. fgd, fgd-cpu and fgd-lp need PolicyOptions::workload.
std::vector<std::string_view> study_policy_names();

/// Whether `name` is one of policy_names() or study_policy_names().
bool known_policy(std::string_view name);
/// Whether policy `name` scores against PolicyOptions::workload (fgd, fgd-cpu, fgd-lp).
bool needs_workload(std::string_view name);

/// The policy called `name` (policy_names() or study_policy_names()). kInvalidArgument listing the
/// valid names for an unknown one, and for `fgd` / `fgd-cpu` / `fgd-lp` without options.workload.
Result<std::shared_ptr<const Policy>> make_policy(std::string_view name, const PolicyOptions& options = {});

}  // namespace fracpack
