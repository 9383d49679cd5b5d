// The thread-safe cluster ledger: one ClusterState behind a reader-writer lock.
//
// Decisions that change the state (place, place_gang, reserve, release) take the write lock for
// their whole length, so a decision and its reservation are one atomic step and two callers can
// never both take the last room on a GPU (KAI #2153: 16 × 0.5 submitted at once on 8 GPUs put 3–4
// on one card). Readers (filter, score, explain, snapshots) share the read lock.
#pragma once

#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "fracpack/binpack/cluster_state.hpp"
#include "fracpack/binpack/gang.hpp"
#include "fracpack/binpack/policy.hpp"
#include "fracpack/binpack/scheduler.hpp"

namespace fracpack {

class Ledger {
 public:
  explicit Ledger(ClusterState state) : state_(std::move(state)) {}

  /// Select and reserve in one step.
  PlaceOutcome place(const PodRequest& pod, const Policy& policy);

  /// Places a gang (gang.hpp's place_gang: its minimum all-or-nothing, sub-groups and topology
  /// constraints honoured, docs/placement.md rules 7, 18, 19), then the rest step by step. One
  /// outcome per member, in order.
  std::vector<PlaceOutcome> place_gang(const Gang& gang, const Policy& policy);

  /// Reserves `pod` on node `node` with the given device indices (see ClusterState::reserve).
  Status reserve(const PodRequest& pod, std::string_view node, const std::vector<int>& gpus);

  /// Releases everything `pod_key` holds; false when it held nothing.
  bool release(const std::string& pod_key);

  /// Runs `f(const ClusterState&)` under the read lock.
  template <class F>
  auto read(F&& f) const {
    std::shared_lock lock(mu_);
    return f(static_cast<const ClusterState&>(state_));
  }
  /// Runs `f(ClusterState&)` under the write lock.
  template <class F>
  auto write(F&& f) {
    std::unique_lock lock(mu_);
    return f(state_);
  }

 private:
  mutable std::shared_mutex mu_;
  ClusterState state_;
};

/// Unlocked building blocks of Ledger, for callers that already hold the state exclusively
/// (replays, simulations).
/// `detailed`: how many nodes get their own reasons when the pod fits nowhere (see explain()).
/// `cache`, when given, memoises the answers for pods that fit nowhere (ExplainCache).
PlaceOutcome place_pod(ClusterState& state, const PodRequest& pod, const Policy& policy,
                       const NodeMask* mask = nullptr, std::size_t detailed = SIZE_MAX, ExplainCache* cache = nullptr);

}  // namespace fracpack
