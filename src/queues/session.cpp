#include "fracpack/queues/session.hpp"

#include <algorithm>
#include <deque>

#include "fracpack/queues/charge.hpp"

namespace fracpack::queues {
namespace {

/// Jobs of one leaf queue, best first.
using JobList = std::deque<const Job*>;

bool job_before(const Job* a, const Job* b) {
  if (a->priority != b->priority) return a->priority > b->priority;
  if (a->created != b->created) return a->created < b->created;
  return a->input_order < b->input_order;
}

class QueueOrder {
 public:
  QueueOrder(const QueueBook& book, const Amounts& total) : book_(book), total_(total) {}

  /// True when queue a goes before queue b (session.hpp, steps 1–4).
  bool operator()(std::size_t a, std::size_t b) const {
    const bool a_over = book_.over_fair_share(a);
    const bool b_over = book_.over_fair_share(b);
    if (a_over != b_over) return !a_over;
    const QueueSpec& qa = book_.tree().queue(a);
    const QueueSpec& qb = book_.tree().queue(b);
    if (qa.priority != qb.priority) return qa.priority > qb.priority;
    const std::int64_t da = dominant_share_ppm(book_, a, total_);
    const std::int64_t db = dominant_share_ppm(book_, b, total_);
    if (da != db) return da < db;
    if (qa.created != qb.created) return qa.created < qb.created;
    return qa.name < qb.name;
  }

 private:
  const QueueBook& book_;
  Amounts total_;
};

}  // namespace

std::int64_t dominant_share_ppm(const QueueBook& book, std::size_t q, const Amounts& total) {
  std::int64_t best = 0;
  for (Resource r : kResources) best = std::max(best, ppm(book.allocated(q)[r], total[r]));
  return best;
}

std::vector<JobOutcome> run_session(ClusterState& state, QueueBook& book, const Policy& policy,
                                    const std::vector<Job>& jobs, std::size_t detailed, ExplainCache* cache) {
  const QueueTree& tree = book.tree();
  std::vector<JobList> pending(tree.size());
  std::vector<std::size_t> waiting(tree.size(), 0);  // pending jobs in each subtree
  for (const Job& job : jobs) {
    pending[job.queue].push_back(&job);
    for (std::size_t q : tree.path_to_root(job.queue)) ++waiting[q];
  }
  for (auto& list : pending) std::stable_sort(list.begin(), list.end(), job_before);

  Amounts total;
  for (std::size_t n = 0; n < state.node_count(); ++n) {
    total += Amounts(1000 * static_cast<std::int64_t>(state.node(n).gpus.size()), state.node(n).cpu.count(),
                     state.node(n).memory.count());
  }
  const QueueOrder before(book, total);

  std::vector<JobOutcome> out;
  out.reserve(jobs.size());
  auto best_of = [&](const std::vector<std::size_t>& group) -> std::optional<std::size_t> {
    std::optional<std::size_t> best;
    for (std::size_t q : group) {
      if (waiting[q] > 0 && (!best || before(q, *best))) best = q;
    }
    return best;
  };
  while (true) {
    // Descend from the top: the best queue at each level, down to a leaf with a pending job.
    auto at = best_of(tree.roots());
    if (!at) break;
    while (!tree.is_leaf(*at)) at = best_of(tree.children(*at));
    const Job* job = pending[*at].front();
    pending[*at].pop_front();
    for (std::size_t q : tree.path_to_root(*at)) --waiting[q];

    JobOutcome result;
    result.job = job;
    result.charged = job->charge;
    if (auto refusal = book.admit(job->queue, result.charged, job->preemptible)) {
      result.refusal = std::move(refusal);
      out.push_back(std::move(result));
      continue;
    }
    if (job->members.size() == 1 && job->min_member <= 1) {
      result.members.push_back(place_pod(state, job->members.front(), policy, nullptr, detailed, cache));
    } else {
      Gang gang;
      gang.name = job->name;
      gang.members = job->members;
      gang.min_member = job->min_member;
      result.members = place_gang(state, gang, policy, detailed, cache);
    }
    result.charged = Amounts{};
    for (std::size_t i = 0; i < job->members.size(); ++i) {
      if (!result.members[i].placement) continue;
      const PodRequest& pod = job->members[i];
      const Amounts placed = charge_placed(pod, state, *state.allocation(pod.key()));
      book.charge(job->queue, placed, pod.preemptible);
      result.charged += placed;
    }
    out.push_back(std::move(result));
  }
  return out;
}

}  // namespace fracpack::queues
