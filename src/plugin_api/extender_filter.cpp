// The extender core's scheduling questions: Filter (over a candidate list or every node),
// Prioritize and Explain, and the checks a Filter answer is made of (queue admission, gangs, pods
// pinned to a binding, the cached verdicts).
#include <algorithm>
#include <mutex>
#include <unordered_set>

#include <fmt/format.h>

#include "fracpack/core/quoting.hpp"
#include "plugin_api/extender_impl.hpp"

namespace fracpack::api {
namespace {

/// A pod the state does not hold, held pending for one question (a search, an outlook) and
/// forgotten again when the question is answered.
class PendingForNow {
 public:
  /// `hold`: whether to hold it when the state does not.
  PendingForNow(SchedulingState& state, const PodRequest& pod, bool hold) : state_(state), key_(pod.key()) {
    if (!hold || state.pod(key_) != nullptr) return;
    added_ = true;
    pending_ = state.observe(pod) == PodStanding::kPending;
  }
  ~PendingForNow() {
    if (added_) (void)state_.forget(key_);
  }
  PendingForNow(const PendingForNow&) = delete;
  PendingForNow& operator=(const PendingForNow&) = delete;
  /// False when observing it did not leave it pending: there is nothing to ask.
  [[nodiscard]] bool usable() const { return pending_; }

 private:
  SchedulingState& state_;
  std::string key_;
  bool added_ = false;
  bool pending_ = true;
};

}  // namespace

Result<FilterAnswer> ExtenderImpl::filter(const json& object, NodeNames nodes) {
  auto pod = decode_seen(object);
  if (!pod) return pod.status();
  const auto gang = plan_gang(*pod);
  std::shared_lock lock(mu_);
  FilterAnswer answer = answer_listed(*pod, gang, nodes);
  note_refusal(*pod, answer);  // under the lock: a watch batch that frees room after this answer sees it
  mark_nodes_refusal(answer);
  return answer;
}

Result<FilterAnswer> ExtenderImpl::filter_all(const json& object, std::size_t max_nodes) {
  auto pod = decode_seen(object);
  if (!pod) return pod.status();
  const auto gang = plan_gang(*pod);
  std::shared_lock lock(mu_);
  FilterAnswer answer = answer_cluster(*pod, gang, max_nodes);
  note_refusal(*pod, answer);
  mark_nodes_refusal(answer);
  return answer;
}

FilterAnswer ExtenderImpl::answer_listed(const PodRequest& pod, const std::optional<SchedulingState::GangDecision>& gang,
                                         NodeNames nodes) {
  const ClusterState& cluster = state_.cluster();
  FilterAnswer answer;
  std::vector<std::size_t> known;
  known.reserve(nodes.size());
  const auto resolved = names_.resolve(cluster, nodes);  // held: another call may evict it
  const auto& positions = *resolved;
  std::vector<bool> listed(cluster.node_count());  // a node sent twice is answered once
  std::unordered_set<std::string_view> unknown;
  static const SharedReason kUnknown(std::string("node(s) not known to fracpack (send full Nodes, or apply them)"));
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (!positions[i]) {
      if (unknown.insert(nodes[i]).second) answer.unresolvable.emplace_back(nodes[i], kUnknown);
    } else if (!listed[*positions[i]]) {
      listed[*positions[i]] = true;
      known.push_back(*positions[i]);
    }
  }
  if (syncing(known, answer)) return answer;
  if (pinned_to_binding(pod, known, /*list_failing=*/true, answer)) return answer;
  if (refused_by_gang(gang, known, answer)) return answer;
  if (refused_by_queue(pod, known, answer)) return answer;
  add_verdicts(pod, known, /*list_passing=*/true, answer);
  if (options_.filter_best > 0 && answer.passed.size() > options_.filter_best && state_.is_ours(pod)) {
    // The policy's best nodes only: kube-scheduler picks among those, and scores only those.
    const auto ranked = verdicts_.rank(cluster, pod, *policy_, known);
    answer.passed.clear();
    for (std::size_t i = 0; i < options_.filter_best && i < ranked.size(); ++i) answer.passed.push_back(cluster.node(ranked[i].node).name);
  }
  return answer;
}

FilterAnswer ExtenderImpl::answer_cluster(const PodRequest& pod, const std::optional<SchedulingState::GangDecision>& gang,
                                          std::size_t max_nodes) {
  const ClusterState& cluster = state_.cluster();
  FilterAnswer answer;
  std::vector<std::size_t> all(cluster.node_count());
  for (std::size_t n = 0; n < all.size(); ++n) all[n] = n;
  if (syncing(all, answer)) return answer;
  if (pinned_to_binding(pod, all, /*list_failing=*/false, answer)) return answer;
  if (refused_by_gang(gang, all, answer)) return answer;
  if (refused_by_queue(pod, all, answer)) return answer;
  if (max_nodes == 1) {
    if (auto best = select(cluster, pod, *policy_)) {
      answer.passed.push_back(cluster.node(best->node).name);
      return answer;
    }
  } else {
    const auto ranked = verdicts_.rank(cluster, pod, *policy_, all);
    const std::size_t keep = max_nodes == 0 ? ranked.size() : std::min(max_nodes, ranked.size());
    for (std::size_t i = 0; i < keep; ++i) answer.passed.push_back(cluster.node(ranked[i].node).name);
    if (!answer.passed.empty()) return answer;
  }
  add_verdicts(pod, all, /*list_passing=*/false, answer);  // none passes: every node with its reason
  return answer;
}

Result<std::vector<HostScore>> ExtenderImpl::prioritize(const json& object, NodeNames nodes) {
  auto pod = decode_seen(object);
  if (!pod) return pod.status();
  std::shared_lock lock(mu_);
  const ClusterState& cluster = state_.cluster();
  std::vector<std::size_t> known;
  known.reserve(nodes.size());
  const auto resolved = names_.resolve(cluster, nodes);
  const auto& position = *resolved;  // nodes[i] → node index
  for (const auto& p : position) {
    if (p) known.push_back(*p);
  }
  std::vector<std::int64_t> score(cluster.node_count(), 0);
  if (!known.empty()) {
    for (const auto& r : verdicts_.rank(cluster, *pod, *policy_, known)) score[r.node] = static_cast<std::int64_t>(r.score + 0.5);
  }
  std::vector<HostScore> out;
  out.reserve(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) out.push_back({std::string(nodes[i]), position[i] ? score[*position[i]] : 0});
  return out;
}

Result<Explanation> ExtenderImpl::explain(const json& object) {
  auto pod = decode(object);
  if (!pod) return pod.status();
  std::unique_lock lock(mu_);  // a consolidation plan is sought on the ledger itself
  const ClusterState& cluster = state_.cluster();
  Explanation e;
  if (auto best = select(cluster, *pod, *policy_)) {  // it fits: say where, and how each node stands
    e.code = Code::kOk;
    std::size_t fit = 0;
    auto verdicts = filter_nodes(cluster, *pod, cluster.nodes_in_name_order());
    for (auto& [n, verdict] : verdicts) {
      fit += verdict.fits() ? 1 : 0;
      if (e.nodes.size() < options_.explain_nodes) {
        e.nodes.emplace_back(cluster.node(n).name, std::move(verdict));
      } else {
        ++e.nodes_omitted;
      }
    }
    e.summary = fmt::format("{}/{} nodes are available; the policy's choice is {}", fit, cluster.node_count(),
                            cluster.node(best->node).name);
  } else {
    e = fracpack::explain(cluster, *pod, nullptr, options_.explain_nodes);
    if (auto plan = consolidation_for(*pod)) {
      e.consolidation_node = plan->placements.front().node;
      for (const auto& m : plan->moves) e.consolidation_moves.push_back({m.pod, m.from_node, m.to_node});
      if (e.summary.ends_with('.')) e.summary.pop_back();  // "…Insufficient idle GPUs; consolidation …"
      e.summary += fmt::format("; consolidation would place it on {} by moving {} running pod(s)", e.consolidation_node,
                               plan->moves.size());
    }
  }
  if (state_.gang_needs_planning(*pod)) explain_gang(*pod, e);
  if (auto refusal = admission(*pod)) {
    e.summary = refusal->message + "; and " + e.summary;
    if (e.code == Code::kOk) e.code = Code::kUnschedulable;
  }
  return e;
}

void ExtenderImpl::explain_gang(const PodRequest& pod, Explanation& e) {
  using Kind = SchedulingState::GangDecision::Kind;
  // Filter records a pod it is asked about when nothing watches the API server (decode_seen):
  // the outlook counts it the same way, and forgets it after.
  SchedulingState::GangDecision d;
  {
    const PendingForNow held(state_, pod, !options_.watching);
    if (!held.usable()) return;
    d = state_.gang_outlook(pod, *policy_);  // what Filter would answer, nothing held
  }
  if (d.kind == Kind::kWaiting || d.kind == Kind::kRefused) {
    e.code = d.unresolvable ? Code::kUnschedulableAndUnresolvable : Code::kUnschedulable;
    e.summary = fmt::format("{}; on its own: {}", d.reason, e.summary);
  } else if (d.kind == Kind::kPlanned && !d.node.empty()) {
    e.summary += fmt::format("; its gang's plan would put it on {}", d.node);
  }
}

std::optional<queues::ConsolidationPlan> ExtenderImpl::consolidation_for(const PodRequest& pod) {
  if (!state_.is_ours(pod) || !pod.preemptible || pod.bound) return std::nullopt;
  if (state_.gang_needs_planning(pod)) return std::nullopt;  // a gang moves whole: its members are not placed alone
  const PodRecord* held = state_.pod(pod.key());
  if (held != nullptr && (held->standing != PodStanding::kPending || held->raw.uid != pod.uid)) return std::nullopt;
  // The plan is for a pending pod the state holds; one it does not hold yet (not watched, or a
  // pod asked about) is held for the search and forgotten again.
  const PendingForNow now(state_, pod, /*hold=*/true);
  if (!now.usable()) return std::nullopt;
  return state_.plan_consolidation({state_.pod(pod.key())->pod}, *policy_);
}

std::optional<queues::Refusal> ExtenderImpl::admission(const PodRequest& pod) const {
  if (!state_.is_ours(pod)) return std::nullopt;  // another scheduler's pod: its queues are not ours to apply
  return state_.admit(pod);
}

std::optional<SchedulingState::GangDecision> ExtenderImpl::plan_gang(const PodRequest& pod) {
  const auto now = std::chrono::steady_clock::now();
  {
    std::shared_lock lock(mu_);
    if (auto refused = state_.invalid_group_refusal(pod)) return refused;  // its PodGroup cannot be honoured: a read
    const auto lapse = state_.next_plan_expiry();
    if (!state_.gang_needs_planning(pod) && !(lapse && *lapse <= now)) return std::nullopt;
  }
  std::unique_lock lock(mu_);
  if (state_.expire_plans(now) > 0) freed_room();  // what lapsed plans held is free: no cluster event says so
  if (!synced_) return std::nullopt;
  auto decision = state_.plan_gang(pod, *policy_, now, options_.gang_hold);
  if (decision.kind == SchedulingState::GangDecision::Kind::kWaiting) note_gang_waiting(pod);
  std::vector<std::string> retry = take_retries();
  lock.unlock();
  if (decision.kind != SchedulingState::GangDecision::Kind::kNotAGang) retry.insert(retry.end(), decision.others.begin(), decision.others.end());
  if (!retry.empty() && retry_wanted_) retry_wanted_(retry);
  if (decision.kind == SchedulingState::GangDecision::Kind::kNotAGang) return std::nullopt;
  return decision;
}

void ExtenderImpl::mark_nodes_refusal(FilterAnswer& answer) {
  if (answer.passed.empty() && answer.refused_by == FilterAnswer::RefusedBy::kNothing) answer.refused_by = FilterAnswer::RefusedBy::kNodes;
}

bool ExtenderImpl::refused_by_gang(const std::optional<SchedulingState::GangDecision>& gang, const std::vector<std::size_t>& nodes,
                                   FilterAnswer& answer) const {
  using Kind = SchedulingState::GangDecision::Kind;
  if (!gang || (gang->kind != Kind::kWaiting && gang->kind != Kind::kRefused)) return false;
  const SharedReason why(gang->reason);
  auto& refused = gang->unresolvable ? answer.unresolvable : answer.failed;
  for (std::size_t n : nodes) refused.emplace_back(state_.cluster().node(n).name, why);
  answer.refused_by = gang->kind == Kind::kWaiting ? FilterAnswer::RefusedBy::kGangWaiting : FilterAnswer::RefusedBy::kGang;
  return true;
}

bool ExtenderImpl::refused_by_queue(const PodRequest& pod, const std::vector<std::size_t>& nodes, FilterAnswer& answer) const {
  auto refusal = admission(pod);
  if (!refusal) return false;
  const SharedReason why(refusal->message);
  for (std::size_t n : nodes) answer.failed.emplace_back(state_.cluster().node(n).name, why);
  answer.refused_by = FilterAnswer::RefusedBy::kQueue;
  return true;
}

bool ExtenderImpl::pinned_to_binding(const PodRequest& pod, const std::vector<std::size_t>& nodes, bool list_failing, FilterAnswer& answer) const {
  const std::string key = pod.key();
  const Allocation* held = state_.cluster().allocation(key);
  if (held == nullptr) return false;
  const PodRecord& record = *state_.pod(key);
  const std::string& held_uid = record.raw.uid;
  const bool other_pod = !held_uid.empty() && !pod.uid.empty() && held_uid != pod.uid;
  const std::string& where = state_.cluster().node(held->node).name;
  const SharedReason why(other_pod ? fmt::format("pod {} with UID {} is bound to node {} in fracpack's ledger; this pod (UID {}) is "
                                                 "another of that name: release the old one, or Sync",
                                                 key, excerpt(held_uid), where, excerpt(pod.uid))
                         : record.planned_until
                             ? fmt::format("pod {} is planned on node {} with its gang {}", key, where, pod.gang.value_or(""))
                             : fmt::format("pod {} is already bound to node {} in fracpack's ledger", key, where));
  for (std::size_t n : nodes) {
    if (!other_pod && n == held->node) {
      answer.passed.push_back(where);
    } else if (list_failing || other_pod) {
      answer.unresolvable.emplace_back(state_.cluster().node(n).name, why);
    }
  }
  if (answer.passed.empty()) answer.refused_by = FilterAnswer::RefusedBy::kBinding;
  return true;
}

void ExtenderImpl::add_verdicts(const PodRequest& pod, const std::vector<std::size_t>& nodes, bool list_passing, FilterAnswer& answer) {
  const ClusterState& cluster = state_.cluster();
  verdicts_.visit(cluster, pod, *policy_, nodes, [&](std::size_t n, const VerdictCache::Entry& e) {
    const std::string& name = cluster.node(n).name;
    if (e.fits()) {
      if (list_passing) answer.passed.push_back(name);
    } else if (e.code == Code::kUnschedulableAndUnresolvable) {
      answer.unresolvable.emplace_back(name, e.categories);
    } else {
      answer.failed.emplace_back(name, e.categories);
    }
  });
}

}  // namespace fracpack::api
