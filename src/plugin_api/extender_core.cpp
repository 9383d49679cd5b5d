// The extender core (extender.hpp): the verbs both fronts call. Every change is staged and
// validated first, written to the store in one transaction, and only then applied to the state,
// so a refused change leaves memory and disk as they were.
#include <algorithm>
#include <mutex>
#include <unordered_set>

#include <fmt/format.h>

#include "fracpack/k8s/decode.hpp"
#include "fracpack/k8s/object_stream.hpp"
#include "fracpack/core/quoting.hpp"
#include "plugin_api/extender_impl.hpp"

namespace fracpack::api {
namespace {

/// Pods kept for Bind, their JSON counted by approx_bytes(): ~10,000 ordinary pods, or a handful
/// of huge ones (a client sending 7 MB pods must not grow the server by 57 MB a request).
constexpr std::size_t kBytesRemembered = std::size_t{128} << 20;

/// A queue amount's GPUs (the book counts thousandths).
double gpus(const queues::Amounts& amounts) { return static_cast<double>(amounts[queues::Resource::kGpu]) / 1000.0; }

}  // namespace

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
  out[prefix + "gpu-compute.portion"] = fmt::format("{}.{:02}", choice.compute.front() / 100, choice.compute.front() % 100);
  return out;
}

ExtenderImpl::ExtenderImpl(ExtenderOptions options, std::shared_ptr<const Policy> policy, std::unique_ptr<api::Store> store)
    : options_(std::move(options)),
      policy_(std::move(policy)),
      store_(std::move(store)),
      state_({options_.placement, options_.decode}),
      seen_(options_.pods_remembered, kBytesRemembered),
      synced_(!options_.watching),
      refusals_(std::max<std::chrono::milliseconds>(options_.retry_refused_within, kQueueRetryWindow)) {
  if (options_.watching && options_.reservation.enabled) book_ = std::make_unique<ReservationBook>(options_.reservation);
}

Status ExtenderImpl::load() {
  auto stored_objects = store_->objects();
  if (!stored_objects) return stored_objects.status();
  if (!options_.watching) {  // watching, the API server's objects are the truth, not a copy of older ones
    api::StagedObjects staged;
    if (auto st = api::stage_objects(*stored_objects, options_.decode, staged, nullptr); !st.is_ok()) return st;
    if (auto st = state_.validate(staged.change); !st.is_ok()) return st;
    install(staged);
  }
  auto stored = store_->bindings();
  if (!stored) return stored.status();
  const auto deadline = std::chrono::steady_clock::now() + options_.assume_ttl;
  for (auto& b : *stored) {
    observe_binding(b, nullptr);  // watching: a pod bound to a node not listed yet waits for it
    if (options_.watching) assumed_[b.pod_key] = {b.uid, b.node, deadline};
  }
  bindings_.assign(std::move(*stored));
  return Status::ok();
}

Status ExtenderImpl::not_watching(const char* verb) const {
  if (!options_.watching) return Status::ok();
  return Status(Code::kFailedPrecondition,
                fmt::format("{}: this server follows the API server (--kube-api), which is the source of nodes, pods and queues; "
                            "change them there",
                            verb));
}

Status ExtenderImpl::apply(const std::vector<json>& objects, std::vector<std::string>* warnings) {
  if (Status st = not_watching("Apply"); !st.is_ok()) return st;
  std::unique_lock lock(mu_);
  api::StagedObjects staged;
  if (auto st = api::stage_objects(objects, options_.decode, staged, warnings); !st.is_ok()) return st;
  if (auto st = state_.validate(staged.change, warnings); !st.is_ok()) return st;
  if (auto st = store_->commit(staged.store); !st.is_ok()) return st;
  auto conflicts = install(staged);
  if (warnings != nullptr) warnings->insert(warnings->end(), conflicts.begin(), conflicts.end());
  return Status::ok();
}

std::vector<std::size_t> ExtenderImpl::nodes_to_apply(NodeNames names, const std::vector<const json*>& objects) {
  std::vector<std::size_t> out;
  if (options_.watching) return out;  // the watch has every Node as the API server has it
  std::vector<std::size_t> same_spec;  // changed objects the ledger need not change for
  {
    std::shared_lock lock(mu_);
    const ClusterState& cluster = state_.cluster();
    for (std::size_t i = 0; i < names.size() && i < objects.size(); ++i) {
      auto known = node_objects_.find(std::string(names[i]));
      const auto position = cluster.find_node(names[i]);
      if (known == node_objects_.end() || !position) {
        out.push_back(i);
        continue;
      }
      const std::string version = k8s::metadata_string(*objects[i], "resourceVersion");
      if (!version.empty() && version == k8s::metadata_string(known->second, "resourceVersion")) continue;
      if (*objects[i] == known->second) continue;
      auto spec = k8s::decode_node(*objects[i], options_.decode);
      if (spec && *spec == cluster.node(*position)) {
        same_spec.push_back(i);
      } else {
        out.push_back(i);  // changed, or no longer decodes: apply() says why
      }
    }
  }
  if (!same_spec.empty()) {
    std::unique_lock lock(mu_);
    for (std::size_t i : same_spec) {
      if (auto known = node_objects_.find(std::string(names[i])); known != node_objects_.end()) known->second = *objects[i];
    }
  }
  return out;
}

Status ExtenderImpl::remove(const std::string& kind, const std::string& name) {
  if (Status st = not_watching("Remove"); !st.is_ok()) return st;
  std::unique_lock lock(mu_);
  api::StagedObjects staged;
  if (kind == "Node") {
    staged.change.removed_nodes.push_back(name);
  } else if (kind == "Queue") {
    staged.change.removed_queues.push_back(name);
  } else if (kind == "PodGroup") {
    staged.change.removed_groups.push_back(name);
  } else {
    return invalid_argument("kind \"{}\" cannot be removed (Node, Queue, PodGroup)", excerpt(kind));
  }
  if (auto st = state_.validate(staged.change); !st.is_ok()) return st;
  staged.store.objects.push_back({kind, name, nullptr});
  std::vector<std::string> gone;  // a removed node's bindings go with it
  if (kind == "Node") {
    std::vector<api::StoredBinding> kept;
    for (const auto& [seq, b] : bindings_) {
      if (b.node == name) {
        gone.push_back(b.pod_key);
      } else {
        kept.push_back(b);
      }
    }
    staged.store.bindings = std::move(kept);
  }
  if (auto st = store_->commit(staged.store); !st.is_ok()) return st;
  if (kind == "Node") node_objects_.erase(name);
  (void)state_.apply(staged.change);
  for (const auto& key : gone) {
    (void)state_.forget(key);
    bindings_.erase(key);
    released_.add(key);  // a Release of it after its node went is done, not unknown
  }
  return Status::ok();
}

Result<FilterAnswer> ExtenderImpl::filter(const json& object, NodeNames nodes) {
  auto pod = decode_seen(object);
  if (!pod) return pod.status();
  const auto gang = plan_gang(*pod);
  std::shared_lock lock(mu_);
  FilterAnswer answer = answer_listed(*pod, gang, nodes);
  note_refusal(*pod, answer);  // under the lock: a watch batch that frees room after this answer sees it
  return answer;
}

Result<FilterAnswer> ExtenderImpl::filter_all(const json& object, std::size_t max_nodes) {
  auto pod = decode_seen(object);
  if (!pod) return pod.status();
  const auto gang = plan_gang(*pod);
  std::shared_lock lock(mu_);
  FilterAnswer answer = answer_cluster(*pod, gang, max_nodes);
  note_refusal(*pod, answer);
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
  api::StoredBinding record{key, seen->pod.uid, node, allocation->choice.gpus, seen->object};
  if (Status st = store_->put_binding(record); !st.is_ok()) {
    (void)state_.forget(key);  // never acknowledge what is not durable
    if (before) (void)state_.observe(*before);
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
  BindAnswer answer{key, node, allocation->choice, annotations_for(seen->pod, allocation->choice), false, {}};
  reserve(answer, seen->pod);
  return answer;
}

Result<std::map<std::string, std::vector<std::string>>> ExtenderImpl::preempt(
    const json& object, const std::map<std::string, std::vector<std::string>>& candidates) {
  auto pod = decode_seen(object);
  if (!pod) return pod.status();
  std::unique_lock lock(mu_);  // what-if removals change the ledger for a moment
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& [node, offered] : candidates) {
    auto n = state_.cluster().find_node(node);
    if (!n) continue;
    NodeMask only(state_.cluster().node_count(), false);
    only[*n] = true;
    auto victims = state_.find_victims(*pod, *policy_, &only);
    if (!victims) continue;
    std::vector<std::string> uids;
    bool subset = true;
    for (const auto& key : victims->pods) {
      const PodRecord* record = state_.pod(key);
      const std::string uid = record != nullptr ? record->raw.uid : std::string();
      if (std::find(offered.begin(), offered.end(), uid) == offered.end()) subset = false;
      uids.push_back(uid);
    }
    if (subset) out[node] = std::move(uids);
  }
  return out;
}

Status ExtenderImpl::release(const std::string& pod_key) {
  std::unique_lock lock(mu_);
  const PodRecord* record = state_.pod(pod_key);
  const bool held = record != nullptr && (record->standing == PodStanding::kBound || record->standing == PodStanding::kConflict);
  if (!held && released_.contains(pod_key)) return Status::ok();  // released already: a retry, answered as the first
  if (options_.watching && !assumed_.contains(pod_key)) {  // only the binder's undo: the API server says what runs
    return Status(Code::kFailedPrecondition,
                  fmt::format("release {}: this server follows the API server (--kube-api); a pod is released when it is "
                              "deleted or finishes there",
                              excerpt(pod_key)));
  }
  if (!held) {  // never bound here (or only pending): a wrong name is said, not taken for done
    return {Code::kNotFound, fmt::format("release {}: the ledger holds no binding for this pod, and this server released "
                                         "none of that name since it started",
                                         excerpt(pod_key))};
  }
  if (Status st = store_->remove_binding(pod_key); !st.is_ok()) return st;
  forget_pod(pod_key);
  bindings_.erase(pod_key);
  assumed_.erase(pod_key);
  released_.add(pod_key);
  return Status::ok();
}

Status ExtenderImpl::sync(const std::vector<json>& bound_pods, bool cluster_empty, std::vector<std::string>* conflicts) {
  if (Status st = not_watching("Sync"); !st.is_ok()) return st;
  if (bound_pods.empty() && !cluster_empty) {
    return invalid_argument("Sync: no bound pods given; a Sync replaces every binding, so an empty one must say the cluster "
                            "runs no pods (cluster_empty: true)");
  }
  if (!bound_pods.empty() && cluster_empty) {
    return invalid_argument("Sync: cluster_empty is true but {} bound pod(s) are given", bound_pods.size());
  }
  std::unique_lock lock(mu_);
  std::vector<api::StoredBinding> next;
  std::unordered_set<std::string> listed;
  for (std::size_t i = 0; i < bound_pods.size(); ++i) {
    auto pod = k8s::decode_pod(bound_pods[i], options_.decode, state_.classes());
    if (!pod) return Status(pod.status().code(), fmt::format("bound_pods[{}]: {}", i, pod.status().message()));
    if (!pod->bound) return invalid_argument("bound_pods[{}]: pod {}: spec.nodeName is not set; Sync takes bound pods only", i, pod->key());
    if (!listed.insert(pod->key()).second) return invalid_argument("bound_pods[{}]: pod {} is listed twice", i, pod->key());
    next.push_back({pod->key(), pod->uid, pod->bound->node, pod->bound->devices, bound_pods[i]});
  }
  api::StoreChange change;
  change.bindings = next;
  if (Status st = store_->commit(change); !st.is_ok()) return st;
  for (const auto& [seq, b] : bindings_) {
    if (listed.contains(b.pod_key)) continue;
    (void)state_.forget(b.pod_key);
    released_.add(b.pod_key);  // the Sync says it no longer runs
  }
  for (const auto& b : next) {
    released_.erase(b.pod_key);
    observe_binding(b, conflicts);
  }
  bindings_.assign(std::move(next));
  return Status::ok();
}

Result<Explanation> ExtenderImpl::explain(const json& object) {
  auto pod = decode(object);
  if (!pod) return pod.status();
  std::shared_lock lock(mu_);
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
  }
  if (auto refusal = admission(*pod)) {
    e.summary = refusal->message + "; and " + e.summary;
    if (e.code == Code::kOk) e.code = Code::kUnschedulable;
  }
  return e;
}

LedgerSnapshot ExtenderImpl::snapshot() const {
  std::shared_lock lock(mu_);
  const ClusterState& cluster = state_.cluster();
  LedgerSnapshot out;
  out.nodes.reserve(cluster.node_count());
  for (std::size_t n : cluster.nodes_in_name_order()) {
    LedgerSnapshot::Node& node = out.nodes.emplace_back();
    node.name = cluster.node(n).name;
    for (std::size_t g = 0; g < cluster.node(n).gpus.size(); ++g) {
      const GpuUsage& u = cluster.usage(n).gpus[g];
      LedgerSnapshot::Gpu& gpu =
          node.gpus.emplace_back(LedgerSnapshot::Gpu{static_cast<int>(g), u.state, cluster.node(n).gpus[g].memory, u.used, u.fenced(), u.holders, {}, {}});
      if (auto e = book_ ? book_->at(node.name, static_cast<int>(g)) : std::nullopt; e && !e->pod.empty()) {
        gpu.reservation = book_->key(e->pod);
        gpu.device = e->device;
      }
    }
  }
  std::vector<const Allocation*> held;
  for (std::size_t n = 0; n < cluster.node_count(); ++n) {
    for (const auto& key : cluster.pods_on(n)) held.push_back(cluster.allocation(key));
  }
  std::sort(held.begin(), held.end(), [](const Allocation* a, const Allocation* b) { return a->seq < b->seq; });
  for (const Allocation* a : held) {
    const PodRecord& record = *state_.pod(a->pod);
    LedgerSnapshot::Binding& b = out.bindings.emplace_back();
    b.pod = a->pod;
    b.uid = record.raw.uid;
    b.node = cluster.node(a->node).name;
    // The ledger's devices: a running pod adopted without a devices annotation got its GPUs then.
    b.gpus = a->holder == Holder::kConflict ? a->fenced : a->choice.gpus;
    b.standing = std::string(standing_name(record.standing));
    b.note = record.note;
    b.ours = record.ours;
    b.gpus_guessed = record.standing == PodStanding::kBound && !record.raw.cpu_only() && record.raw.bound->devices.empty();
    b.assumed = assumed_.contains(a->pod);
  }
  if (const queues::QueueBook* book = state_.book()) {
    for (std::size_t q : state_.tree()->top_down()) {
      out.queues.push_back({state_.tree()->queue(q).name, gpus(book->allocated(q)), gpus(book->allocated_non_preemptible(q)),
                            gpus(book->fair_share(q))});
    }
  }
  return out;
}

LedgerGauges ExtenderImpl::gauges() const {
  std::shared_lock lock(mu_);
  const ClusterState& cluster = state_.cluster();
  LedgerGauges g;
  for (GpuState s : {GpuState::kIdle, GpuState::kWhole, GpuState::kSharedTimeSlicing, GpuState::kSharedSmSharing}) {
    g.gpus_by_state[std::string(gpu_state_name(s))] = 0;
  }
  for (std::size_t n = 0; n < cluster.node_count(); ++n) {
    for (const auto& u : cluster.usage(n).gpus) ++g.gpus_by_state[std::string(gpu_state_name(u.state))];
  }
  if (const queues::QueueBook* book = state_.book()) {
    for (std::size_t q : state_.tree()->top_down()) {
      g.queues.push_back({state_.tree()->queue(q).name, gpus(book->allocated(q)), gpus(book->fair_share(q))});
    }
  }
  for (std::size_t n = 0; n < cluster.node_count(); ++n) {
    for (const auto& key : cluster.pods_on(n)) {
      (cluster.allocation(key)->holder == Holder::kConflict ? g.pods_conflicting : g.pods_bound) += 1;
    }
  }
  g.pods_pending = state_.pending_count();
  g.binds_assumed = assumed_.size();
  g.synced = synced_;
  return g;
}

Result<PodRequest> ExtenderImpl::decode(const json& object) const {
  if (!object.is_object()) return invalid_argument("Pod: must be an object, not a {}", object.type_name());
  std::shared_lock lock(mu_);
  return state_.decode_pod(object);
}

Result<PodRequest> ExtenderImpl::decode_seen(const json& object) {
  auto pod = decode(object);
  if (!pod) return pod;
  const std::vector<std::string> dropped = seen_.remember(*pod, object);
  bool known = false;
  {
    std::shared_lock lock(mu_);
    const PodRecord* record = state_.pod(pod->key());
    known = record != nullptr && (record->standing != PodStanding::kPending || record->raw.uid == pod->uid);
    // Demand counts for queues and gangs; following the API server, its watch alone says which
    // pods wait (a pod Filter sees after its deletion must not come back as a phantom).
    known = known || options_.watching || (state_.tree() == nullptr && !pod->gang) || !state_.is_ours(*pod);
  }
  if (!known || !dropped.empty()) {
    std::unique_lock lock(mu_);
    for (const auto& key : dropped) {
      if (options_.watching) break;  // the watch says when a pending pod goes
      if (const PodRecord* r = state_.pod(key); r != nullptr && r->standing == PodStanding::kPending) (void)state_.forget(key);
    }
    const PodRecord* record = state_.pod(pod->key());
    if (!known && (record == nullptr || record->standing == PodStanding::kPending)) (void)state_.observe(*pod);
  }
  return pod;
}

void ExtenderImpl::observe_binding(const api::StoredBinding& b, std::vector<std::string>* conflicts) {
  auto pod = k8s::decode_pod(b.pod, options_.decode, state_.classes());
  PodStanding standing = PodStanding::kBound;
  if (pod) {
    pod->bound = Binding{b.node, b.gpus};
    standing = state_.observe(*pod);
  } else {
    standing = state_.observe_unreadable(b.pod_key, b.node, b.gpus, pod.status().message());
  }
  if (standing != PodStanding::kBound && conflicts != nullptr) {
    conflicts->push_back(fmt::format("{}: {}", b.pod_key, state_.pod(b.pod_key)->note));
  }
}

std::vector<std::string> ExtenderImpl::install(const api::StagedObjects& staged) {
  for (const auto& [name, object] : staged.node_objects) node_objects_[name] = object;
  return state_.apply(staged.change);
}

std::optional<queues::Refusal> ExtenderImpl::admission(const PodRequest& pod) const {
  if (!state_.is_ours(pod)) return std::nullopt;  // another scheduler's pod: its queues are not ours to apply
  return state_.admit(pod);
}

std::optional<SchedulingState::GangDecision> ExtenderImpl::plan_gang(const PodRequest& pod) {
  const auto now = std::chrono::steady_clock::now();
  {
    std::shared_lock lock(mu_);
    const auto lapse = state_.next_plan_expiry();
    if (!state_.gang_needs_planning(pod) && !(lapse && *lapse <= now)) return std::nullopt;
  }
  std::unique_lock lock(mu_);
  if (state_.expire_plans(now) > 0) freed_room();  // what lapsed plans held is free: no cluster event says so
  if (!synced_) return std::nullopt;
  auto decision = state_.plan_gang(pod, *policy_, now, options_.gang_hold);
  std::vector<std::string> retry = take_retries();
  lock.unlock();
  if (decision.kind != SchedulingState::GangDecision::Kind::kNotAGang) retry.insert(retry.end(), decision.others.begin(), decision.others.end());
  if (!retry.empty() && retry_wanted_) retry_wanted_(retry);
  if (decision.kind == SchedulingState::GangDecision::Kind::kNotAGang) return std::nullopt;
  return decision;
}

bool ExtenderImpl::refused_by_gang(const std::optional<SchedulingState::GangDecision>& gang, const std::vector<std::size_t>& nodes,
                                   FilterAnswer& answer) const {
  using Kind = SchedulingState::GangDecision::Kind;
  if (!gang || (gang->kind != Kind::kWaiting && gang->kind != Kind::kRefused)) return false;
  const SharedReason why(gang->reason);
  for (std::size_t n : nodes) answer.failed.emplace_back(state_.cluster().node(n).name, why);
  return true;
}

bool ExtenderImpl::refused_by_queue(const PodRequest& pod, const std::vector<std::size_t>& nodes, FilterAnswer& answer) const {
  auto refusal = admission(pod);
  if (!refusal) return false;
  const SharedReason why(refusal->message);
  for (std::size_t n : nodes) answer.failed.emplace_back(state_.cluster().node(n).name, why);
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
  return true;
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
  BindAnswer answer{key, where, held->choice, annotations_for(record.pod, held->choice), false, {}};
  reserve(answer, record.pod);
  return answer;
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

namespace fracpack {

Result<std::unique_ptr<Extender>> Extender::open(const ExtenderOptions& options) {
  PolicyOptions policy_options;
  policy_options.workload = options.workload;
  auto policy = make_policy(options.policy, policy_options);
  if (!policy) return policy.status();
  auto store = api::Store::open(options.state_path, options.fsync_every_bind ? api::Durability::kPowerLoss
                                                                             : api::Durability::kProcessCrash);
  if (!store) return store.status();
  auto core = std::make_unique<api::ExtenderImpl>(options, *policy, std::move(*store));
  if (Status st = core->load(); !st.is_ok()) return st;
  return std::unique_ptr<Extender>(std::move(core));
}

}  // namespace fracpack
