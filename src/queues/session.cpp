#include "fracpack/queues/session.hpp"

#include <algorithm>
#include <cassert>
#include <deque>
#include <functional>
#include <map>
#include <queue>

#include "gang_turns.hpp"

namespace fracpack::queues {
namespace {

using detail::book_placed;
using detail::GangTurns;

bool job_before(const Job* a, const Job* b) {
  if (a->priority != b->priority) return a->priority > b->priority;
  if (a->progress != b->progress) return a->progress < b->progress;
  if (a->created != b->created) return a->created < b->created;
  return a->input_order < b->input_order;
}

/// A job in line in its leaf queue, for its next turn.
struct InLine {
  const Job* job;
  GangProgress progress;  ///< where its gang stands against its minimum
  Amounts ask;            ///< what the turn asks of its queue (QueueOrder)
};

/// KAI's job order (framework JobOrderFn over the default plugins): the priority plugin, then the
/// elastic plugin (below the minimum, at it, above it), then creation time, then input order.
bool in_line_before(const InLine& a, const InLine& b) {
  if (a.job->priority != b.job->priority) return a.job->priority > b.job->priority;
  if (a.progress != b.progress) return a.progress < b.progress;
  if (a.job->created != b.job->created) return a.job->created < b.job->created;
  return a.job->input_order < b.job->input_order;
}

/// Jobs of one leaf queue, best first.
using JobList = std::deque<InLine>;

void push_in_line(JobList& list, InLine entry) {
  list.insert(std::upper_bound(list.begin(), list.end(), entry, in_line_before), std::move(entry));
}

/// Where a job's gang stands before the session: a structured gang counts what runs.
GangProgress progress_before(const Job& job) {
  if (job.single_pod() || !job.rule || job.running.empty()) return job.progress;
  return gang_progress(Gang{job.name, {}, job.min_member, job.rule.get(), job.running});
}

/// KAI's queue order (proportion/queue_order/queue_order.go), each queue with the job it would
/// run next: a queue over its fair share in every resource goes last; then a queue whose job still
/// fits its quota; then higher priority; then a queue that would hold something it has no share
/// of goes last; then the smaller dominant share with the job; then creation time and name.
class QueueOrder {
 public:
  QueueOrder(const QueueBook& book, const Amounts& total) : book_(book), total_(total) {}

  bool operator()(std::size_t a, const Amounts& ja, std::size_t b, const Amounts& jb) const {
    const bool a_over = book_.over_fair_share(a);
    const bool b_over = book_.over_fair_share(b);
    if (a_over != b_over) return !a_over;
    const bool a_quota = book_.within_quota(a, ja);
    const bool b_quota = book_.within_quota(b, jb);
    if (a_quota != b_quota) return a_quota;
    const QueueSpec& qa = book_.tree().queue(a);
    const QueueSpec& qb = book_.tree().queue(b);
    if (qa.priority != qb.priority) return qa.priority > qb.priority;
    const bool a_zero = zero_share_violation(a, ja);
    const bool b_zero = zero_share_violation(b, jb);
    if (a_zero != b_zero) return !a_zero;
    const std::int64_t da = dominant_share_ppm(book_, a, total_, ja);
    const std::int64_t db = dominant_share_ppm(book_, b, total_, jb);
    if (da != db) return da < db;
    if (qa.created != qb.created) return qa.created < qb.created;
    return qa.name < qb.name;
  }

 private:
  /// Would hold some resource the queue may not hold at all (KAI penalizeZeroShareWithJob).
  bool zero_share_violation(std::size_t q, const Amounts& job) const {
    for (Resource r : kResources) {
      if (book_.allocatable(q, r) == 0 && book_.allocated(q)[r] + job[r] > 0) return true;
    }
    return false;
  }

  const QueueBook& book_;
  Amounts total_;
};

}  // namespace

std::int64_t dominant_share_ppm(const QueueBook& book, std::size_t q, const Amounts& total, const Amounts& extra) {
  std::int64_t best = 0;
  for (Resource r : kResources) best = std::max(best, ppm(book.allocated(q)[r] + extra[r], total[r]));
  return best;
}

namespace {

/// place_in_session() for a pod FailedPods does not cover (the caller asked); `ask` is known
/// unless the session explains.
PlaceOutcome place_uncovered(ClusterState& state, const PodRequest& pod, const Policy& policy, const SessionOptions& options,
                             FailedPods& failed, const FailedPods::Ask* ask, const std::string* shape) {
  if (options.explain && options.verdicts == nullptr) {
    return place_pod(state, pod, policy, nullptr, options.detailed, options.explain_cache);
  }
  PlaceOutcome out;
  std::optional<RankedNode> best;
  if (options.verdicts != nullptr) {
    auto chosen = options.verdicts->select(state, pod, policy, shape);
    if (!chosen) {
      out.why.code = Code::kInternal;
      out.why.summary = chosen.status().message();
      return out;
    }
    best = std::move(*chosen);
  } else {
    best = select(state, pod, policy);
  }
  if (!best) {
    if (options.explain) {
      out.why = options.explain_cache != nullptr ? options.explain_cache->explain(state, pod, options.detailed)
                                                 : explain(state, pod, nullptr, options.detailed);
    } else {
      failed.add(*ask);
    }
    return out;
  }
  if (Status st = state.reserve(pod, best->node, best->choice); !st.is_ok()) {  // a core bug: select() proposes what fits
    out.why.code = Code::kInternal;
    out.why.summary = st.message();
    return out;
  }
  out.placement = Placement{pod.key(), state.node(best->node).name, state.allocation(pod.key())->choice, best->score};
  return out;
}

}  // namespace

PlaceOutcome place_in_session(ClusterState& state, const PodRequest& pod, const Policy& policy, const SessionOptions& options,
                              FailedPods& failed, const FailedPods::Ask* ask, const std::string* shape) {
  std::optional<FailedPods::Ask> own;
  if (!options.explain && ask == nullptr) ask = &own.emplace(FailedPods::ask_of(pod));
  if (!options.explain && failed.covers(*ask)) return PlaceOutcome{};
  return place_uncovered(state, pod, policy, options, failed, ask, shape);
}

std::vector<JobOutcome> run_session(ClusterState& state, QueueBook& book, const Policy& policy,
                                    const std::vector<Job>& jobs, const Amounts& total, const SessionOptions& options) {
  std::vector<const Job*> pointers;
  pointers.reserve(jobs.size());
  for (const Job& job : jobs) pointers.push_back(&job);
  return run_session(state, book, policy, pointers, total, options);
}

namespace {

#ifndef NDEBUG
/// AlikeRuns' contract: one leaf; per run one ask, priority and preemptibility, in job order.
bool alike_runs_hold(const AlikeRuns& runs) {
  for (const auto& run : runs) {
    for (std::size_t i = 1; i < run.size(); ++i) {
      const Job& a = *run[i - 1];
      const Job& b = *run[i];
      if (!job_before(&a, &b) || a.queue != b.queue || a.priority != b.priority || a.preemptible != b.preemptible ||
          a.ask.alike != b.ask.alike || a.ask.constraints != b.ask.constraints || !a.ask.at_least(b.ask) || !b.ask.at_least(a.ask)) {
        return false;
      }
    }
  }
  return true;
}
#endif

/// One job's turn: admission on its minimum (a gang's first min_member pods, or the pod itself),
/// then placement. Nothing (no outcome) for a pod asking no less than one that found no node in
/// this session (SessionOptions::explain off).
/// A gang with members left after its turn comes back in `goes_on`.
std::optional<JobOutcome> take_turn(ClusterState& state, QueueBook& book, const Policy& policy, const Job& job,
                                    const SessionOptions& options, FailedPods& failed, std::unique_ptr<GangTurns>& goes_on) {
  JobOutcome result;
  result.job = &job;
  result.charged = job.charge;
  if (job.members.size() > 1) result.refused.assign(job.members.size(), std::nullopt);  // one pod: `refusal` says it
  if (auto refusal = book.admit(job.queue, job.charge, job.preemptible)) {
    result.refusal = std::move(refusal);
    return result;
  }
  const bool asked = !options.explain && job.members.size() == 1 && !job.ask.constraints.empty();
  if (asked && failed.covers(job.ask)) return std::nullopt;
  result.charged = Amounts{};
  if (job.single_pod()) {
    const std::string* shape = job.shape.empty() ? nullptr : &job.shape;
    result.members.push_back(asked ? place_uncovered(state, job.members.front(), policy, options, failed, &job.ask, shape)
                                   : place_in_session(state, job.members.front(), policy, options, failed,
                                                      job.ask.constraints.empty() ? nullptr : &job.ask, shape));
    if (result.members.front().placement) book_placed(state, book, job, {0}, result);
  } else {
    auto turns = std::make_unique<GangTurns>(state, job, policy, options);
    if (turns->first(book, result)) goes_on = std::move(turns);
  }
  return result;
}

}  // namespace

std::vector<JobOutcome> run_session(ClusterState& state, QueueBook& book, const Policy& policy,
                                    const std::vector<const Job*>& jobs, const Amounts& total,
                                    const SessionOptions& options) {
  const QueueTree& tree = book.tree();
  std::vector<JobList> pending(tree.size());
  std::vector<std::size_t> waiting(tree.size(), 0);  // jobs in line in each subtree
  for (const Job* job : jobs) {
    pending[job->queue].push_back(InLine{job, progress_before(*job), job->charge});
    for (std::size_t q : tree.path_to_root(job->queue)) ++waiting[q];
  }
  for (auto& list : pending) {
    if (!std::is_sorted(list.begin(), list.end(), in_line_before)) std::stable_sort(list.begin(), list.end(), in_line_before);
  }
  const QueueOrder before(book, total);

  // The leaf a subtree would serve next, with its job: the best child at each level.
  std::function<std::optional<std::size_t>(const std::vector<std::size_t>&)> best_of =
      [&](const std::vector<std::size_t>& group) -> std::optional<std::size_t> {
    std::optional<std::size_t> best_leaf;
    std::optional<std::size_t> best_queue;
    for (std::size_t q : group) {
      if (waiting[q] == 0) continue;
      const std::size_t leaf = tree.is_leaf(q) ? q : *best_of(tree.children(q));
      if (!best_queue || before(q, pending[leaf].front().ask, *best_queue, pending[*best_leaf].front().ask)) {
        best_queue = q;
        best_leaf = leaf;
      }
    }
    return best_leaf;
  };

  FailedPods failed;
  std::vector<JobOutcome> out;
  out.reserve(jobs.size());
  struct Going {
    std::unique_ptr<GangTurns> turns;
    std::size_t outcome;  // its JobOutcome in `out`
  };
  std::map<const Job*, Going> going;  // gangs with members left for a later turn
  while (auto leaf = best_of(tree.roots())) {
    const Job* job = pending[*leaf].front().job;
    pending[*leaf].pop_front();
    auto it = going.find(job);
    bool again = false;
    if (it != going.end()) {
      again = it->second.turns->next(book, out[it->second.outcome]);
    } else {
      std::unique_ptr<GangTurns> turns;
      if (auto outcome = take_turn(state, book, policy, *job, options, failed, turns)) out.push_back(std::move(*outcome));
      if (turns) {
        it = going.emplace(job, Going{std::move(turns), out.size() - 1}).first;
        again = true;
      }
    }
    if (again) {
      push_in_line(pending[*leaf], InLine{job, it->second.turns->progress(), it->second.turns->next_ask()});
      continue;
    }
    if (it != going.end()) going.erase(it);
    for (std::size_t q : tree.path_to_root(*leaf)) --waiting[q];
  }
  return out;
}

std::vector<const Job*> jobs_of(const AlikeRuns& runs) {
  std::vector<const Job*> jobs;
  for (const auto& run : runs) jobs.insert(jobs.end(), run.begin(), run.end());
  return jobs;
}

std::vector<JobOutcome> run_session(ClusterState& state, QueueBook& book, const Policy& policy, const AlikeRuns& runs,
                                    const Amounts& total, const SessionOptions& options) {
  const std::size_t leaf = runs.empty() || runs.front().empty() ? 0 : runs.front().front()->queue;
  const bool one_leaf = std::all_of(runs.begin(), runs.end(), [&](const auto& run) { return !run.empty() && run.front()->queue == leaf; });
  const bool single_pods = std::all_of(runs.begin(), runs.end(), [](const auto& run) {
    return std::all_of(run.begin(), run.end(), [](const Job* job) { return job->single_pod(); });
  });
  if (options.explain || !one_leaf || !single_pods) {  // every job takes its turn
    return run_session(state, book, policy, jobs_of(runs), total, options);
  }
  struct Head {
    std::size_t run;
    std::size_t at;  // the run's job that takes the next turn
  };
  assert(alike_runs_hold(runs));
  // One leaf: its jobs go in job order, so the heads merge by it.
  const auto later = [&](const Head& a, const Head& b) { return job_before(runs[b.run][b.at], runs[a.run][a.at]); };
  std::priority_queue<Head, std::vector<Head>, decltype(later)> heads(later);
  std::vector<bool> may_end(runs.size());  // the run may end at a pod FailedPods covers
  for (std::size_t r = 0; r < runs.size(); ++r) {
    const Job& head = *runs[r].front();
    may_end[r] = head.single_pod() && head.ask.alike != FailedPods::kNoClass && !head.ask.constraints.empty() &&
                 book.never_refuses(head.queue, head.preemptible);
    heads.push(Head{r, 0});
  }
  FailedPods failed;
  std::vector<JobOutcome> out;
  while (!heads.empty()) {
    const Head head = heads.top();
    heads.pop();
    const Job& job = *runs[head.run][head.at];
    std::unique_ptr<GangTurns> none;  // one pod: no later turn
    std::optional<JobOutcome> outcome = take_turn(state, book, policy, job, options, failed, none);
    if (outcome) out.push_back(std::move(*outcome));
    // Covered now (no outcome, or no node found): so is every later pod of the run. Not after a
    // placement, a refusal, or a core error (an Internal outcome FailedPods never heard of).
    const bool ends = may_end[head.run] && (!outcome || failed.covers(job.ask));
    if (!ends && head.at + 1 < runs[head.run].size()) heads.push(Head{head.run, head.at + 1});
  }
  return out;
}

}  // namespace fracpack::queues
