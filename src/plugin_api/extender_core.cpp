// The extender core (extender.hpp): opening it, and the verbs that change the cluster it knows
// (Apply, Remove, Release, Sync). Every change is staged and validated first, written to the store
// in one transaction, and only then applied to the state, so a refused change leaves memory and
// disk as they were. The scheduling verbs: extender_filter.cpp (Filter, Prioritize, Explain) and
// extender_bind.cpp (Bind, Preempt); what it reports: extender_snapshot.cpp.
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

SchedulingState::Options state_options(const ExtenderOptions& options) {
  SchedulingState::Options o{options.placement, options.decode};
  o.min_runtime = options.min_runtime;
  o.clock = options.clock;
  return o;
}

}  // namespace

ExtenderImpl::ExtenderImpl(ExtenderOptions options, std::shared_ptr<const Policy> policy, std::unique_ptr<api::Store> store)
    : options_(std::move(options)),
      policy_(std::move(policy)),
      store_(std::move(store)),
      state_(state_options(options_)),
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
    if (options_.watching) assumed_[b.pod_key] = {b.uid, b.node, deadline, /*from_store=*/true};
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
    next.push_back({pod->key(), pod->uid, pod->bound->node, pod->bound->devices, bound_pods[i], start_of(*pod)});
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

std::optional<std::int64_t> ExtenderImpl::start_of(const PodRequest& pod) const {
  if (pod.started) return pod.started;
  // The same pod, still where the ledger holds it: the start this server recorded (its Bind).
  const PodRecord* held = state_.pod(pod.key());
  if (held == nullptr || !held->raw.bound || !pod.bound || held->raw.bound->node != pod.bound->node || held->raw.uid != pod.uid) {
    return std::nullopt;
  }
  return held->raw.started;
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
    if (b.started && !pod->started) pod->started = b.started;  // the bind's moment, kept across restarts
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

}  // namespace fracpack::api

namespace fracpack {

std::string_view refused_by_name(FilterAnswer::RefusedBy r) {
  switch (r) {
    case FilterAnswer::RefusedBy::kNothing: return "";
    case FilterAnswer::RefusedBy::kSyncing: return "syncing";
    case FilterAnswer::RefusedBy::kBinding: return "bound_elsewhere";
    case FilterAnswer::RefusedBy::kGangWaiting: return "gang_waiting";
    case FilterAnswer::RefusedBy::kGang: return "gang";
    case FilterAnswer::RefusedBy::kQueue: return "queue";
    case FilterAnswer::RefusedBy::kNodes: return "nodes";
  }
  return "";
}

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
