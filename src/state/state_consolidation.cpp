// SchedulingState: consolidation (docs/queues.md rule 14) — which pods may move for a job, the
// queue rules around queues::find_consolidation, and applying a plan.
#include <algorithm>
#include <map>
#include <set>

#include "fracpack/queues/charge.hpp"
#include "fracpack/queues/scheduling_state.hpp"
#include "fracpack/queues/statement.hpp"

namespace fracpack {

using queues::Amounts;

const PodRequest* SchedulingState::running_pod(const Allocation& a) const {
  if (a.holder != Holder::kScheduled) return nullptr;
  auto it = pods_.find(a.pod);
  if (it == pods_.end()) return nullptr;
  const PodRecord& r = it->second;
  if (r.standing != PodStanding::kBound || !r.ours || r.planned_until || r.unreadable) return nullptr;
  return &r.pod;
}

const PodRequest* SchedulingState::movable(const Allocation& a) const {
  if (!a.preemptible) return nullptr;
  const PodRequest* running = running_pod(a);
  if (running == nullptr) return nullptr;
  const PodRecord& r = pods_.at(a.pod);
  if (r.pod.gang) {
    auto g = groups_.find(r.pod.gang_key());
    if (g != groups_.end() && g->second.together()) return nullptr;  // a gang moves whole, or not at all
  }
  return &r.pod;
}

bool SchedulingState::within_deserved(const PodRequest& pod, const Amounts& charge) const {
  const queues::QueueBook* b = book();
  auto leaf = leaf_queue(pod);
  if (b == nullptr || !leaf) return true;
  for (std::size_t q : tree_->path_to_root(*leaf)) {
    const Amounts deserved = b->deserved(q);
    for (queues::Resource r : queues::kResources) {
      if (charge[r] > 0 && deserved[r] != queues::kUnlimited && b->allocated(q)[r] + charge[r] > deserved[r]) return false;
    }
  }
  return true;
}

bool SchedulingState::moves_admitted(const queues::ConsolidationPlan& plan, const PodRequest& job, const Amounts& job_charge) const {
  const queues::QueueBook* b = book();
  if (b == nullptr) return true;
  // Each increment admitted on a copy that holds the ones before it: queues that share an
  // ancestor are checked against their sum there.
  queues::QueueBook after = *b;
  for (const queues::Move& m : plan.moves) {
    const PodRecord& r = pods_.at(m.pod);
    auto leaf = leaf_queue(r.pod);
    if (!leaf) continue;
    Allocation there = *cluster_.allocation(m.pod);
    there.node = *cluster_.find_node(m.to_node);
    there.choice = m.to;
    const Amounts now = queues::charge_placed(r.pod, cluster_, there);
    Amounts growth;
    for (queues::Resource res : queues::kResources) growth[res] = std::max<std::int64_t>(0, now[res] - r.charge[res]);
    if (growth == Amounts{}) continue;
    if (!after.admits(*leaf, growth, r.pod.preemptible)) return false;
    after.charge(*leaf, growth, r.pod.preemptible);
  }
  return after.admits(*leaf_queue(job), job_charge, job.preemptible);
}

std::optional<queues::ConsolidationPlan> SchedulingState::plan_consolidation(const std::vector<PodRequest>& pods,
                                                                             const Policy& policy,
                                                                             const queues::ConsolidationLimits& limits,
                                                                             queues::ConsolidationPass* pass) {
  if (pods.empty()) return std::nullopt;
  Amounts charge;
  for (const PodRequest& pod : pods) {
    const PodRecord* r = this->pod(pod.key());
    if (r == nullptr || r->standing != PodStanding::kPending || !pod.preemptible) return std::nullopt;
    charge += pending_charge(pod);
  }
  const PodRequest& first = pods.front();
  if (book_) {
    auto leaf = leaf_queue(first);
    if (!leaf || !book()->admits(*leaf, charge, first.preemptible)) return std::nullopt;
  }
  const queues::MoveGate gate{first.queue, within_deserved(first, charge)};
  const queues::MovablePod may_move = [this](const Allocation& a) { return movable(a); };
  std::optional<queues::ConsolidationPass> own;
  if (pass == nullptr) pass = &own.emplace();
  auto plan = queues::find_consolidation(cluster_, pods, policy, may_move, gate, *pass, limits);
  if (!plan || !moves_admitted(*plan, first, charge)) return std::nullopt;
  return plan;
}

Status SchedulingState::apply_consolidation(const std::vector<PodRequest>& pods, const queues::ConsolidationPlan& plan) {
  // The moved pods off, the job's pods placed, the moved pods placed again: all or nothing.
  Statement statement(*this);
  const Status stale(Code::kInternal, "the consolidation plan no longer fits the ledger");
  for (const queues::Move& m : plan.moves) {
    if (!statement.evict(m.pod).is_ok()) return stale;  // the plan moves a pod twice, or the pod is gone
  }
  if (plan.placements.size() < pods.size()) return stale;
  for (std::size_t i = 0; i < pods.size(); ++i) {
    auto n = cluster_.find_node(plan.placements[i].node);
    if (!n || !statement.place(pods[i].key(), *n, plan.placements[i].choice).is_ok()) return stale;
  }
  for (const queues::Move& m : plan.moves) {
    auto n = cluster_.find_node(m.to_node);
    if (!n || !statement.rebind(m.pod, *n, m.to).is_ok()) return stale;
  }
  statement.commit();
  return Status::ok();
}

}  // namespace fracpack
