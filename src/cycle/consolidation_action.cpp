// KAI's consolidation action (pkg/scheduler/actions/consolidation): a waiting preemptible job
// placed by moving running pods, with the rules of SchedulingState::plan_consolidation.
#include <map>

#include "cycle/actions.hpp"
#include "fracpack/queues/failed_pods.hpp"
#include "fracpack/binpack/gang.hpp"

namespace fracpack::cycle {
namespace {

/// The pods that must fit together: a single pod, or a gang's minimum.
std::vector<PodRequest> pods_to_fit(const queues::Job& job) {
  if (job.single_pod()) return job.members;
  const Gang gang{job.name, job.members, job.min_member, job.rule.get(), job.running};
  std::vector<PodRequest> out;
  for (std::size_t i : gang_minimum_by_count(gang)) out.push_back(job.members[i]);
  return out;
}

}  // namespace

void ConsolidationAction::execute(CycleContext& cycle) const {
  queues::ConsolidationPass pass(cycle.options.session.verdicts);
  std::vector<const queues::Job*> waiting;
  // Per leaf queue, single pods that found no plan: one asking no less finds none either (KAI's
  // minimal job comparison; a plan refused by one queue's rules says nothing of another's).
  std::map<std::size_t, queues::FailedPods> failed;
  std::size_t searched = 0;
  for (const queues::Job* job : cycle.waiting) {
    const std::vector<PodRequest> pods = pods_to_fit(*job);
    const bool single = job->single_pod();
    const queues::FailedPods::Ask ask = single && job->ask.constraints.empty() ? queues::FailedPods::ask_of(pods.front()) : job->ask;
    std::optional<queues::ConsolidationPlan> plan;
    const bool covered = single && failed[job->queue].covers(ask);
    if (job->preemptible && !pods.empty() && !covered && !within_preemption_delay(cycle, *job) && cycle.options.consolidation.max_moves > 0 &&
        searched++ < cycle.options.consolidation.max_jobs) {
      plan = cycle.state.plan_consolidation(pods, cycle.policy, cycle.options.consolidation, &pass);
      if (!plan && single) failed[job->queue].add(ask);
    }
    if (!plan || !cycle.state.apply_consolidation(pods, *plan).is_ok()) {
      waiting.push_back(job);
      continue;
    }
    Decision d;
    d.action = ActionKind::kConsolidation;
    d.job = job;
    d.part_of = cycle.part_of(job);
    d.placed = placements_of(cycle.state, *job);
    d.moves = std::move(plan->moves);
    cycle.result.decisions.push_back(std::move(d));
  }
  cycle.waiting = std::move(waiting);
}

}  // namespace fracpack::cycle
