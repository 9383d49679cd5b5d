// Pods that found no place, and the pods that therefore cannot find one either: within one pass
// over a ledger that only fills (a session places and never releases; consolidation's pass moves
// nothing out for good), a pod asking at least as much as one that failed, under the same
// constraints, fails too. KAI keeps the same (pkg/scheduler/actions/common/minimal_job_comparison.go).
#pragma once

#include <cstdint>
#include <unordered_map>
#include <string>
#include <vector>

#include "fracpack/core/request.hpp"

namespace fracpack::queues {

/// The failed pods of one pass, smallest first per constraints.
class FailedPods {
 public:
  /// What a pod asks for, as far as covering goes: the constraints two pods must share (its GPU
  /// kind, compute mode, device count, node selector and affinity, RDMA and extended resources,
  /// as one key) and the sizes that must each be at least as large (its GPU memory or portion,
  /// whole GPUs, CPU, memory). Computed once per pod by a caller that asks about it often.
  struct Ask {
    std::string constraints;
    std::int64_t gpu = 0;  ///< MiB, milli-GPU of a portion, or whole GPUs
    std::int64_t cpu = 0;
    std::int64_t memory = 0;
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
  /// Per constraints, the failed asks none of which covers another (few: an antichain).
  std::unordered_map<std::string, std::vector<Ask>> failed_;
};

}  // namespace fracpack::queues
