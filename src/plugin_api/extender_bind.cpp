// The extender core's Bind and Preempt: a bind is decided and reserved under the write lock and
// stored in one transaction before it is answered; what Bind writes on the pod (its GPUs).
#include <algorithm>
#include <set>
#include <mutex>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "fracpack/core/labels.hpp"
#include "fracpack/core/quoting.hpp"
#include "plugin_api/extender_impl.hpp"

namespace fracpack::api {

std::map<std::string, std::string> annotations_for(const PodRequest& pod, const GpuChoice& choice) {
  std::map<std::string, std::string> out;
  const GpuFraction* f = pod.fraction();
  if (f == nullptr && !choice.gpus.empty()) {  // whole GPUs: the ledger's indices, for a restart
    out[std::string(k8s::kLedgerGpusAnnotation)] = fmt::format("{}", fmt::join(choice.gpus, ","));
    return out;
  }
  if (f == nullptr || choice.gpus.empty()) return out;
  const std::string prefix = "nvidia.com/container." + f->container + ".";
  out[prefix + "gpus.devices"] = fmt::format("{}", fmt::join(choice.gpus, ","));
  // One portion per device, in gpus.devices' order: each from that GPU's own memory (rule 5).
  std::vector<std::string> portions;
  for (int c : choice.compute) portions.push_back(fmt::format("{}.{:02}", c / 100, c % 100));
  out[prefix + "gpu-compute.portion"] = fmt::format("{}", fmt::join(portions, ","));
  return out;
}

Result<BindAnswer> ExtenderImpl::bind(const std::string& ns, const std::string& name, const std::string& uid, const std::string& node) {
  if (Status st = may_act(); !st.is_ok()) return st;  // a follower never binds
  const std::string key = (ns.empty() ? "default" : ns) + "/" + name;
  auto seen = seen_.find(key);
  std::string seen_uid;  // set when Filter saw a pod of this name with another UID
  if (seen && !uid.empty() && !seen->pod.uid.empty() && seen->pod.uid != uid) {
    seen_uid = seen->pod.uid;
    seen.reset();
  }
  std::unique_lock lock(mu_);
  if (auto repeat = bound_already(key, uid, node)) return *repeat;
  if (!seen) {
    if (!seen_uid.empty()) {
      return Status(Code::kNotFound, fmt::format("pod {}: Bind names PodUID {}, but Filter saw UID {} under this name "
                                                 "(a recreated pod? run Filter on the current one)",
                                                 excerpt(key), excerpt(uid), excerpt(seen_uid)));
    }
    return Status(Code::kNotFound, fmt::format("pod {} was not seen by Filter or Prioritize; fracpack needs its "
                                               "requests before it can bind it",
                                               excerpt(key)));
  }
  auto n = state_.cluster().find_node(node);
  if (!n) return Status(Code::kNotFound, fmt::format("pod {}: node {} is not known to fracpack", key, excerpt(node)));
  // What the state held for the pod (pending, another scheduler's pending pod, waiting for its
  // node): put back as it was if the store cannot record the bind.
  const std::optional<PodRequest> before = state_.pod(key) != nullptr ? std::optional<PodRequest>(state_.pod(key)->raw) : std::nullopt;
  auto allocation = state_.bind(seen->pod, *n, *policy_);
  if (!allocation) {
    if (allocation.status().code() == Code::kUnschedulable && retry_wanted_) {
      lock.unlock();
      retry_wanted_({key});  // it lost the node to a Bind after its Filter: try it again now, not in 60 s
    }
    return allocation.status();
  }
  auto undo = [&] {  // as it was: the pod as held before
    (void)state_.forget(key);
    if (before) (void)state_.observe(*before);
  };
  BindAnswer answer{key, node, allocation->choice, annotations_for(seen->pod, allocation->choice), false, {}, {}};
  if (Status st = reserve(answer, seen->pod); !st.is_ok()) {
    undo();
    return st;
  }
  api::StoredBinding record{key, seen->pod.uid, node, allocation->choice.gpus, seen->object, allocation->started};
  if (Status st = store_->put_binding(record); !st.is_ok()) {
    give_up_claims(answer);
    undo();  // never acknowledge what is not durable
    return st;
  }
  bindings_.add(std::move(record));
  released_.erase(key);  // bound again: a Release now releases this binding
  if (options_.watching) {
    // A Bind behind a new reservation pod waits for its report before the Binding exists.
    const auto waits = book_ && seen->pod.fraction() != nullptr ? options_.reservation.timeout : std::chrono::seconds(0);
    assumed_[key] = {seen->pod.uid, node, std::chrono::steady_clock::now() + options_.assume_ttl + waits};
  }
  seen_.forget(key);
  return answer;
}

std::optional<Result<BindAnswer>> ExtenderImpl::bound_already(const std::string& key, const std::string& uid, const std::string& node) {
  const Allocation* held = state_.cluster().allocation(key);
  if (held == nullptr) return std::nullopt;
  const PodRecord& record = *state_.pod(key);
  if (!uid.empty() && !record.raw.uid.empty() && record.raw.uid != uid) {
    return Status(Code::kAlreadyExists, fmt::format("pod {} is bound with UID {}; this Bind names UID {} (a recreated pod? release "
                                                    "the old one, or Sync)", key, excerpt(record.raw.uid), excerpt(uid)));
  }
  const std::string& where = state_.cluster().node(held->node).name;
  if (where != node) return Status(Code::kAlreadyExists, fmt::format("pod {} is already bound to node {}", key, where));
  // Held for its gang's plan there: the Bind confirms the plan (else it would lapse while the pod runs).
  if (record.planned_until) (void)state_.bind(record.pod, held->node, *policy_);
  BindAnswer answer{key, where, held->choice, annotations_for(record.pod, held->choice), false, {}, {}};
  if (Status st = reserve(answer, record.pod); !st.is_ok()) return st;
  return answer;
}

Result<std::map<std::string, std::vector<std::string>>> ExtenderImpl::preempt(
    const json& object, const std::map<std::string, std::vector<std::string>>& candidates) {
  auto pod = decode_seen(object);
  if (!pod) return pod.status();
  std::unique_lock lock(mu_);  // what-if removals change the ledger for a moment
  // KAI's choice among every node offered, searched once (docs/queues.md rule 12): the usual
  // answer, one node.
  NodeMask offered_nodes(state_.cluster().node_count(), false);
  for (const auto& [node, offered] : candidates) {
    if (auto n = state_.cluster().find_node(node)) offered_nodes[*n] = true;
  }
  const PodRequest& held = state_.pod(pod->key()) != nullptr ? state_.pod(pod->key())->pod : *pod;
  if (state_.within_preemption_delay(held)) {  // its PodGroup's preemptionDelay: no victims yet (docs/queues.md rule 12)
    spdlog::info("preempt {}: its PodGroup's preemptionDelay has not passed; no victims", pod->key());
    return std::map<std::string, std::vector<std::string>>{};
  }
  if (state_.gang_needs_planning(held)) {  // a gang reclaims as a whole job, once it has its members
    auto gang = state_.gang_job(held);
    return gang ? gang_preempt(*pod, *gang, candidates) : std::map<std::string, std::vector<std::string>>{};
  }
  const auto found = state_.find_victims(*pod, *policy_, &offered_nodes);
  if (found) {
    if (auto uids = answer_on(found->node, found->leaving(), candidates.at(found->node), pod->key())) return std::map<std::string, std::vector<std::string>>{{found->node, std::move(*uids)}};
  }
  return node_by_node(*pod, candidates, found.has_value());
}

std::map<std::string, std::vector<std::string>> ExtenderImpl::node_by_node(
    const PodRequest& pod, const std::map<std::string, std::vector<std::string>>& candidates, bool victims_somewhere) {
  std::map<std::string, std::vector<std::string>> out;
  std::optional<std::optional<queues::ConsolidationPlan>> plan;  // sought once, for the first node that needs it
  for (const auto& [node, offered] : candidates) {
    auto n = state_.cluster().find_node(node);
    if (!n) continue;
    NodeMask only(state_.cluster().node_count(), false);
    only[*n] = true;
    std::vector<std::string> victims;
    if (auto found = victims_somewhere ? state_.find_victims(pod, *policy_, &only) : std::nullopt) {
      victims = found->leaving();  // several nodes may be answered: each all offered, nothing left to evict
    } else {
      // No reclaim or preemption here: consolidation's pods moved off this node, when its plan
      // lands the pod here (their controllers make them again; they fit elsewhere).
      if (!plan) plan = consolidation_for(pod);
      if (!*plan || (*plan)->placements.front().node != node) continue;
      for (const auto& m : (*plan)->moves) {
        if (m.from_node == node) victims.push_back(m.pod);
      }
    }
    if (victims.empty()) continue;  // kube-scheduler v1.20 crashes on a candidate without victims
    if (auto uids = offered_uids(victims, offered)) out[node] = std::move(*uids);
  }
  return out;
}

std::map<std::string, std::vector<std::string>> ExtenderImpl::gang_preempt(
    const PodRequest& pod, const queues::Job& gang, const std::map<std::string, std::vector<std::string>>& candidates) {
  const auto found = state_.find_victims(gang, *policy_, queues::VictimPass::kBoth);
  if (!found || found->placed.empty()) return {};
  // The whole decision at once: every victim goes (the leader deletes what kube-scheduler does
  // not), and only the gang's first member is nominated, on the node it lands on. Nominating
  // each member from its own later search would scatter kube-scheduler's nominations over nodes
  // the gang's plan does not give them, and keep the members out of each other's way.
  const Placement& first = found->placed.front();
  evict_later(found->leaving(), fmt::format("a victim of gang {}'s reclaim or preemption", gang.name));
  if (pod.key() != first.pod) return {};
  auto offered = candidates.find(first.node);
  if (offered == candidates.end()) return {};
  if (auto uids = answer_on(first.node, found->leaving(), offered->second, pod.key())) return {{first.node, std::move(*uids)}};
  return {};
}

void ExtenderImpl::evict_later(const std::vector<std::string>& victims, const std::string& reason) {
  // Only a leader that follows the API server deletes pods; a decision is not kept across terms
  // (evictions_new_term) nor past kVictimEvictionHold.
  if (!options_.watching || !may_act().is_ok()) return;
  const auto until = std::chrono::steady_clock::now() + kVictimEvictionHold;
  std::set<std::string> whole(victims.begin(), victims.end());  // whole jobs go, as KAI evicts them
  const queues::VictimJobs jobs = state_.victim_jobs();
  for (const std::string& key : victims) {
    auto in_job = jobs.find(key);
    if (in_job == jobs.end()) continue;
    for (const auto& [other, job] : jobs) {
      if (job.job == in_job->second.job && job.core == in_job->second.core) whole.insert(other);
    }
  }
  for (const std::string& key : whole) {
    const PodRecord* r = state_.pod(key);
    if (r == nullptr || r->standing != PodStanding::kBound || r->planned_until) continue;
    victims_to_evict_[key] = {{key, r->raw.uid, reason, PodEviction::Why::kVictim}, until};
  }
}

std::optional<std::vector<std::string>> ExtenderImpl::answer_on(const std::string& node, const std::vector<std::string>& leaving,
                                                                const std::vector<std::string>& offered, const std::string& for_pod) {
  std::vector<std::string> answered;
  std::vector<std::string> uids;
  for (const std::string& key : leaving) {
    const PodRecord* r = state_.pod(key);
    const Allocation* a = state_.cluster().allocation(key);
    if (r == nullptr || a == nullptr || state_.cluster().node(a->node).name != node) continue;
    if (std::find(offered.begin(), offered.end(), r->raw.uid) == offered.end()) continue;
    answered.push_back(key);
    uids.push_back(r->raw.uid);
  }
  if (uids.empty()) return std::nullopt;
  // Whole jobs go, as KAI evicts them: kube-scheduler deletes what it offered here; the leader
  // deletes the rest of the decision and of each victim's job.
  evict_later(leaving, fmt::format("a victim of {}'s reclaim or preemption, with {} (kube-scheduler deletes those on node {})", for_pod,
                                fmt::join(answered, ", "), node));
  for (const std::string& key : answered) victims_to_evict_.erase(key);  // kube-scheduler's to delete
  return uids;
}

std::optional<std::vector<std::string>> ExtenderImpl::offered_uids(const std::vector<std::string>& victims,
                                                                   const std::vector<std::string>& offered) const {
  std::vector<std::string> uids;
  for (const auto& key : victims) {
    const PodRecord* record = state_.pod(key);
    const std::string uid = record != nullptr ? record->raw.uid : std::string();
    if (std::find(offered.begin(), offered.end(), uid) == offered.end()) return std::nullopt;
    uids.push_back(uid);
  }
  return uids;
}

}  // namespace fracpack::api
