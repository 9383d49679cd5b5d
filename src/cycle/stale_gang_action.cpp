// KAI's stale gang eviction (pkg/scheduler/actions/stalegangeviction): the members of a gang
// running below its minimum past its grace, evicted together.
#include "cycle/actions.hpp"
#include "fracpack/queues/statement.hpp"

namespace fracpack::cycle {

void StaleGangAction::execute(CycleContext& cycle) const {
  for (const SchedulingState::StaleGang& gang : cycle.state.stale_gangs(cycle.options.staleness_grace)) {
    Statement statement(cycle.state);
    bool whole = true;
    for (const std::string& member : gang.evict) whole = whole && statement.evict(member).is_ok();
    if (!whole) continue;  // the statement rolls back
    Decision d;
    d.action = ActionKind::kStaleGangEviction;
    d.gang = gang.group;
    d.victims = statement.evicted();
    statement.commit();
    cycle.result.decisions.push_back(std::move(d));
  }
}

}  // namespace fracpack::cycle
