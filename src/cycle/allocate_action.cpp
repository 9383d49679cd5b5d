// KAI's allocate action (pkg/scheduler/actions/allocate): one session over the waiting jobs.
#include <set>

#include "cycle/actions.hpp"

namespace fracpack::cycle {
namespace {

/// A job the session placed: its minimum (at least its first member) holds a node.
bool placed(const queues::JobOutcome& o) {
  return !o.refusal && !o.members.empty() && o.members.front().placement.has_value();
}

/// A gang's first member allocate left unplaced (not one outside its sub-groups), as a one-pod job
/// on the gang's terms; null when every member is placed.
std::unique_ptr<queues::Job> further_member(const SchedulingState& state, const queues::JobOutcome& o) {
  const queues::Job& gang = *o.job;
  if (gang.single_pod()) return nullptr;
  for (std::size_t i = 0; i < gang.members.size() && i < o.members.size(); ++i) {
    if (o.members[i].placement || o.members[i].why.code == Code::kUnschedulableAndUnresolvable) continue;
    auto job = std::make_unique<queues::Job>();
    job->name = gang.members[i].key();
    job->members = {gang.members[i]};
    job->min_member = 1;
    job->queue = gang.queue;
    job->priority = gang.priority;
    job->preemptible = gang.preemptible;
    job->created = gang.created;
    job->input_order = gang.input_order;
    job->charge = i < gang.member_charges.size() ? gang.member_charges[i] : state.pending_charge(gang.members[i]);
    job->member_charges = {job->charge};
    job->progress = GangProgress::kAtMinimum;
    return job;
  }
  return nullptr;
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
    if (!placed(o)) {
      waiting.push_back(o.job);
    } else if (auto next = further_member(cycle.state, o)) {
      waiting.push_back(next.get());
      cycle.result.further.emplace_back(std::move(next), o.job);
    }
  }
  for (const queues::Job* job : cycle.waiting) {
    if (!visited.count(job)) waiting.push_back(job);
  }
  cycle.waiting = std::move(waiting);
}

}  // namespace fracpack::cycle
