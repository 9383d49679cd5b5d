// SchedulingState: pods observed, adopted, bound and forgotten, and what queues count of them.
#include <algorithm>

#include <fmt/format.h>

#include "fracpack/k8s/decode.hpp"
#include "fracpack/core/quoting.hpp"
#include "fracpack/queues/charge.hpp"
#include "fracpack/binpack/scheduler.hpp"
#include "fracpack/queues/scheduling_state.hpp"

namespace fracpack {
namespace {

using queues::Amounts;

/// Nothing a scheduler acts on differs: the same pod, bound the same way, in the same queue terms.
bool same_terms(const PodRequest& a, const PodRequest& b) {
  return a.uid == b.uid && a.bound == b.bound && a.queue == b.queue && a.priority == b.priority &&
         a.preemptible == b.preemptible && a.gang == b.gang && a.scheduler_name == b.scheduler_name &&
         pod_shape(a) == pod_shape(b);
}

/// GPUs a bound pod's annotation must name: num-devices of a fraction, the count of whole GPUs.
std::size_t devices_needed(const PodRequest& pod) {
  if (const auto* f = pod.fraction()) return static_cast<std::size_t>(f->num_devices);
  if (const auto* w = pod.whole()) return static_cast<std::size_t>(w->count);
  return 0;
}

}  // namespace

const PodRecord* SchedulingState::pod(const std::string& key) const {
  auto it = pods_.find(key);
  return it == pods_.end() ? nullptr : &it->second;
}

std::size_t SchedulingState::pending_count() const {
  return static_cast<std::size_t>(
      std::count_if(pods_.begin(), pods_.end(), [](const auto& entry) { return entry.second.standing == PodStanding::kPending; }));
}

std::vector<std::string> SchedulingState::pending_keys(std::size_t most) const {
  std::vector<std::string> out;
  for (const auto& [key, record] : pods_) {
    if (record.standing == PodStanding::kPending) out.push_back(key);
  }
  std::sort(out.begin(), out.end());
  if (out.size() > most) out.resize(most);
  return out;
}

std::vector<std::string> SchedulingState::pod_keys() const {
  std::vector<std::string> out;
  out.reserve(pods_.size() + succeeded_.size());
  for (const auto& [key, _] : pods_) out.push_back(key);
  for (const auto& [key, _] : succeeded_) out.push_back(key);
  return out;
}

bool SchedulingState::is_ours(const PodRequest& pod) const {
  const auto& ours = options_.decode.scheduler_names;
  return pod.scheduler_name.empty() || std::find(ours.begin(), ours.end(), pod.scheduler_name) != ours.end();
}

Result<PodRequest> SchedulingState::decode_pod(const nlohmann::json& object) const {
  auto raw = k8s::decode_pod(object, options_.decode, classes_);
  if (!raw) return raw.status();
  return effective(std::move(*raw));
}

Result<PodRequest> SchedulingState::effective(PodRequest pod) const {
  if (!pod.gang) return pod;
  auto g = groups_.find(pod.gang_key());
  if (g == groups_.end()) return pod;
  const queues::PodGroupSpec& group = g->second;
  if (group.queue) pod.queue = *group.queue;
  if (group.priority_class) {
    auto value = classes_.find(*group.priority_class);
    if (!value) {
      return invalid_argument("PodGroup {}: spec.priorityClassName \"{}\" is not a known PriorityClass (built in: train 50, "
                              "build-preemptible 75, build 100, inference 125)",
                              excerpt(group.key()), excerpt(*group.priority_class));
    }
    pod.priority = *value;
    pod.preemptible = *value < kNonPreemptibleThreshold;
  }
  if (group.preemptibility) pod.preemptible = *group.preemptibility == "preemptible";
  return pod;
}

PodRequest SchedulingState::terms_of(const PodRequest& raw) const {
  auto terms = effective(raw);
  return terms ? std::move(*terms) : raw;  // an unknown class in the PodGroup: the pod's own terms
}

const PodRequest& SchedulingState::last_observed(const PodRequest& pod) const {
  const PodRecord* seen = this->pod(pod.key());
  const bool same = seen != nullptr && !seen->unreadable && !seen->raw.bound && seen->raw.uid == pod.uid;
  return same ? seen->raw : pod;
}

PodStanding SchedulingState::observe(const PodRequest& raw) {
  const DebugCheck check(*this);
  const std::string key = raw.key();
  succeeded_.erase(key);  // a live pod of that name: the Succeeded one is gone
  auto it = pods_.find(key);
  std::optional<std::int64_t> started = raw.started;
  if (it != pods_.end()) {
    const PodRecord& held = it->second;
    if (held.planned_until && !raw.bound && (held.raw.uid == raw.uid || raw.uid.empty())) {
      return held.standing;  // held for its gang until its Bind, or until the plan lapses
    }
    if (held.planned_until && raw.bound && raw.bound->node == held.raw.bound->node && held.raw.uid == raw.uid) {
      planned_.erase(key);  // bound where its gang's plan put it (by whichever replica): the plan is done
      it->second.planned_until.reset();
    }
    if (!it->second.unreadable && same_terms(it->second.raw, raw)) return it->second.standing;
    // Its terms changed, not its run: the same pod on the same node keeps the start held for it.
    const bool same_run = raw.bound && held.raw.bound && raw.bound->node == held.raw.bound->node && raw.uid == held.raw.uid;
    if (!started && same_run) started = held.raw.started;
    withdraw(key, it->second);
    it->second = PodRecord{};
  } else {
    it = pods_.emplace(key, PodRecord{}).first;
  }
  it->second.raw = raw;
  it->second.raw.started = started;
  place_record(key, it->second);
  return it->second.standing;
}

PodStanding SchedulingState::observe_unreadable(const std::string& key, const std::string& node, const std::vector<int>& devices,
                                                const std::string& reason) {
  const DebugCheck check(*this);
  succeeded_.erase(key);  // a running pod of that name: the Succeeded one is gone
  if (auto it = pods_.find(key); it != pods_.end()) {
    withdraw(key, it->second);
    pods_.erase(it);
  }
  PodRecord& record = pods_[key];
  const auto slash = key.find('/');
  record.raw.namespace_name = key.substr(0, slash);
  record.raw.name = key.substr(slash + 1);
  record.raw.bound = Binding{node, devices};
  record.pod = record.raw;
  record.unreadable = true;
  record.unreadable_reason = reason;
  record.ours = false;
  record.note = reason;
  adopt(key, record);
  return record.standing;
}

bool SchedulingState::fence_claim(const std::string& key, const std::vector<int>& gpus) {
  const DebugCheck check(*this);
  auto it = pods_.find(key);
  if (it == pods_.end() || it->second.standing != PodStanding::kBound) return false;
  if (!cluster_.set_fences(key, gpus)) return false;
  it->second.claim_fence = cluster_.allocation(key)->fenced;
  return true;
}

bool SchedulingState::forget(const std::string& key) {
  const DebugCheck check(*this);
  succeeded_.erase(key);
  auto it = pods_.find(key);
  if (it == pods_.end()) return false;
  withdraw(key, it->second);
  pods_.erase(it);
  return true;
}

void SchedulingState::place_record(const std::string& key, PodRecord& record) {
  record.pod = terms_of(record.raw);
  record.ours = is_ours(record.pod);
  if (record.pod.gang) group_members_[record.pod.gang_key()].insert(key);
  if (!record.raw.bound) {
    record.standing = record.ours ? PodStanding::kPending : PodStanding::kIgnored;
    if (record.ours) add_pending(record.pod, 1);
    return;
  }
  adopt(key, record);
}

void SchedulingState::adopt(const std::string& key, PodRecord& record) {
  const Binding& b = *record.raw.bound;
  auto n = cluster_.find_node(b.node);
  if (!n) {
    record.standing = PodStanding::kWaitingForNode;
    record.note = fmt::format("bound to node {}, which is not in the cluster", b.node);
    waiting_[b.node].insert(key);
    return;
  }
  const PodRequest& pod = record.pod;
  auto conflict = [&](std::string why, const std::vector<int>& fence) {
    (void)cluster_.hold_conflict(key, *n, record.unreadable ? nullptr : &pod, fence);
    record.standing = PodStanding::kConflict;
    record.note = std::move(why);
  };
  if (record.unreadable) {
    std::vector<int> fence = b.devices;
    if (fence.empty()) {  // what it holds is unknown: none of the node's GPUs is safe to hand out
      for (const auto& gpu : cluster_.node(*n).gpus) fence.push_back(gpu.index);
    }
    conflict(fmt::format("a running pod that fails validation: {}; GPU(s) {} are fenced off from new placements", record.note,
                         fence.empty() ? std::string("none (the node has no GPUs)") : fmt::format("{}", fmt::join(fence, ","))),
             fence);
    return;
  }
  std::optional<std::vector<int>> devices;
  if (!b.devices.empty()) devices = b.devices;
  const bool slots = pod.whole() != nullptr && cluster_.node(*n).sharing == SharingKind::kReplicas;
  if (devices && devices->size() != devices_needed(pod) && !slots) {
    conflict(fmt::format("its gpus.devices annotation lists {} GPU(s), the pod asks for {}; GPU(s) {} are fenced off from new "
                         "placements",
                         devices->size(), devices_needed(pod), fmt::join(*devices, ",")),
             *devices);
    return;
  }
  Status st = cluster_.adopt(pod, *n, devices);
  if (!st.is_ok()) {
    std::string reason = st.message();
    const std::string prefix = fmt::format("pod {} on node {}: ", key, b.node);
    if (reason.starts_with(prefix)) reason.erase(0, prefix.size());
    std::vector<int> fence = devices.value_or(std::vector<int>{});
    const auto& usage = cluster_.usage(*n).gpus;
    if (!devices && devices_needed(pod) > usage.size()) {
      // More GPUs than the node has: no kubelet admits it, so it holds none of them.
      reason += fmt::format("; the node has {} GPU(s), so its kubelet cannot admit it and no GPU is fenced", usage.size());
    } else if (!devices) {
      // It names no GPUs and the ledger has too few free ones for it: it runs on some of them all
      // the same, so as many of the free ones as it asks for are held back from new pods.
      for (std::size_t g = 0; g < usage.size() && fence.size() < devices_needed(pod); ++g) {
        if (usage[g].state == GpuState::kIdle && !usage[g].fenced()) fence.push_back(static_cast<int>(g));
      }
    }
    if (!fence.empty()) reason += fmt::format("; GPU(s) {} are fenced off from new placements", fmt::join(fence, ","));
    conflict(std::move(reason), fence);
    return;
  }
  record.standing = PodStanding::kBound;
  record.note.clear();
  if (!record.claim_fence.empty()) (void)cluster_.set_fences(key, record.claim_fence);  // re-adopted: an edit still stands
  record.charge = queues::charge_placed(pod, cluster_, *cluster_.allocation(key));
  if (!record.ours) cluster_.set_holder(key, Holder::kForeign);
  charge(record, 1);
}

void SchedulingState::charge(const PodRecord& record, int sign) {
  mark_fair_dirty();
  if (!record.ours) {
    if (sign > 0) {
      foreign_ += record.charge;
    } else {
      foreign_ -= record.charge;
    }
    return;
  }
  QueueTotals& t = totals_[record.pod.queue];
  const Amounts none;
  const Amounts& np = record.pod.preemptible ? none : record.charge;
  if (sign > 0) {
    t.allocated += record.charge;
    t.non_preemptible += np;
  } else {
    t.allocated -= record.charge;
    t.non_preemptible -= np;
  }
  if (auto q = leaf_queue(record.pod)) book_->charge(*q, record.charge, record.pod.preemptible, sign);
}

void SchedulingState::mark_fair_dirty() {
  std::lock_guard lock(lazy_mu_);
  fair_dirty_ = true;
}

void SchedulingState::withdraw(const std::string& key, PodRecord& record, bool readopt) {
  if (record.pod.gang) {
    auto g = group_members_.find(record.pod.gang_key());
    if (g != group_members_.end() && g->second.erase(key) == 1 && g->second.empty()) group_members_.erase(g);
  }
  switch (record.standing) {
    case PodStanding::kPending:
      add_pending(record.pod, -1);
      break;
    case PodStanding::kIgnored:
      break;
    case PodStanding::kWaitingForNode:
      if (auto w = waiting_.find(record.raw.bound->node); w != waiting_.end()) {
        w->second.erase(key);
        if (w->second.empty()) waiting_.erase(w);
      }
      break;
    case PodStanding::kBound:
    case PodStanding::kConflict: {
      if (record.planned_until) {
        planned_.erase(key);
        record.planned_until.reset();
      }
      if (record.standing == PodStanding::kBound) charge(record, -1);
      const std::size_t node = cluster_.allocation(key)->node;
      cluster_.release(key);
      if (readopt) readopt_conflicts(node);  // a conflict on this node may fit now that this pod has gone (two pods claimed one GPU)
      break;
    }
  }
  record.standing = PodStanding::kIgnored;
}

void SchedulingState::readopt_conflicts(std::size_t node) {
  std::vector<std::string> conflicts;
  for (const std::string& other : cluster_.pods_on(node)) {
    if (cluster_.allocation(other)->holder == Holder::kConflict && !pods_.at(other).unreadable) conflicts.push_back(other);
  }
  std::sort(conflicts.begin(), conflicts.end(), [&](const std::string& a, const std::string& b) {
    return cluster_.allocation(a)->seq < cluster_.allocation(b)->seq;  // retried in the order they were held
  });
  // All of them out first: conflicts fence each other's GPUs, and would keep each other out.
  for (const std::string& other : conflicts) cluster_.release(other);
  for (const std::string& other : conflicts) adopt(other, pods_.at(other));
}

void SchedulingState::readopt(std::size_t node, std::vector<Allocation> taken, std::vector<std::string>* conflicts) {
  // The node's GPUs changed: every pod on it is adopted again on the new GPUs, in record order,
  // those that name their devices first (the others' GPUs are a guess, which must not take theirs).
  std::stable_partition(taken.begin(), taken.end(), [&](const Allocation& a) {
    const PodRecord& r = pods_.at(a.pod);
    return r.unreadable || !r.raw.bound || !r.raw.bound->devices.empty() || r.raw.cpu_only();
  });
  for (const Allocation& a : taken) {
    PodRecord& record = pods_.at(a.pod);
    if (record.standing == PodStanding::kBound) charge(record, -1);
    adopt(a.pod, record);
    if (record.standing == PodStanding::kConflict && conflicts != nullptr) {
      conflicts->push_back(fmt::format("{}: {}", a.pod, record.note));
    }
  }
  (void)node;
}

void SchedulingState::rederive(const std::string& group_key) {
  auto members = group_members_.find(group_key);
  if (members == group_members_.end()) return;
  const std::vector<std::string> keys(members->second.begin(), members->second.end());
  for (const std::string& key : keys) {
    PodRecord& record = pods_.at(key);
    const PodRequest terms = terms_of(record.raw);
    if (terms.queue == record.pod.queue && terms.priority == record.pod.priority && terms.preemptible == record.pod.preemptible) continue;
    if (record.standing == PodStanding::kPending) {
      add_pending(record.pod, -1);
      record.pod = terms;
      add_pending(record.pod, 1);
    } else if (record.standing == PodStanding::kBound) {
      charge(record, -1);
      record.pod = terms;
      cluster_.set_job_terms(key, terms.queue, terms.priority, terms.preemptible);
      charge(record, 1);
    } else {
      record.pod = terms;
    }
  }
}

Result<Allocation> SchedulingState::bind(const PodRequest& given, std::size_t n, const Policy& policy) {
  const DebugCheck check(*this);
  // Admitted, reserved and charged on its PodGroup's terms as they are now, applied to the pod as
  // last observed when it was (`given` may carry the terms of an earlier PodGroup), as a watch
  // reading it back will place it; record_bound() reads the same.
  const PodRequest pod = terms_of(last_observed(given));
  const std::string key = pod.key();
  if (n >= cluster_.node_count()) return Status(Code::kNotFound, fmt::format("pod {}: node #{} does not exist", key, n));
  const std::string& node = cluster_.node(n).name;
  if (auto it = pods_.find(key); it != pods_.end() && it->second.planned_until && it->second.raw.bound->node == node) {
    it->second.planned_until.reset();  // the gang's plan, confirmed: bound where it was planned (and admitted)
    planned_.erase(key);
    return *cluster_.allocation(key);
  }
  if (is_ours(pod)) {
    if (auto refusal = admit(pod)) return Status(Code::kResourceExhausted, refusal->message, "queue:" + refusal->queue);
  }
  if (auto refused = invalid_group_refusal(pod)) return Status(Code::kUnschedulableAndUnresolvable, fmt::format("pod {}: {}", key, refused->reason));
  auto ranked = rank_nodes(cluster_, pod, policy, {n});  // this node only: O(1), not an index search
  if (const PodRecord* held = this->pod(key); held != nullptr && (held->standing == PodStanding::kBound || held->standing == PodStanding::kConflict)) {
    return Status(Code::kAlreadyExists, fmt::format("pod {} already holds resources on node {}", key, held->raw.bound->node));
  }
  if (ranked.empty()) {
    auto why = filter_nodes(cluster_, pod, {n});
    const Verdict& v = why.front().second;
    // A lost race (the node filled up since Filter: retry from Filter) or a node that could never
    // take the pod (retrying cannot help: kUnschedulableAndUnresolvable, FAILED_PRECONDITION).
    const bool never = v.code == Code::kUnschedulableAndUnresolvable;
    return Status(never ? Code::kUnschedulableAndUnresolvable : Code::kUnschedulable,
                  fmt::format("pod {} {} node {}: {}", key, never ? "can never fit" : "no longer fits", node, v.text()),
                  "node:" + node);
  }
  if (Status st = cluster_.reserve(pod, n, ranked.front().choice); !st.is_ok()) return st;
  record_bound(pod, /*session_charged=*/false);
  return *cluster_.allocation(key);
}

void SchedulingState::record_bound(const PodRequest& pod, bool session_charged) {
  const std::string key = pod.key();
  // The pod as decoded, not its PodGroup's terms: a later PodGroup edit re-reads them from it.
  PodRequest raw = last_observed(pod);
  if (auto it = pods_.find(key); it != pods_.end()) {  // it was pending (or another scheduler's)
    withdraw(key, it->second);
    pods_.erase(it);
  }
  const Allocation& held = *cluster_.allocation(key);
  PodRecord& record = pods_[key];
  record.raw = std::move(raw);
  record.raw.bound = Binding{cluster_.node(held.node).name, held.choice.gpus};
  record.pod = terms_of(record.raw);  // as place_record() reads it
  mark_started(key, record);
  record.ours = is_ours(record.pod);  // as the watch and a restart will read it
  record.standing = PodStanding::kBound;
  if (record.pod.gang) group_members_[record.pod.gang_key()].insert(key);
  record.charge = queues::charge_placed(record.pod, cluster_, held);
  if (!record.ours) cluster_.set_holder(key, Holder::kForeign);
  const bool book_charged = session_charged && book_ != nullptr;
  if (book_charged && !record.ours) {  // place takes every pod it is given; another scheduler's counts in no queue
    if (auto q = leaf_queue(record.pod)) book_->charge(*q, record.charge, record.pod.preemptible, -1);
  }
  if (!book_charged || !record.ours) {
    charge(record, 1);
    return;
  }
  QueueTotals& t = totals_[record.pod.queue];  // the session charged the book: the totals only
  t.allocated += record.charge;
  if (!record.pod.preemptible) t.non_preemptible += record.charge;
  mark_fair_dirty();
}

std::vector<queues::JobOutcome> SchedulingState::run_session(const Policy& policy, const std::vector<queues::Job>& jobs,
                                                             const queues::SessionOptions& options) {
  std::vector<const queues::Job*> pointers;
  pointers.reserve(jobs.size());
  for (const queues::Job& job : jobs) pointers.push_back(&job);
  return run_session(policy, pointers, options);
}

std::vector<queues::JobOutcome> SchedulingState::run_session(const Policy& policy, const std::vector<const queues::Job*>& jobs,
                                                             const queues::SessionOptions& options) {
  const DebugCheck check(*this);
  std::vector<queues::JobOutcome> out;
  if (book_) {
    ensure_fair_shares();
    out = queues::run_session(cluster_, *book_, policy, jobs, total(), options);  // charges the book
  } else {  // no queues: jobs in input order
    queues::FailedPods failed;
    for (const queues::Job* each : jobs) {
      const queues::Job& job = *each;
      queues::JobOutcome o;
      o.job = &job;
      if (job.single_pod()) {
        o.members.push_back(queues::place_in_session(cluster_, job.members.front(), policy, options, failed));
      } else {
        o.members = place_gang(cluster_, Gang{job.name, job.members, job.min_member, job.rule.get(), job.running}, policy, options.detailed,
                               options.explain_cache);
      }
      out.push_back(std::move(o));
    }
  }
  record_session(out);
  return out;
}

std::vector<queues::JobOutcome> SchedulingState::run_session(const Policy& policy, const queues::AlikeRuns& runs,
                                                             const queues::SessionOptions& options) {
  if (!book_) return run_session(policy, queues::jobs_of(runs), options);
  const DebugCheck check(*this);
  ensure_fair_shares();
  auto out = queues::run_session(cluster_, *book_, policy, runs, total(), options);  // charges the book
  record_session(out);
  return out;
}

void SchedulingState::record_session(const std::vector<queues::JobOutcome>& outcomes) {
  for (const auto& o : outcomes) {
    for (std::size_t i = 0; i < o.members.size(); ++i) {
      if (o.members[i].placement) record_bound(o.job->members[i], /*session_charged=*/true);
    }
  }
}

std::string SchedulingState::check_invariants() const {
  if (std::string broken = cluster_.check_invariants(); !broken.empty()) return broken;
  std::unordered_map<std::string, QueueTotals> totals;
  Amounts foreign;
  for (const auto& [key, record] : pods_) {
    const Allocation* a = cluster_.allocation(key);
    const bool holds = record.standing == PodStanding::kBound || record.standing == PodStanding::kConflict;
    if (holds != (a != nullptr)) return fmt::format("pod {} is {} but the ledger {}", key, standing_name(record.standing), a ? "holds it" : "does not");
    if (a != nullptr && (a->holder == Holder::kConflict) != (record.standing == PodStanding::kConflict)) {
      return fmt::format("pod {}: conflict standing and ledger disagree", key);
    }
    if (record.standing != PodStanding::kBound) continue;
    if (!record.ours) {
      foreign += record.charge;
      continue;
    }
    totals[record.pod.queue].allocated += record.charge;
    if (!record.pod.preemptible) totals[record.pod.queue].non_preemptible += record.charge;
  }
  if (cluster_.allocation_count() > pods_.size()) return "the ledger holds pods the state has no record of";
  for (const auto& [key, _] : succeeded_) {
    if (pods_.contains(key)) return fmt::format("pod {} is both Succeeded and held", key);
  }
  for (const auto& key : planned_) {
    auto it = pods_.find(key);
    if (it == pods_.end() || !it->second.planned_until || it->second.standing != PodStanding::kBound) {
      return fmt::format("pod {}: listed as planned for its gang, but not held so", key);
    }
  }
  if (!(foreign == foreign_)) return "foreign usage differs from a recount";
  for (const auto& [name, t] : totals_) {
    const QueueTotals& want = totals[name];
    if (!(t.allocated == want.allocated) || !(t.non_preemptible == want.non_preemptible)) {
      return fmt::format("queue {}: totals differ from a recount of its pods", name);
    }
  }
  for (const auto& [name, t] : totals) {
    if (!totals_.contains(name) && !(t.allocated == Amounts{})) return fmt::format("queue {}: pods counted nowhere", name);
  }
  if (book_) {
    for (std::size_t q = 0; q < tree_->size(); ++q) {
      if (!tree_->is_leaf(q)) continue;
      auto it = totals.find(tree_->queue(q).name);
      const Amounts want = it == totals.end() ? Amounts{} : it->second.allocated;
      if (!(book_->allocated(q) == want)) return fmt::format("queue {}: the book's allocation differs from its pods", tree_->queue(q).name);
    }
  }
  return {};
}

}  // namespace fracpack
