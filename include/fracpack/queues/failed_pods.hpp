// Pods that found no place, and the pods that therefore cannot find one either: within one pass
// over a ledger that only fills (a session places and never releases; consolidation's pass moves
// nothing out for good), a pod asking at least as much as one that failed, under the same
// constraints, fails too. KAI keeps the same (pkg/scheduler/actions/common/minimal_job_comparison.go).
#pragma once

#include <cstdint>
#include <cstddef>
#include <unordered_map>
#include <string>
#include <vector>

#include "fracpack/core/request.hpp"

namespace fracpack::queues {

/// The failed pods of one pass, smallest first per constraints.
class FailedPods {
 public:
  /// Ask::alike of an ask with no class.
  static constexpr std::size_t kNoClass = SIZE_MAX;
  /// What a pod asks for, as far as covering goes: the constraints two pods must share (its GPU
  /// kind, compute mode, device count, node selector and affinity, RDMA and extended resources,
  /// as one key) and the sizes that must each be at least as large (its GPU memory or portion,
  /// whole GPUs, CPU, memory). Computed once per pod by a caller that asks about it often.
  struct Ask {
    std::string constraints;
    std::int64_t gpu = 0;  ///< MiB, milli-GPU of a portion, or whole GPUs
    std::int64_t cpu = 0;
    std::int64_t memory = 0;
    std::size_t hash = 0;  ///< std::hash of `constraints` (ask_of() sets it: a lookup hashes no string)
    /// Optional: a caller's number for asks equal in every field (kNoClass: none), small and dense
    /// (FailedPods keeps an array up to the largest). Once one of a class failed, the others are
    /// covered by an array look-up (a replay's waiting pods are mostly clones of a few).
    std::size_t alike = kNoClass;
    [[nodiscard]] bool at_least(const Ask& o) const { return gpu >= o.gpu && cpu >= o.cpu && memory >= o.memory; }
  };
  static Ask ask_of(const PodRequest& pod);

  /// Whether `pod` asks for no less than a failed pod of the same constraints.
  [[nodiscard]] bool covers(const PodRequest& pod) const { return covers(ask_of(pod)); }
  [[nodiscard]] bool covers(const Ask& ask) const;
  /// Records a pod that found no place.
  void add(const PodRequest& pod) { add(ask_of(pod)); }
  void add(const Ask& ask);

 private:
  /// Whether a listed failed ask covers `ask` (its class aside).
  [[nodiscard]] bool listed(const Ask& ask) const;

  /// Per hash of the constraints, the failed asks none of which covers another of the same
  /// constraints (an antichain, in no order: covers() moves the one that answered to the front,
  /// so a FailedPods is not for several threads at once, const or not).
  mutable std::unordered_map<std::size_t, std::vector<Ask>> failed_;
  std::vector<char> failed_class_;  ///< by Ask::alike: one of the class failed
};

}  // namespace fracpack::queues
