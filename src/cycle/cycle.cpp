// KAI's cycle: the actions in order over one working set (fracpack/queues/cycle.hpp).
#include "fracpack/queues/cycle.hpp"

#include "cycle/actions.hpp"

namespace fracpack::cycle {

std::unique_ptr<Action> make_action(ActionKind kind) {
  switch (kind) {
    case ActionKind::kAllocate:
      return std::make_unique<AllocateAction>();
    case ActionKind::kConsolidation:
      return std::make_unique<ConsolidationAction>();
    case ActionKind::kReclaim:
      return std::make_unique<VictimAction>(queues::VictimPass::kReclaim);
    case ActionKind::kPreempt:
      return std::make_unique<VictimAction>(queues::VictimPass::kPreempt);
    case ActionKind::kStaleGangEviction:
      return std::make_unique<StaleGangAction>();
  }
  return nullptr;
}

CycleResult run_cycle(SchedulingState& state, const Policy& policy, const std::vector<const queues::Job*>& jobs,
                      const CycleOptions& options) {
  CycleContext cycle{state, policy, options, jobs, {}};
  for (ActionKind kind : options.actions) make_action(kind)->execute(cycle);
  cycle.result.waiting = std::move(cycle.waiting);
  return std::move(cycle.result);
}

bool within_preemption_delay(const CycleContext& cycle, const queues::Job& job) {
  return !job.members.empty() && cycle.state.within_preemption_delay(job.members.front());
}

std::vector<Placement> placements_of(const SchedulingState& state, const queues::Job& job) {
  std::vector<Placement> out;
  for (const PodRequest& member : job.members) {
    if (const Allocation* a = state.cluster().allocation(member.key())) {
      out.push_back(Placement{member.key(), state.cluster().node(a->node).name, a->choice, 0});
    }
  }
  return out;
}

}  // namespace fracpack::cycle
