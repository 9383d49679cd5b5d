// KAI's allocate action (pkg/scheduler/actions/allocate): one session over the waiting jobs.
#include <set>

#include "cycle/actions.hpp"

namespace fracpack::cycle {
namespace {

/// A job the session placed: its minimum (at least its first member) holds a node.
bool placed(const queues::JobOutcome& o) {
  return !o.refusal && !o.members.empty() && o.members.front().placement.has_value();
}

}  // namespace

void AllocateAction::execute(CycleContext& cycle) const {
  cycle.result.allocated = cycle.state.run_session(cycle.policy, cycle.waiting, cycle.options.session);
  // What still waits, in the order the session visited it, then the jobs it gave no turn (a pod
  // no easier than one that found no node: SessionOptions::explain off) in their order.
  std::set<const queues::Job*> visited;
  std::vector<const queues::Job*> waiting;
  for (const queues::JobOutcome& o : cycle.result.allocated) {
    visited.insert(o.job);
    if (!placed(o)) waiting.push_back(o.job);
  }
  for (const queues::Job* job : cycle.waiting) {
    if (!visited.count(job)) waiting.push_back(job);
  }
  cycle.waiting = std::move(waiting);
}

}  // namespace fracpack::cycle
