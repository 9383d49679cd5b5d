// The action objects of KAI's cycle (fracpack/queues/cycle.hpp), one per file.
#pragma once

#include "fracpack/queues/cycle.hpp"
#include "fracpack/queues/reclaim.hpp"

namespace fracpack::cycle {

/// Every waiting job in queue order, admitted and placed (queues::run_session).
class AllocateAction final : public Action {
 public:
  [[nodiscard]] ActionKind kind() const override { return ActionKind::kAllocate; }
  void execute(CycleContext& cycle) const override;
};

/// Each waiting preemptible job that fits nowhere, placed by moving running pods.
class ConsolidationAction final : public Action {
 public:
  [[nodiscard]] ActionKind kind() const override { return ActionKind::kConsolidation; }
  void execute(CycleContext& cycle) const override;
};

/// Each waiting job placed on what its victims give back: reclaim (other queues' pods) or
/// preempt (lower priority pods of its own queue). One class: the two differ only in the pass.
class VictimAction final : public Action {
 public:
  explicit VictimAction(queues::VictimPass pass) : pass_(pass) {}
  [[nodiscard]] ActionKind kind() const override {
    return pass_ == queues::VictimPass::kReclaim ? ActionKind::kReclaim : ActionKind::kPreempt;
  }
  void execute(CycleContext& cycle) const override;

 private:
  queues::VictimPass pass_;
};

/// Gangs running below their minimum past their grace, evicted whole.
class StaleGangAction final : public Action {
 public:
  [[nodiscard]] ActionKind kind() const override { return ActionKind::kStaleGangEviction; }
  void execute(CycleContext& cycle) const override;
};

/// Whether `job` may not evict or move others yet: its PodGroup's preemptionDelay has not passed
/// (KAI's FilterWithinPreemptionDelay for consolidation, reclaim and preempt).
bool within_preemption_delay(const CycleContext& cycle, const queues::Job& job);

/// Where each of `job`'s pods now is (those the state holds bound).
std::vector<Placement> placements_of(const SchedulingState& state, const queues::Job& job);

}  // namespace fracpack::cycle
