// The extender core, fed by the Kubernetes watch (cluster_watch.hpp): the API server's nodes,
// pods, Queues, PodGroups and priority classes, applied to the scheduling state as they come.
// Pods follow kube-scheduler's cache: a pod bound by anyone is held where it is bound; a deleted,
// Succeeded or Failed pod holds nothing; a bind fracpack acknowledged and the API server does not
// show yet is kept ("assumed") until the pod is seen bound, or its time is up and the pod is asked
// for (settle).
#include <algorithm>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "fracpack/core/quoting.hpp"

#include "fracpack/k8s/decode.hpp"
#include "fracpack/k8s/object_stream.hpp"
#include "fracpack/k8s/time.hpp"
#include "fracpack/queues/decode_queue.hpp"
#include "plugin_api/extender_impl.hpp"

namespace fracpack::api {
namespace {

/// The pod no longer runs: Succeeded or Failed (its resources are free again).
bool finished(const json& pod) {
  static const json::json_pointer kPhase("/status/phase");
  if (!pod.contains(kPhase) || !pod[kPhase].is_string()) return false;
  const std::string& phase = pod[kPhase].get_ref<const std::string&>();
  return phase == "Succeeded" || phase == "Failed";
}

/// spec.nodeName, or "".
std::string node_name(const json& pod) {
  static const json::json_pointer kNode("/spec/nodeName");
  return pod.contains(kNode) && pod[kNode].is_string() ? pod[kNode].get<std::string>() : std::string();
}

/// "namespace/name" of an object ("default" when it names none).
std::string key_of(const json& object) {
  const std::string ns = k8s::metadata_string(object, "namespace");
  return (ns.empty() ? "default" : ns) + "/" + k8s::metadata_string(object, "name");
}

void note(std::vector<std::string>* notes, std::string text) {
  if (notes != nullptr) notes->push_back(std::move(text));
}

}  // namespace

bool ExtenderImpl::syncing(const std::vector<std::size_t>& nodes, FilterAnswer& answer) const {
  if (synced_) return false;
  static const SharedReason kSyncing(std::string("fracpack is syncing with the API server"));
  for (std::size_t n : nodes) answer.failed.emplace_back(state_.cluster().node(n).name, kSyncing);
  answer.refused_by = FilterAnswer::RefusedBy::kSyncing;
  return true;
}

void ExtenderImpl::watch_listed(const std::string& kind, const std::vector<json>& objects, std::vector<std::string>* notes) {
  std::unique_lock lock(mu_);
  room_freed_ = std::chrono::milliseconds(0);  // what this list frees
  if (kind == "Node") {
    list_nodes(objects, notes);
  } else if (kind == "Pod") {
    list_pods(objects, notes);
  } else if (kind == "Queue") {
    api_queues_.clear();
    for (const auto& o : objects) {
      auto q = queues::decode_queue(o, notes);
      if (q) {
        api_queues_[q->name] = std::move(*q);
      } else {
        note(notes, q.status().message());
      }
    }
    sync_queues(notes);
  } else if (kind == "PodGroup") {
    group_changes(objects, {}, /*replace=*/true, notes);
  } else if (kind == "PriorityClass") {
    for (const auto& o : objects) watch_listed_class(o);
  }
  retry_refused(lock);
}

void ExtenderImpl::watch_changed(const std::string& kind, const std::vector<ApiEvent>& events, std::vector<std::string>* notes) {
  std::unique_lock lock(mu_);
  room_freed_ = std::chrono::milliseconds(0);  // what this batch frees
  for (const ApiEvent& e : events) {
    if (kind == "Pod") {
      pod_event(e, notes);
    } else if (kind == "Node") {
      node_event(e, notes);
    } else if (kind == "Queue") {
      const std::string name = k8s::metadata_string(e.object, "name");
      if (e.type == ApiEvent::Type::kDeleted) {
        api_queues_.erase(name);
      } else if (auto q = queues::decode_queue(e.object, notes)) {
        api_queues_[name] = std::move(*q);
      } else {
        note(notes, q.status().message());
        api_queues_.erase(name);  // as if it were not there: its jobs wait for a readable Queue
      }
      sync_queues(notes);
    } else if (kind == "PodGroup") {
      if (e.type == ApiEvent::Type::kDeleted) {
        group_changes({}, {key_of(e.object)}, false, notes);
      } else {
        group_changes({e.object}, {}, false, notes);
      }
    } else if (kind == "PriorityClass" && e.type != ApiEvent::Type::kDeleted) {
      watch_listed_class(e.object);
    }
  }
  retry_refused(lock);
}

void ExtenderImpl::watch_listed_class(const json& object) {
  auto v = object.find("value");
  if (v == object.end() || !v->is_number_integer() || *v < INT32_MIN || *v > INT32_MAX) return;
  ObjectChange change;
  change.priority_classes.emplace_back(k8s::metadata_string(object, "name"), v->get<std::int32_t>());
  (void)state_.apply(change);
}

void ExtenderImpl::list_nodes(const std::vector<json>& objects, std::vector<std::string>* notes) {
  ObjectChange change;
  std::set<std::string> listed;
  for (const auto& o : objects) {
    auto spec = k8s::decode_node(o, options_.decode);
    if (!spec) {
      note(notes, fmt::format("{}; not placed on", spec.status().message()));
      continue;
    }
    listed.insert(spec->name);
    auto known = state_.cluster().find_node(spec->name);
    if (!known || !(state_.cluster().node(*known) == *spec)) change.nodes.push_back(std::move(*spec));
  }
  if (!change.nodes.empty()) freed_room();
  for (std::size_t n = 0; n < state_.cluster().node_count(); ++n) {
    if (!listed.contains(state_.cluster().node(n).name)) change.removed_nodes.push_back(state_.cluster().node(n).name);
  }
  for (const auto& c : state_.apply(change)) note(notes, c);
}

void ExtenderImpl::node_event(const ApiEvent& event, std::vector<std::string>* notes) {
  const std::string name = k8s::metadata_string(event.object, "name");
  ObjectChange change;
  const bool known = state_.cluster().find_node(name).has_value();
  if (event.type == ApiEvent::Type::kDeleted) {
    if (known) change.removed_nodes.push_back(name);
  } else if (auto spec = k8s::decode_node(event.object, options_.decode)) {
    auto n = state_.cluster().find_node(name);
    if (n && state_.cluster().node(*n) == *spec) return;  // a status heartbeat: nothing the scheduler sees changed
    change.nodes.push_back(std::move(*spec));
    freed_room();
  } else {
    note(notes, fmt::format("{}; not placed on until it reads again", spec.status().message()));
    if (known) change.removed_nodes.push_back(name);  // never placed on by its old object
  }
  for (const auto& c : state_.apply(change)) note(notes, c);
}

void ExtenderImpl::sync_queues(std::vector<std::string>* notes) {
  // The Queues whose parentQueue chain reaches a top-level queue; the others wait for theirs.
  std::map<std::string, queues::QueueSpec> valid;
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& [name, q] : api_queues_) {
      if (valid.contains(name) || !(q.parent.empty() || valid.contains(q.parent))) continue;
      valid[name] = q;
      grew = true;
    }
  }
  std::map<std::string, std::string> waiting;  // queue → its missing (or looping) parent
  for (const auto& [name, q] : api_queues_) {
    if (!valid.contains(name)) waiting[name] = q.parent;
  }
  if (waiting != waiting_queues_) {  // said once per change, not at every Queue event
    for (const auto& [name, parent] : waiting) {
      if (!waiting_queues_.contains(name)) {
        note(notes, fmt::format("Queue {}: parentQueue \"{}\" is not a Queue (or the chain loops); its jobs are refused until it is",
                                name, excerpt(parent)));
      }
    }
    waiting_queues_ = waiting;
    state_.set_waiting_queues(waiting);
  }
  const queues::QueueTree* now = state_.tree();
  const bool unchanged = now == nullptr ? valid.empty() : now->size() == valid.size() && std::all_of(valid.begin(), valid.end(), [&](const auto& v) {
    const auto q = now->find(v.first);
    return q && now->queue(*q) == v.second;
  });
  if (unchanged) return;  // a Queue's status, written by KAI's controller: nothing the scheduler reads changed
  ObjectChange change;
  for (const auto& [name, q] : valid) change.queues.push_back(q);
  if (const queues::QueueTree* tree = state_.tree()) {
    for (std::size_t q = 0; q < tree->size(); ++q) {
      if (!valid.contains(tree->queue(q).name)) change.removed_queues.push_back(tree->queue(q).name);
    }
  }
  if (Status st = state_.validate(change); !st.is_ok()) {  // not expected: the set is closed under parents
    note(notes, fmt::format("queues not applied: {}", st.message()));
    return;
  }
  (void)state_.apply(change);
  freed_room(kQueueRetryWindow);  // a quota or limit may have grown; kube-scheduler does not watch Queues
}

void ExtenderImpl::group_changes(const std::vector<json>& upserts, const std::vector<std::string>& removals, bool replace,
                                 std::vector<std::string>* notes) {
  ObjectChange change;
  std::set<std::string> seen;
  const std::map<std::string, std::string> was_invalid = invalid_groups_;
  if (replace) invalid_groups_.clear();
  for (const auto& o : upserts) {
    auto g = queues::decode_pod_group(o, notes);
    if (!g) {
      note(notes, g.status().message());
      if (!k8s::metadata_string(o, "name").empty()) {
        const std::string key = key_of(o);
        invalid_groups_[key] = g.status().message();
        // Edited from valid to invalid: its valid version goes, as a fresh list would drop it.
        if (!replace && api_groups_.contains(key)) change.removed_groups.push_back(key);
      }
      continue;
    }
    seen.insert(g->key());
    invalid_groups_.erase(g->key());
    change.groups.push_back(std::move(*g));
  }
  for (const auto& key : removals) {
    invalid_groups_.erase(key);
    if (api_groups_.contains(key)) change.removed_groups.push_back(key);
  }
  if (replace) {
    for (const auto& key : api_groups_) {
      if (!seen.contains(key)) change.removed_groups.push_back(key);
    }
  }
  state_.set_invalid_groups(invalid_groups_);
  // A PodGroup fixed (or gone): its members were refused as unresolvable, and kube-scheduler does
  // not watch PodGroups; they are asked for again.
  if (std::any_of(was_invalid.begin(), was_invalid.end(), [&](const auto& g) { return !invalid_groups_.contains(g.first); })) {
    freed_room(kQueueRetryWindow);
  }
  for (const auto& key : change.removed_groups) api_groups_.erase(key);
  api_groups_.insert(seen.begin(), seen.end());
  (void)state_.apply(change);
}

void ExtenderImpl::list_pods(const std::vector<json>& objects, std::vector<std::string>* notes) {
  std::set<std::string> listed;
  for (const auto& o : objects) listed.insert(key_of(o));
  // What the list does not name is gone, except binds still assumed: a paged list shows the pods
  // as they were at its first page, and a pod created and bound by us since is not in it. The
  // watch, or settle() when their time is up, decides those.
  // A bind read from the state file at start is settled by the first list, made after the start:
  // a Binding it shows neither pending nor bound was never made, whatever the file says.
  for (const auto& key : state_.pod_keys()) {
    const auto assumed = assumed_.find(key);
    if (listed.contains(key) || (assumed != assumed_.end() && !assumed->second.from_store)) continue;
    if (assumed != assumed_.end()) unacknowledged(key);
    forget_pod(key);
  }
  if (book_) {  // reservation pods first: the fractions that follow them learn their GPUs from them
    for (const auto& e : book_->entries()) {
      if (e.visible && !listed.contains(book_->key(e.pod))) book_->gone(e.pod);
    }
    book_->keep_strays([&](const std::string& pod) { return listed.contains(book_->key(pod)); });
    for (const auto& o : objects) {
      if (book_->is_reservation(o) && !finished(o)) book_->seen(o, gpu_count_of(node_name(o)));
    }
  }
  // Pods that name their devices first: the GPUs of a pod that names none are a guess, which must
  // not take the ones another pod names.
  auto guessed = [](const json& o) {
    if (node_name(o).empty()) return false;
    const json* annotations = o.contains("metadata") && o["metadata"].contains("annotations") ? &o["metadata"]["annotations"] : nullptr;
    if (annotations == nullptr || !annotations->is_object()) return true;
    for (const auto& [k, v] : annotations->items()) {
      if (k.ends_with(".gpus.devices") || k == k8s::kLedgerGpusAnnotation) return false;
    }
    return true;
  };
  for (const auto& o : objects) {
    if (!guessed(o)) pod_seen(o, notes);
  }
  for (const auto& o : objects) {
    if (guessed(o)) pod_seen(o, notes);
  }
  if (book_) sweep_locked();  // reservation pods no fraction named get a GPU; idle ones go
}

void ExtenderImpl::pod_event(const ApiEvent& event, std::vector<std::string>* notes) {
  if (event.type != ApiEvent::Type::kDeleted) {
    pod_seen(event.object, notes);
    return;
  }
  if (book_ && book_->is_reservation(event.object)) {
    reservation_gone(event.object, /*finished=*/false);
    return;
  }
  const std::string key = key_of(event.object);
  forget_pod(key);
  if (assumed_.contains(key)) confirmed(key);
}

void ExtenderImpl::pod_seen(const json& object, std::vector<std::string>* notes) {
  if (book_ && book_->is_reservation(object)) {
    if (finished(object)) {
      reservation_gone(object, /*finished=*/true);
    } else {
      reservation_seen(object);
    }
    return;
  }
  const std::string key = key_of(object);
  const auto assumed = assumed_.find(key);
  if (finished(object)) {  // Succeeded or Failed: its GPUs are free again
    forget_pod(key);
    if (assumed != assumed_.end()) confirmed(key);
    if (object.value(json::json_pointer("/status/phase"), std::string()) != "Succeeded") return;
    // A Succeeded member keeps its gang from being stale while it is in the API (KAI's IsStale).
    if (auto group = k8s::pod_group_of(object)) state_.observe_succeeded(key, key.substr(0, key.find('/') + 1) + *group);
    return;
  }
  const std::string uid = k8s::metadata_string(object, "uid");
  const std::string node = node_name(object);
  auto raw = k8s::decode_pod(object, options_.decode, state_.classes());
  if (assumed != assumed_.end()) {
    const bool same_pod = assumed->second.uid.empty() || uid.empty() || assumed->second.uid == uid;
    if (same_pod && node.empty() && !assumed->second.from_store) return;  // our bind is not visible yet: an older view of the pod
    if (same_pod && node.empty()) {
      unacknowledged(key);  // the first list after the start shows it pending: that Binding was never made
      forget_pod(key);
    } else if (same_pod && node == assumed->second.node) {
      confirmed(key);  // seen bound where we bound it
      const PodRecord* held = state_.pod(key);
      if (raw && held != nullptr && held->raw.bound && raw->bound->devices.empty()) raw->bound->devices = held->raw.bound->devices;
    } else {
      confirmed(key);  // another pod of that name, or bound elsewhere: our bind did not happen
      forget_pod(key);
    }
  }
  if (!raw) {
    if (node.empty()) {
      (void)state_.forget(key);  // a pending pod that does not decode: Filter answers why, nothing to hold
      return;
    }
    if (claim_edited(key, nullptr, object)) return;  // a recorded claim made unreadable: held as recorded
    // It fences the GPUs it can be read to claim; its whole node only when none can be read.
    (void)state_.observe_unreadable(key, node, readable_gpus(object, node), raw.status().message());
    note(notes, fmt::format("{}: {}", key, state_.pod(key)->note));
    return;
  }
  if (raw->bound && raw->bound->devices.empty()) {
    // Bound without device annotations (a whole-GPU pod, or one another binder placed): the GPUs
    // the ledger already holds for it, when it is the same pod on the same node.
    const PodRecord* held = state_.pod(key);
    if (held != nullptr && held->raw.uid == raw->uid && held->raw.bound && held->raw.bound->node == raw->bound->node) {
      raw->bound->devices = held->raw.bound->devices;
    }
  }
  std::optional<GroupPlan> groups;
  if (book_ && (groups = plan_groups(*raw, object)) && !groups->gpus.empty()) raw->bound->devices = groups->gpus;
  if (claim_edited(key, &*raw, object)) return;
  if (groups) follow_groups(key, raw->bound->node, *groups);
  const PodStanding standing = state_.observe(*raw);
  if (raw->bound && (standing == PodStanding::kBound || standing == PodStanding::kConflict)) record_claim(key, object);
  if (standing == PodStanding::kConflict) note(notes, fmt::format("{}: {}", key, state_.pod(key)->note));
}

void ExtenderImpl::unacknowledged(const std::string& key) {
  spdlog::info("pod {}: the state file has its bind to {}, and the API server's pods listed since the start do not show it bound "
               "there; the bind was never made (or never acknowledged), and its GPUs are released",
               key, assumed_.at(key).node);
  confirmed(key);
}

void ExtenderImpl::confirmed(const std::string& key) {
  assumed_.erase(key);
  bindings_.erase(key);
  if (Status st = store_->remove_binding(key); !st.is_ok()) {
    spdlog::warn("pod {}: its bind is settled, but the state file still lists it: {}", key, st.message());
  }
}

std::vector<AssumedBind> ExtenderImpl::assumed_binds() const {
  std::shared_lock lock(mu_);
  std::vector<AssumedBind> out;
  const auto now = std::chrono::steady_clock::now();
  for (const auto& [key, a] : assumed_) {
    if (a.deadline <= now) out.push_back({key, a.uid, a.node});
  }
  return out;
}

void ExtenderImpl::settle(const AssumedBind& bind, const json& pod) {
  std::unique_lock lock(mu_);
  auto it = assumed_.find(bind.pod);
  if (it == assumed_.end() || it->second.uid != bind.uid) return;  // settled meanwhile by the watch
  if (pod.is_object() && k8s::metadata_string(pod, "uid") == bind.uid && node_name(pod) == bind.node && !finished(pod)) {
    // Bound there: it stays assumed until the watch shows it so (an older view of the pod the
    // watch still has to deliver must not release it), and is asked for again if that is slow.
    it->second.deadline = std::chrono::steady_clock::now() + options_.assume_ttl;
    return;
  }
  spdlog::info("pod {}: the bind to {} is not in the API server after {} s; its GPUs are released", bind.pod, bind.node,
               options_.assume_ttl.count());
  confirmed(bind.pod);
  forget_pod(bind.pod);
  if (pod.is_object() && !finished(pod)) pod_seen(pod, nullptr);  // as it is now: pending again, or bound by another
  retry_refused(lock);  // what it held is free: pods refused for it come back now
}

std::string ExtenderImpl::verify() const {
  std::shared_lock lock(mu_);
  return state_.verify();
}

void ExtenderImpl::new_term() {
  std::unique_lock lock(mu_);
  victims_to_evict_.clear();
}

std::vector<PodEviction> ExtenderImpl::evictions() {
  if (!options_.watching) return {};
  std::unique_lock lock(mu_);
  std::vector<PodEviction> out;
  const auto now = std::chrono::steady_clock::now();
  std::erase_if(victims_to_evict_, [&](const auto& v) {  // gone, another pod by that name now, or stale
    const PodRecord* r = state_.pod(v.first);
    return r == nullptr || r->standing != PodStanding::kBound || r->raw.uid != v.second.eviction.uid || now > v.second.until;
  });
  for (const auto& [key, victim] : victims_to_evict_) out.push_back(victim.eviction);
  if (options_.staleness_grace.count() < 0) return out;
  for (const auto& gang : state_.stale_gangs(options_.staleness_grace)) {
    for (const std::string& key : gang.evict) {
      const PodRecord* r = state_.pod(key);
      out.push_back({key, r != nullptr ? r->raw.uid : std::string(),
                     fmt::format("its gang {} has {} of minMember {} pods on nodes, stale since {} (stalenessGracePeriod {} s)",
                                 gang.group, gang.active, gang.min_member, k8s::format_micro_time(std::chrono::system_clock::time_point(std::chrono::seconds(gang.stale_since))),
                                 options_.staleness_grace.count()),
                     PodEviction::Why::kStaleGang});
    }
  }
  return out;
}

}  // namespace fracpack::api
