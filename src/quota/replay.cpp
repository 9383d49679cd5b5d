#include "fracpack/quota/replay.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "fracpack/cluster_state.hpp"
#include "fracpack/fragmentation.hpp"
#include "fracpack/policy.hpp"
#include "fracpack/queues/charge.hpp"
#include "fracpack/queues/queue_book.hpp"
#include "fracpack/queues/queue_tree.hpp"
#include "fracpack/queues/reclaim.hpp"
#include "fracpack/queues/session.hpp"
#include "fracpack/scheduler.hpp"

namespace fracpack::quota {
namespace {

using queues::Amounts;
using queues::Resource;

/// Integrates each leaf's allocated GPU, fair share and over-quota time between events.
class Meter {
 public:
  explicit Meter(std::vector<std::size_t> leaves) : leaves_(std::move(leaves)) {}
  void advance(const queues::QueueBook& book, std::int64_t from, std::int64_t to, std::vector<QueueReport>& out) const {
    if (to <= from) return;
    const double hours = static_cast<double>(to - from) / 3600.0;
    for (std::size_t i = 0; i < leaves_.size(); ++i) {
      const std::size_t q = leaves_[i];
      const auto gpu = static_cast<double>(book.allocated(q)[Resource::kGpu]) / 1000.0;
      out[i].gpu_hours += gpu * hours;
      out[i].fair_share_gpu_hours += static_cast<double>(book.fair_share(q)[Resource::kGpu]) / 1000.0 * hours;
      const std::int64_t quota = book.deserved(q)[Resource::kGpu];
      if (quota != queues::kUnlimited && book.allocated(q)[Resource::kGpu] > quota) {
        out[i].over_quota_seconds += static_cast<double>(to - from);
      }
    }
  }

 private:
  std::vector<std::size_t> leaves_;
};

}  // namespace

Result<ReplayReport> replay(std::vector<NodeSpec> nodes, std::vector<queues::QueueSpec> queue_specs, const TimedWorkload& workload,
                            const ReplayOptions& options) {
  if (options.period < 1) return invalid_argument("--period {}: must be at least 1 second", options.period);
  // fgd, fgd-cpu and fgd-lp measure fragmentation for a target workload: the workload's own typical pods,
  // which the fragmentation timeline uses too.
  std::vector<PodRequest> requests_for_shapes;
  requests_for_shapes.reserve(workload.pods.size());
  for (const auto& p : workload.pods) requests_for_shapes.push_back(p.pod);
  auto typical = std::make_shared<const std::vector<TypicalPod>>(typical_pods(requests_for_shapes));
  if (typical->empty()) typical = std::make_shared<const std::vector<TypicalPod>>(1, TypicalPod{});
  auto policy = make_policy(options.policy, PolicyOptions{0, typical});
  if (!policy) return policy.status();
  auto empty = ClusterState::create(nodes, options.placement);  // for "could this pod ever start?"
  if (!empty) return empty.status();
  auto created = ClusterState::create(std::move(nodes), options.placement);
  if (!created) return created.status();
  ClusterState& state = *created;
  auto built = queues::QueueTree::build(std::move(queue_specs));
  if (!built) return built.status();
  const queues::QueueTree& tree = *built;
  queues::QueueBook book(tree);
  book.set_refusal_messages(false);  // the replay counts refusals, it never shows them

  const auto& pods = workload.pods;
  std::vector<std::size_t> leaf_of(pods.size());
  for (std::size_t i = 0; i < pods.size(); ++i) {
    auto q = tree.find(pods[i].pod.queue);
    if (!q || !tree.is_leaf(*q)) {
      return invalid_argument("pod {}: queue \"{}\" is not a leaf Queue of the queue file{}", pods[i].pod.name, pods[i].pod.queue,
                              pods[i].pod.queue == DecodeConfig{}.default_queue ? " (a pod without the kai.scheduler/queue label goes to default-queue)" : "");
    }
    leaf_of[i] = *q;
  }
  ReplayReport report;
  std::vector<std::size_t> leaves;
  std::map<std::size_t, std::size_t> slot_of;  // queue index → report slot
  for (std::size_t q = 0; q < tree.size(); ++q) {
    if (!tree.is_leaf(q)) continue;
    slot_of[q] = leaves.size();
    leaves.push_back(q);
    QueueReport row;
    row.queue = tree.queue(q).name;
    report.queues.push_back(std::move(row));
  }
  Meter meter(leaves);
  const Amounts total = queues::cluster_total(state);

  // (time, pod index, run number): an entry whose run number is not the pod's current one belongs to
  // a run cut short by eviction and is skipped.
  using Departure = std::tuple<std::int64_t, std::size_t, std::uint32_t>;
  std::priority_queue<Departure, std::vector<Departure>, std::greater<>> running;
  std::vector<std::uint32_t> run_number(pods.size(), 0);
  std::map<std::string, std::size_t> index_of;
  for (std::size_t i = 0; i < pods.size(); ++i) index_of.emplace(pods[i].pod.key(), i);
  std::vector<std::size_t> pending;  // pod indices, in arrival order
  std::vector<Amounts> pending_charge(pods.size());
  std::size_t next = 0;
  std::int64_t clock = pods.empty() ? 0 : pods.front().arrival;
  report.start = clock;

  auto stop = [&](std::size_t i) {  // what a running pod holds goes back to the cluster and its queue
    const PodRequest& pod = pods[i].pod;
    if (const Allocation* a = state.allocation(pod.key())) {
      book.charge(leaf_of[i], queues::charge_placed(pod, state, *a), pod.preemptible, -1);
      state.release(pod.key());
    }
  };
  auto drop_stale = [&] {
    while (!running.empty() && std::get<2>(running.top()) != run_number[std::get<1>(running.top())]) running.pop();
  };
  auto depart = [&](const Departure& d) {
    meter.advance(book, clock, std::get<0>(d), report.queues);
    clock = std::max(clock, std::get<0>(d));
    stop(std::get<1>(d));
    ++report.events;
  };

  // Fragmentation for the workload's typical pods, recomputed only for nodes that changed.
  std::optional<FragmentationTotals> fragments;
  if (options.timeline) fragments.emplace(state, *typical);
  auto sample = [&](std::int64_t cycle) {
    if (!options.timeline) return;
    TimelinePoint point;
    point.time = cycle;
    fragments->refresh(state);
    point.fragmentation_pct = fragments->ratio_pct();
    std::int64_t held = 0;
    for (std::size_t q : leaves) {
      held += book.allocated(q)[Resource::kGpu];
      point.allocated.push_back(static_cast<double>(book.allocated(q)[Resource::kGpu]) / 1000.0);
      point.fair_share.push_back(static_cast<double>(book.fair_share(q)[Resource::kGpu]) / 1000.0);
    }
    point.cluster_allocated_pct = total[Resource::kGpu] > 0 ? 100.0 * static_cast<double>(held) / static_cast<double>(total[Resource::kGpu]) : 0;
    if (!report.timeline.empty() && report.timeline.back().time == cycle) {
      report.timeline.back() = std::move(point);  // a second session in the same cycle
    } else {
      report.timeline.push_back(std::move(point));
    }
  };
  auto held = [&] {  // what each queue holds: its request when nothing of it waits
    std::vector<Amounts> out(tree.size());
    for (std::size_t q = 0; q < tree.size(); ++q) out[q] = book.allocated(q);
    return out;
  };
  // Why each waiting pod is still waiting, as of its last cycle (shared: a reason is often the same
  // for thousands of pods, and assigning a pointer costs nothing).
  std::vector<std::shared_ptr<const std::string>> why(pods.size());
  // Reasons repeat (one per shape and ledger version, one per queue refusal): one copy of each.
  std::unordered_map<std::string, std::shared_ptr<const std::string>> reasons;
  auto intern = [&](std::string text) {
    if (reasons.size() > 100'000) reasons.clear();  // bounded; pods keep what they point at
    auto [it, fresh] = reasons.try_emplace(text);
    if (fresh) it->second = std::make_shared<const std::string>(std::move(text));
    return it->second;
  };
  auto note_start = [&](std::size_t i, std::int64_t waited) {
    LongestWait& longest = report.queues[slot_of[leaf_of[i]]].longest_wait;
    if (waited > longest.seconds) longest = LongestWait{pods[i].pod.key(), waited, why[i] ? *why[i] : std::string()};
    why[i].reset();
  };
  // One Job per pod, made when it arrives and kept while it waits (also after an eviction).
  std::vector<queues::Job> job_of(pods.size());
  auto make_job = [&](std::size_t i) {
    queues::Job& job = job_of[i];
    job.name = pods[i].pod.key();
    job.members = {pods[i].pod};
    job.min_member = 1;
    job.queue = leaf_of[i];
    job.priority = pods[i].pod.priority;
    job.preemptible = pods[i].pod.preemptible;
    job.created = pods[i].arrival;
    job.input_order = i;
    job.member_charges = {pending_charge[i]};
    job.charge = pending_charge[i];
  };
  auto run_cycle = [&](std::int64_t cycle) {
    std::vector<const queues::Job*> jobs;
    jobs.reserve(pending.size());
    std::vector<Amounts> requests = held();
    // A top-level queue whose terms admit none of its pending jobs gets nothing this session
    // (admission only tightens while a session places pods), and its turns are no-ops that change
    // no other queue's order: its jobs stay out of the session. The same outcome, without
    // thousands of refusals per cycle while a non-preemptible queue sits at its quota.
    std::vector<char> admits_some(tree.size(), 0);
    for (std::size_t i : pending) {
      const std::size_t q = leaf_of[i];
      if (admits_some[q] == 0 && (tree.path_to_root(q).size() > 1 || book.admits(q, pending_charge[i], pods[i].pod.preemptible))) {
        admits_some[q] = 1;
      }
    }
    std::vector<std::shared_ptr<const std::string>> refused(tree.size());  // this cycle's words per refusing queue
    for (std::size_t i : pending) {
      requests[leaf_of[i]] += pending_charge[i];
      if (admits_some[leaf_of[i]] != 0) {
        jobs.push_back(&job_of[i]);
        continue;
      }
      auto& reason = refused[leaf_of[i]];
      if (!reason) {  // once per queue and cycle: what its terms say to the first of its pods
        const auto refusal = book.admit(leaf_of[i], pending_charge[i], pods[i].pod.preemptible);
        reason = intern(refusal ? fmt::format("{} (queue {})", refusal->reason, refusal->queue) : "");
      }
      if (why[i] != reason) why[i] = reason;  // thousands of pods per cycle: no reference counting when unchanged
    }
    book.compute_fair_shares(total, requests);
    ExplainCache explain_cache;  // a pod that fits nowhere is explained once per shape and ledger version
    auto outcomes = queues::run_session(state, book, **policy, jobs, total, 0, &explain_cache);
    ++report.cycles;
    std::vector<bool> started(pods.size(), false);
    for (auto& o : outcomes) {  // in session order: map back by job
      const std::size_t i = o.job->input_order;
      started[i] = !o.refusal && !o.members.empty() && o.members.front().placement.has_value();
      if (started[i]) continue;
      std::shared_ptr<const std::string> reason;
      if (o.refusal) {
        reason = intern(o.refusal->reason + " (queue " + o.refusal->queue + ")");
      } else if (!o.members.empty()) {
        reason = intern(std::move(o.members.front().why.summary));
      }
      if (why[i] != reason) why[i] = std::move(reason);
    }
    std::vector<std::size_t> still;
    for (const std::size_t i : pending) {
      if (!started[i]) {
        still.push_back(i);
        continue;
      }
      QueueReport& qr = report.queues[slot_of[leaf_of[i]]];
      ++qr.started;
      qr.pending_seconds.push_back(cycle - pods[i].arrival);
      note_start(i, cycle - pods[i].arrival);
      ++run_number[i];
      if (pods[i].run_seconds) running.emplace(cycle + *pods[i].run_seconds, i, run_number[i]);
    }
    pending = std::move(still);
    sample(cycle);
  };
  // Evicts victims for pending pods (not ones evicted this cycle); true when any pod was evicted.
  // Pods alike for reclaim: same shape, queue, priority and preemptibility.
  std::vector<std::size_t> alike_of(pods.size());
  {
    std::map<std::string, std::size_t> ids;
    for (std::size_t i = 0; i < pods.size(); ++i) {
      const std::string key = fmt::format("{}#{}#{}#{}", pod_shape(pods[i].pod), leaf_of[i], pods[i].pod.priority, pods[i].pod.preemptible);
      alike_of[i] = ids.emplace(key, ids.size()).first->second;
    }
  }
  auto reclaim = [&](std::set<std::size_t>& evicted_now) {
    bool any = false;
    std::vector<std::size_t> back;
    // Pods alike (shape, queue, priority) get the same "no victims" until something is evicted:
    // under contention hundreds of waiting pods share a few shapes.
    std::set<std::size_t> hopeless;
    for (std::size_t i : pending) {
      if (evicted_now.count(i) != 0) continue;
      const std::size_t alike = alike_of[i];
      if (hopeless.count(alike) != 0) continue;
      auto victims = queues::find_victims(state, book, pods[i].pod, leaf_of[i], pending_charge[i], **policy);
      if (!victims) {
        hopeless.insert(alike);
        continue;
      }
      hopeless.clear();
      for (const auto& key : victims->pods) {
        auto it = index_of.find(key);
        if (it == index_of.end()) continue;
        const std::size_t v = it->second;
        stop(v);
        ++run_number[v];  // its departure entry goes stale; it starts over when it runs again
        ++report.queues[slot_of[leaf_of[v]]].preemptions_suffered;
        why[v] = std::make_shared<const std::string>(fmt::format("evicted to make room for {}", pods[i].pod.key()));
        ++report.queues[slot_of[leaf_of[i]]].preemptions_caused;
        evicted_now.insert(v);
        back.push_back(v);
        any = true;
      }
    }
    if (back.empty()) return false;
    for (std::size_t v : back) pending.push_back(v);
    // Pending pods stay in arrival order (an evicted pod keeps its original arrival).
    std::sort(pending.begin(), pending.end(), [&](std::size_t x, std::size_t y) {
      return pods[x].arrival != pods[y].arrival ? pods[x].arrival < pods[y].arrival : x < y;
    });
    return any;
  };

  while (true) {
    drop_stale();
    if (next >= pods.size() && running.empty()) break;
    // The next event, and the scheduling cycle that follows it.
    std::int64_t event = next < pods.size() ? pods[next].arrival : std::get<0>(running.top());
    if (!running.empty()) event = std::min(event, std::get<0>(running.top()));
    const std::int64_t cycle = (event + options.period - 1) / options.period * options.period;
    while (!running.empty() && std::get<0>(running.top()) <= cycle) {
      const Departure d = running.top();
      running.pop();
      if (std::get<2>(d) == run_number[std::get<1>(d)]) depart(d);
    }
    while (next < pods.size() && pods[next].arrival <= cycle) {
      pending_charge[next] = queues::charge_pending(pods[next].pod, state);
      make_job(next);
      pending.push_back(next++);
      ++report.events;
    }
    meter.advance(book, clock, cycle, report.queues);
    clock = std::max(clock, cycle);
    if (pending.empty()) {  // no session to run, but departures change what each queue asks for
      book.compute_fair_shares(total, held());
      sample(cycle);
      continue;
    }

    // One session over every pending pod: fair shares for this demand, then queue order. Then
    // reclaim for the pods still waiting, and when it evicted anything, one more session.
    std::set<std::size_t> evicted_now;
    for (int round = 0; round < 2 && !pending.empty(); ++round) {
      run_cycle(cycle);
      if (round == 1 || pending.empty()) break;
      if (!reclaim(evicted_now)) break;
    }
  }
  report.end = clock;
  for (std::size_t i : pending) {
    QueueReport& qr = report.queues[slot_of[leaf_of[i]]];
    ++qr.never_started;
    if (!select(*empty, pods[i].pod, **policy)) {
      ++qr.never_startable;
    } else if (qr.longest_wait.seconds != std::numeric_limits<std::int64_t>::max()) {  // the first that waits for ever
      qr.longest_wait = LongestWait{pods[i].pod.key(), std::numeric_limits<std::int64_t>::max(), why[i] ? *why[i] : std::string()};
    }
  }
  for (std::size_t s = 0; s < leaves.size(); ++s) {
    const std::int64_t quota = book.deserved(leaves[s])[Resource::kGpu];
    report.deserved.push_back(quota == queues::kUnlimited ? std::nan("") : static_cast<double>(quota) / 1000.0);
    if (quota != queues::kUnlimited) {
      report.queues[s].deserved_gpu_hours = static_cast<double>(quota) / 1000.0 * static_cast<double>(report.end - report.start) / 3600.0;
    }
  }
  return report;
}

}  // namespace fracpack::quota
