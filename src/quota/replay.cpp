// The queue replay (quota/replay.hpp) on the one scheduling state `place` and `serve` use
// (scheduling_state.hpp): arrivals are observed as pending pods, sessions run through the state,
// departures and evictions are forgotten (an evicted pod is observed pending again), and every
// queue figure is read from the state's book, fair shares current at each read.
#include "fracpack/sim/quota/replay.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <deque>
#include <queue>
#include <set>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "fracpack/binpack/fragmentation.hpp"
#include "fracpack/binpack/policy.hpp"
#include "fracpack/queues/queue_book.hpp"
#include "fracpack/queues/queue_tree.hpp"
#include "fracpack/binpack/scheduler.hpp"
#include "fracpack/binpack/verdict_cache.hpp"
#include "fracpack/queues/cycle.hpp"
#include "fracpack/queues/failed_pods.hpp"
#include "fracpack/queues/scheduling_state.hpp"

namespace fracpack::quota {
namespace {

using queues::Amounts;
using queues::Resource;
using Reason = std::shared_ptr<const std::string>;

/// (time, pod index, run number): an entry whose run number is not the pod's current one belongs
/// to a run cut short by eviction and is skipped.
using Departure = std::tuple<std::int64_t, std::size_t, std::uint32_t>;

/// The workload's pods as arrivals: a spec.nodeName in the input (Pod objects as kubectl prints
/// running pods) is where the pod ran then, not a binding the replay starts from.
std::vector<TimedPod> arrivals(const TimedWorkload& workload) {
  std::vector<TimedPod> pods = workload.pods;
  for (auto& p : pods) {
    p.pod.bound.reset();
    p.pod.started.reset();  // its start is the cycle that places it, not the trace's
  }
  return pods;
}

/// Every pod of the workload is the replayed scheduler's, whatever its spec.schedulerName says.
/// `clock`: the replay's time, which pods placed record as their start.
SchedulingState::Options state_options(const TimedWorkload& workload, const ReplayOptions& options,
                                       std::function<std::int64_t()> clock) {
  SchedulingState::Options o{options.placement, DecodeConfig{}};
  o.refusal_messages = false;  // the replay counts refusals, it never shows their arithmetic
  o.min_runtime = options.min_runtime;
  o.clock = std::move(clock);
  std::set<std::string> names(o.decode.scheduler_names.begin(), o.decode.scheduler_names.end());
  for (const auto& p : workload.pods) names.insert(p.pod.scheduler_name);
  o.decode.scheduler_names.assign(names.begin(), names.end());
  return o;
}

/// One replay: the workload's pods by index, the state they are scheduled on, and the report.
class Replay {
 public:
  Replay(const TimedWorkload& workload, const ReplayOptions& options)
      : pods_(arrivals(workload)),
        options_(options),
        state_(state_options(workload, options, [this] { return clock_; })),
        empty_(state_options(workload, options, [this] { return clock_; })) {}

  Status load(std::vector<NodeSpec> nodes, std::vector<queues::QueueSpec> queue_specs);
  ReplayReport run();

 private:
  void meter(std::int64_t to);
  void arrive(std::size_t i);
  void stop(std::size_t i) { (void)state_.forget(pods_[i].pod.key()); }
  void run_cycle(std::int64_t cycle);
  [[nodiscard]] std::vector<const queues::Job*> session_jobs();
  [[nodiscard]] queues::AlikeRuns alike_runs(const std::vector<const queues::Job*>& jobs);
  void record_outcomes(const std::vector<queues::JobOutcome>& outcomes, std::int64_t cycle);
  void start(std::size_t i, std::int64_t cycle);
  bool act(std::int64_t cycle);
  [[nodiscard]] std::size_t moves_allowed(std::int64_t cycle);
  void moved(std::size_t i, std::int64_t cycle);
  void evict(std::size_t victim, std::size_t for_pod);
  void sample(std::int64_t cycle);
  void finish();
  Reason intern(std::string text);
  [[nodiscard]] QueueReport& row(std::size_t i) { return report_.queues[slot_[i]]; }

  const std::vector<TimedPod> pods_;
  const ReplayOptions& options_;
  SchedulingState state_;
  SchedulingState empty_;  // the nodes alone: "could this pod ever start?"
  std::shared_ptr<const Policy> policy_;
  std::unique_ptr<VerdictCache> verdicts_;  // placements re-evaluate only the nodes that changed since the shape's last pod
  std::unique_ptr<queues::ConsolidationPass> consolidation_;  // what nodes hold and cost, per node stamp, for the whole run
  std::shared_ptr<const std::vector<TypicalPod>> typical_;
  ReplayReport report_;
  std::vector<std::size_t> leaves_;             // leaf queue indices, in tree order
  std::map<std::size_t, std::size_t> slot_of_;  // queue index → report slot
  std::vector<std::size_t> leaf_of_;            // per pod
  // Per pod, what each cycle reads of every waiting pod, side by side (a Job or a PodRequest
  // apiece would cost a cache miss per waiting pod per cycle).
  std::vector<std::size_t> slot_;               // its leaf's report slot
  std::vector<std::int32_t> priority_;
  std::vector<std::int64_t> pending_gpu_;       // milli-GPU: its charge when it arrived (the nodes never change)
  std::vector<std::size_t> alike_of_;           // per pod: same shape, queue, priority, preemptibility
  std::vector<std::size_t> run_of_alike_;       // alike_runs()'s scratch: run per class (SIZE_MAX: none)
  std::map<std::string, std::size_t> index_of_;
  std::vector<queues::Job> job_of_;             // per pod: made when it arrives, kept while it waits
  std::vector<std::uint32_t> run_number_;
  std::vector<std::int64_t> pending_since_;     // per pod: arrival, or its last eviction
  std::priority_queue<Departure, std::vector<Departure>, std::greater<>> running_;
  std::vector<std::size_t> pending_;            // pod indices, in arrival order
  // One leaf queue and one priority: no pod can ever be another's victim, reclaim has nothing to do.
  bool victims_possible_ = true;
  std::deque<std::int64_t> move_times_;         // when each move of the last hour happened
  // Min-runtime protection lapses with no event of its own: when the last reclaim left out a
  // shielded candidate, a cycle runs the moment the first of them lapses while pods wait (KAI's
  // session runs every period and would see it then).
  std::optional<std::int64_t> shield_lapse_;
  std::int64_t clock_ = 0;
  std::optional<FragmentationTotals> fragments_;
  // Why each waiting pod is still waiting, as of its last cycle. Shared: a reason is often the
  // same for thousands of pods (one per shape and ledger version, one per queue refusal).
  std::vector<Reason> why_;
  std::unordered_map<std::string, Reason> reasons_;
};

Status Replay::load(std::vector<NodeSpec> nodes, std::vector<queues::QueueSpec> queue_specs) {
  if (options_.period < 1) return invalid_argument("--period {}: must be at least 1 second", options_.period);
  // fgd, fgd-cpu and fgd-lp measure fragmentation for a target workload: the workload's own typical
  // pods, which the fragmentation timeline uses too.
  std::vector<PodRequest> requests;
  requests.reserve(pods_.size());
  for (const auto& p : pods_) requests.push_back(p.pod);
  typical_ = std::make_shared<const std::vector<TypicalPod>>(typical_pods(requests));
  std::set<std::string> shapes;
  for (const auto& r : requests) shapes.insert(pod_shape(r));
  verdicts_ = std::make_unique<VerdictCache>(shapes.size() + 1);  // every shape stays: none is evaluated afresh
  consolidation_ = std::make_unique<queues::ConsolidationPass>(verdicts_.get());
  if (typical_->empty()) typical_ = std::make_shared<const std::vector<TypicalPod>>(1, TypicalPod{});
  auto policy = make_policy(options_.policy, PolicyOptions{options_.policy_seed, typical_});
  if (!policy) return policy.status();
  policy_ = std::move(*policy);
  ObjectChange cluster;
  cluster.nodes = std::move(nodes);
  if (Status st = empty_.validate(cluster); !st.is_ok()) return st;
  (void)empty_.apply(cluster);
  cluster.queues = std::move(queue_specs);
  if (Status st = state_.validate(cluster); !st.is_ok()) return st;
  (void)state_.apply(cluster);
  const queues::QueueTree* tree = state_.tree();
  leaf_of_.resize(pods_.size());
  for (std::size_t i = 0; i < pods_.size(); ++i) {
    const PodRequest& pod = pods_[i].pod;
    auto q = state_.leaf_queue(pod);
    if (!q) {
      return invalid_argument("pod {}: queue \"{}\" is not a leaf Queue of the queue file{}", pod.name, pod.queue,
                              pod.queue == DecodeConfig{}.default_queue ? " (a pod without the kai.scheduler/queue label goes to default-queue)" : "");
    }
    leaf_of_[i] = *q;
    index_of_.emplace(pod.key(), i);
  }
  for (std::size_t q = 0; tree != nullptr && q < tree->size(); ++q) {
    if (!tree->is_leaf(q)) continue;
    slot_of_[q] = leaves_.size();
    leaves_.push_back(q);
    QueueReport r;
    r.queue = tree->queue(q).name;
    report_.queues.push_back(std::move(r));
  }
  slot_.resize(pods_.size());
  priority_.resize(pods_.size());
  pending_gpu_.assign(pods_.size(), 0);
  for (std::size_t i = 0; i < pods_.size(); ++i) {
    slot_[i] = slot_of_.at(leaf_of_[i]);
    priority_[i] = pods_[i].pod.priority;
  }
  std::map<std::string, std::size_t> ids;
  alike_of_.resize(pods_.size());
  for (std::size_t i = 0; i < pods_.size(); ++i) {
    const std::string key = fmt::format("{}#{}#{}#{}", pod_shape(pods_[i].pod), leaf_of_[i], pods_[i].pod.priority, pods_[i].pod.preemptible);
    alike_of_[i] = ids.emplace(key, ids.size()).first->second;
  }
  run_of_alike_.assign(ids.size(), SIZE_MAX);
  std::set<std::int32_t> priorities;
  for (const auto& p : pods_) priorities.insert(p.pod.priority);
  victims_possible_ = leaves_.size() > 1 || priorities.size() > 1;
  job_of_.resize(pods_.size());
  run_number_.assign(pods_.size(), 0);
  pending_since_.assign(pods_.size(), 0);
  if (options_.per_pod) {
    report_.pods.resize(pods_.size());
    for (std::size_t i = 0; i < pods_.size(); ++i) report_.pods[i].arrival = pods_[i].arrival;
  }
  why_.resize(pods_.size());
  if (options_.timeline) fragments_.emplace(state_.cluster(), *typical_);
  return Status::ok();
}

/// Integrates each leaf's allocated GPU, fair share and over-quota time up to `to`.
void Replay::meter(std::int64_t to) {
  if (to > clock_ && !leaves_.empty()) {
    const queues::QueueBook& book = *state_.book();
    const double hours = static_cast<double>(to - clock_) / 3600.0;
    for (std::size_t s = 0; s < leaves_.size(); ++s) {
      const std::size_t q = leaves_[s];
      const std::int64_t gpu = book.allocated(q)[Resource::kGpu];
      QueueReport& r = report_.queues[s];
      r.gpu_hours += static_cast<double>(gpu) / 1000.0 * hours;
      r.fair_share_gpu_hours += static_cast<double>(book.fair_share(q)[Resource::kGpu]) / 1000.0 * hours;
      const std::int64_t quota = book.deserved(q)[Resource::kGpu];
      if (quota != queues::kUnlimited && gpu > quota) r.over_quota_seconds += static_cast<double>(to - clock_);
    }
  }
  clock_ = std::max(clock_, to);
}

/// The pod waits from now on: observed pending (its ask counts in its queue's fair share), with
/// its one-member Job.
void Replay::arrive(std::size_t i) {
  const PodRequest& pod = pods_[i].pod;
  (void)state_.observe(pod);
  const Amounts charge = state_.pending_charge(pod);
  queues::Job& job = job_of_[i];
  job.name = pod.key();
  job.members = {pod};
  job.min_member = 1;
  job.queue = leaf_of_[i];
  job.priority = pod.priority;
  job.preemptible = pod.preemptible;
  job.created = pods_[i].arrival;
  job.input_order = i;
  pending_since_[i] = pods_[i].arrival;
  job.member_charges = {charge};
  job.charge = charge;
  pending_gpu_[i] = charge[Resource::kGpu];
  if (job.ask.constraints.empty()) {
    job.ask = queues::FailedPods::ask_of(pod);
    job.ask.alike = alike_of_[i];  // same shape, hence the same ask
  }
  if (job.shape.empty()) job.shape = pod_shape(pod);
  pending_.push_back(i);
  ++report_.events;
}

Reason Replay::intern(std::string text) {
  if (reasons_.size() > 100'000) reasons_.clear();  // bounded; pods keep what they point at
  auto [it, fresh] = reasons_.try_emplace(text);
  if (fresh) it->second = std::make_shared<const std::string>(std::move(text));
  return it->second;
}

/// The pending pods that go into this cycle's session. A top-level queue whose terms admit none
/// of its pending jobs gets nothing this session (admission only tightens while a session places
/// pods), and its turns are no-ops that change no other queue's order: its jobs stay out, with the
/// refusal its terms give the first of them as their reason. The same outcome, without thousands
/// of refusals per cycle while a non-preemptible queue sits at its quota.
std::vector<const queues::Job*> Replay::session_jobs() {
  const queues::QueueBook& book = *state_.book();
  const queues::QueueTree& tree = *state_.tree();
  std::vector<char> admits_some(tree.size(), 0);
  for (std::size_t i : pending_) {
    const std::size_t q = leaf_of_[i];
    if (admits_some[q] == 0 && (tree.path_to_root(q).size() > 1 || book.admits(q, job_of_[i].charge, pods_[i].pod.preemptible))) {
      admits_some[q] = 1;
    }
  }
  std::vector<const queues::Job*> jobs;
  jobs.reserve(pending_.size());
  std::vector<Reason> refused(tree.size());  // this cycle's words per refusing queue
  for (std::size_t i : pending_) {
    if (admits_some[leaf_of_[i]] != 0) {
      jobs.push_back(&job_of_[i]);
      continue;
    }
    Reason& reason = refused[leaf_of_[i]];
    if (!reason) {
      const auto refusal = state_.admit(pods_[i].pod);
      reason = intern(refusal ? fmt::format("{} (queue {})", refusal->reason, refusal->queue) : "");
    }
    if (why_[i] != reason) why_[i] = reason;  // thousands of pods per cycle: no reference counting when unchanged
  }
  return jobs;
}

/// One leaf queue, no reasons kept: the session's jobs in runs of alike pods (alike_of_), each in
/// pending_'s order, which is job order within a class (one priority, arrival, then index).
queues::AlikeRuns Replay::alike_runs(const std::vector<const queues::Job*>& jobs) {
  const auto alike = [&](const queues::Job* job) { return alike_of_[job->input_order]; };  // input order: the pod's index
  std::vector<std::size_t> sizes;  // per run: counted first, so each run is allocated once
  for (const queues::Job* job : jobs) {
    std::size_t& run = run_of_alike_[alike(job)];
    if (run == SIZE_MAX) {
      run = sizes.size();
      sizes.push_back(0);
    }
    ++sizes[run];
  }
  queues::AlikeRuns runs(sizes.size());
  for (std::size_t r = 0; r < runs.size(); ++r) runs[r].reserve(sizes[r]);
  for (const queues::Job* job : jobs) runs[run_of_alike_[alike(job)]].push_back(job);
  for (const auto& run : runs) run_of_alike_[alike(run.front())] = SIZE_MAX;
  return runs;
}

void Replay::run_cycle(std::int64_t cycle) {
  const std::vector<const queues::Job*> jobs = session_jobs();
  ExplainCache explain_cache;  // a pod that fits nowhere is explained once per shape and ledger version
  queues::SessionOptions session{0, &explain_cache, verdicts_.get(), options_.reasons};
  const auto outcomes = leaves_.size() == 1 && !options_.reasons ? state_.run_session(*policy_, alike_runs(jobs), session)
                                                                 : state_.run_session(*policy_, jobs, session);
  ++report_.cycles;
  record_outcomes(outcomes, cycle);
  sample(cycle);
}

/// Started pods leave pending_ (with their wait and run); the others keep the session's reason.
void Replay::record_outcomes(const std::vector<queues::JobOutcome>& outcomes, std::int64_t cycle) {
  std::vector<std::size_t> started;
  for (const auto& o : outcomes) {
    const std::size_t i = o.job->input_order;
    if (!o.refusal && !o.members.empty() && o.members.front().placement.has_value()) {
      started.push_back(i);
      continue;
    }
    if (!options_.reasons) continue;
    Reason reason;
    if (o.refusal) {
      reason = intern(o.refusal->reason + " (queue " + o.refusal->queue + ")");
    } else if (!o.members.empty()) {
      reason = intern(o.members.front().why.summary);
    }
    if (why_[i] != reason) why_[i] = std::move(reason);
  }
  if (started.empty()) return;
  // In pending_'s order (arrival, then index), as the waits are recorded.
  std::sort(started.begin(), started.end(), [&](std::size_t x, std::size_t y) {
    return pods_[x].arrival != pods_[y].arrival ? pods_[x].arrival < pods_[y].arrival : x < y;
  });
  for (const std::size_t i : started) start(i, cycle);
  std::sort(started.begin(), started.end());
  std::erase_if(pending_, [&](std::size_t i) { return std::binary_search(started.begin(), started.end(), i); });
}

/// Pod `i` starts running at `cycle`: its wait is recorded and its departure scheduled.
void Replay::start(std::size_t i, std::int64_t cycle) {
  QueueReport& r = row(i);
  const std::int64_t waited = cycle - pods_[i].arrival;
  ++r.started;
  r.pending_seconds.push_back(waited);
  if (waited > r.longest_wait.seconds) r.longest_wait = LongestWait{pods_[i].pod.key(), waited, why_[i] ? *why_[i] : std::string()};
  why_[i].reset();
  ++run_number_[i];
  if (pods_[i].run_seconds) running_.emplace(cycle + *pods_[i].run_seconds, i, run_number_[i]);
  if (options_.per_pod) {
    PodOutcome& o = report_.pods[i];
    if (!o.first_start) o.first_start = cycle;
    o.pending_seconds += cycle - pending_since_[i];
  }
}

/// Pod `i` was moved at `cycle`: its run starts over where it landed.
void Replay::moved(std::size_t i, std::int64_t cycle) {
  ++row(i).moved;
  ++report_.moves;
  move_times_.push_back(cycle);
  if (options_.per_pod) ++report_.pods[i].moves;
  ++run_number_[i];
  if (pods_[i].run_seconds) running_.emplace(cycle + *pods_[i].run_seconds, i, run_number_[i]);
}

/// How many more pods may move at `cycle` under ReplayOptions::max_moves_per_hour.
std::size_t Replay::moves_allowed(std::int64_t cycle) {
  if (options_.max_moves_per_hour <= 0) return SIZE_MAX;
  while (!move_times_.empty() && move_times_.front() <= cycle - 3600) move_times_.pop_front();
  const auto used = static_cast<std::int64_t>(move_times_.size());
  return used >= options_.max_moves_per_hour ? 0 : static_cast<std::size_t>(options_.max_moves_per_hour - used);
}

/// What allocation left waiting, through the rest of KAI's cycle (queues/cycle.hpp):
/// consolidation (when on), then reclaim and preempt (when a pod could be another's victim), jobs
/// in job order (priority, then arrival). A job an action placed starts now; its victims wait
/// again; the pods moved for it start a new run. True when anything changed.
bool Replay::act(std::int64_t cycle) {
  cycle::CycleOptions options;
  options.actions.clear();
  if (options_.consolidation) options.actions.push_back(cycle::ActionKind::kConsolidation);
  if (victims_possible_) options.actions.insert(options.actions.end(), {cycle::ActionKind::kReclaim, cycle::ActionKind::kPreempt});
  options.session.verdicts = verdicts_.get();
  options.consolidation = options_.consolidation_limits;
  options.consolidation.max_moves = std::min(options.consolidation.max_moves, moves_allowed(cycle));
  options.shield_lapse = &shield_lapse_;
  if (options.actions.empty()) return false;
  std::vector<std::size_t> order = pending_;  // arrival order: stable by priority is job order
  std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return priority_[x] > priority_[y]; });
  std::vector<const queues::Job*> jobs;
  jobs.reserve(order.size());
  for (std::size_t i : order) jobs.push_back(&job_of_[i]);
  const cycle::CycleResult result = cycle::run_cycle(state_, *policy_, jobs, options);
  if (result.decisions.empty()) return false;
  std::set<std::size_t> started;
  for (const cycle::Decision& d : result.decisions) {
    const std::size_t i = d.job->input_order;
    if (d.action == cycle::ActionKind::kConsolidation) ++row(i).consolidated;
    start(i, cycle);
    started.insert(i);
    for (const queues::Move& m : d.moves) moved(index_of_.at(m.pod), cycle);
    for (const std::string& victim : d.victims) {
      if (auto it = index_of_.find(victim); it != index_of_.end()) evict(it->second, i);
    }
  }
  std::erase_if(pending_, [&](std::size_t i) { return started.contains(i); });
  // Pending pods stay in arrival order (an evicted pod keeps its original arrival).
  std::sort(pending_.begin(), pending_.end(), [&](std::size_t x, std::size_t y) {
    return pods_[x].arrival != pods_[y].arrival ? pods_[x].arrival < pods_[y].arrival : x < y;
  });
  sample(cycle);
  return true;
}

/// `victim` stops and waits again (its departure entry goes stale; it starts over when it runs).
void Replay::evict(std::size_t victim, std::size_t for_pod) {
  stop(victim);
  (void)state_.observe(pods_[victim].pod);
  ++run_number_[victim];
  ++row(victim).preemptions_suffered;
  ++row(for_pod).preemptions_caused;
  why_[victim] = std::make_shared<const std::string>(fmt::format("evicted to make room for {}", pods_[for_pod].pod.key()));
  pending_since_[victim] = clock_;
  pending_.push_back(victim);
}

/// The timeline point after a cycle (fragmentation recomputed only for nodes that changed).
void Replay::sample(std::int64_t cycle) {
  if (!options_.timeline) return;
  TimelinePoint point;
  point.time = cycle;
  fragments_->refresh(state_.cluster());
  point.fragmentation_pct = fragments_->ratio_pct();
  const queues::QueueBook& book = *state_.book();
  std::int64_t held = 0;
  for (std::size_t q : leaves_) {
    held += book.allocated(q)[Resource::kGpu];
    point.allocated.push_back(static_cast<double>(book.allocated(q)[Resource::kGpu]) / 1000.0);
    point.fair_share.push_back(static_cast<double>(book.fair_share(q)[Resource::kGpu]) / 1000.0);
  }
  point.pending.assign(leaves_.size(), 0);
  for (std::size_t i : pending_) {
    point.pending[slot_[i]] += static_cast<double>(pending_gpu_[i]) / 1000.0;
  }
  const std::int64_t total = state_.total()[Resource::kGpu];
  point.capacity_gpus = static_cast<double>(total) / 1000.0;
  point.cluster_allocated_pct = total > 0 ? 100.0 * static_cast<double>(held) / static_cast<double>(total) : 0;
  if (!report_.timeline.empty() && report_.timeline.back().time == cycle) {
    report_.timeline.back() = std::move(point);  // a second session in the same cycle
  } else {
    report_.timeline.push_back(std::move(point));
  }
}

ReplayReport Replay::run() {
  std::size_t next = 0;
  clock_ = pods_.empty() ? 0 : pods_.front().arrival;
  report_.start = clock_;
  auto drop_stale = [&] {
    while (!running_.empty() && std::get<2>(running_.top()) != run_number_[std::get<1>(running_.top())]) running_.pop();
  };
  while (true) {
    drop_stale();
    const bool wakes = !pending_.empty() && shield_lapse_ && *shield_lapse_ > clock_;  // a lapse matters only to a waiting pod
    if (next >= pods_.size() && running_.empty() && !wakes) break;
    // The next event, and the scheduling cycle that follows it.
    std::int64_t event = std::numeric_limits<std::int64_t>::max();
    if (next < pods_.size()) event = pods_[next].arrival;
    if (!running_.empty()) event = std::min(event, std::get<0>(running_.top()));
    if (wakes) event = std::min(event, *shield_lapse_);
    const std::int64_t cycle = (event + options_.period - 1) / options_.period * options_.period;
    while (!running_.empty() && std::get<0>(running_.top()) <= cycle) {
      const auto [time, i, run] = running_.top();
      running_.pop();
      if (run != run_number_[i]) continue;
      meter(time);
      stop(i);
      ++report_.events;
    }
    meter(cycle);  // arrivals count in fair shares from this cycle on
    while (next < pods_.size() && pods_[next].arrival <= cycle) arrive(next++);
    if (pending_.empty()) {  // no session to run, but departures change what each queue holds
      sample(cycle);
      continue;
    }
    // KAI's cycle: one session over every pending pod (allocate), then the other actions over
    // the pods still waiting.
    shield_lapse_.reset();  // this cycle's reclaim says again what it waits for
    run_cycle(cycle);
    if (!pending_.empty()) act(cycle);
  }
  report_.end = clock_;
  finish();
  return std::move(report_);
}

/// Pods still waiting never start; quotas over the whole span.
void Replay::finish() {
  for (std::size_t i : pending_) {
    QueueReport& r = row(i);
    ++r.never_started;
    if (options_.per_pod) report_.pods[i].pending_seconds += report_.end - pending_since_[i];
    if (!select(empty_.cluster(), pods_[i].pod, *policy_)) {
      ++r.never_startable;
    } else if (r.longest_wait.seconds != std::numeric_limits<std::int64_t>::max()) {  // the first that waits for ever
      r.longest_wait = LongestWait{pods_[i].pod.key(), std::numeric_limits<std::int64_t>::max(), why_[i] ? *why_[i] : std::string()};
    }
  }
  for (std::size_t s = 0; s < leaves_.size(); ++s) {
    const std::int64_t quota = state_.book()->deserved(leaves_[s])[Resource::kGpu];
    report_.deserved.push_back(quota == queues::kUnlimited ? std::nan("") : static_cast<double>(quota) / 1000.0);
    if (quota != queues::kUnlimited) {
      report_.queues[s].deserved_gpu_hours = static_cast<double>(quota) / 1000.0 * static_cast<double>(report_.end - report_.start) / 3600.0;
    }
  }
}

}  // namespace

Result<ReplayReport> replay(std::vector<NodeSpec> nodes, std::vector<queues::QueueSpec> queue_specs, const TimedWorkload& workload,
                            const ReplayOptions& options) {
  Replay r(workload, options);
  if (Status st = r.load(std::move(nodes), std::move(queue_specs)); !st.is_ok()) return st;
  return r.run();
}

}  // namespace fracpack::quota
