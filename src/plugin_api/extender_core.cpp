// The extender core (extender.hpp): ledger, queues and store behind one reader-writer lock.
#include <algorithm>
#include <deque>
#include <mutex>
#include <shared_mutex>
#include <unordered_set>

#include <fmt/format.h>

#include "fracpack/cluster_state.hpp"
#include "fracpack/extender.hpp"
#include "fracpack/k8s/decode.hpp"
#include "fracpack/k8s/object_stream.hpp"
#include "fracpack/ledger.hpp"
#include "fracpack/queues/charge.hpp"
#include "fracpack/queues/decode_queue.hpp"
#include "fracpack/queues/queue_book.hpp"
#include "fracpack/queues/reclaim.hpp"
#include "fracpack/verdict_cache.hpp"
#include "plugin_api/binding_log.hpp"
#include "plugin_api/name_resolver.hpp"
#include "plugin_api/store.hpp"

namespace fracpack {
namespace {

using nlohmann::json;
using queues::Amounts;

constexpr std::size_t kBytesRemembered = std::size_t{512} << 20;  // and their JSON, roughly

/// Roughly what a JSON value holds in memory: its strings plus a node's overhead per value.
/// (Depth is bounded by the fronts, so the recursion is too.)
std::size_t approx_bytes(const json& v) {
  std::size_t n = sizeof(json);
  if (v.is_string()) return n + v.get_ref<const std::string&>().size();
  if (v.is_object()) {
    for (const auto& [k, x] : v.items()) n += k.size() + 32 + approx_bytes(x);
  } else if (v.is_array()) {
    for (const auto& x : v) n += approx_bytes(x);
  }
  return n;
}

/// The annotations a binder writes for a fraction: which devices, and the compute portion.
std::map<std::string, std::string> annotations_for(const PodRequest& pod, const GpuChoice& choice) {
  std::map<std::string, std::string> out;
  const GpuFraction* f = pod.fraction();
  if (f == nullptr || choice.gpus.empty()) return out;
  const std::string prefix = "nvidia.com/container." + f->container + ".";
  out[prefix + "gpus.devices"] = fmt::format("{}", fmt::join(choice.gpus, ","));
  out[prefix + "gpu-compute.portion"] = fmt::format("{}.{:02}", choice.compute.front() / 100, choice.compute.front() % 100);
  return out;
}

/// The cluster objects the ledger is built from, as applied.
struct Objects {
  std::map<std::string, json> nodes;  ///< v1 Nodes by name, as received
  std::map<std::string, queues::QueueSpec> queues;
  std::map<std::string, queues::PodGroupSpec> groups;  ///< by "namespace/name"
  PriorityClasses classes;
};

class ExtenderImpl final : public Extender {
 public:
  ExtenderImpl(ExtenderOptions options, std::shared_ptr<const Policy> policy, std::unique_ptr<api::Store> store)
      : options_(std::move(options)), policy_(std::move(policy)), store_(std::move(store)) {}

  /// Loads objects and bindings from the store and builds the ledger.
  Status load() {
    auto stored_objects = store_->objects();
    if (!stored_objects) return stored_objects.status();
    Objects objects;
    api::StoreChange ignored;
    if (auto st = stage_objects(*stored_objects, objects, ignored, nullptr); !st.is_ok()) return st;
    auto stored = store_->bindings();
    if (!stored) return stored.status();
    api::BindingLog bindings;
    bindings.assign(std::move(*stored));
    std::vector<std::string> conflicts;
    auto built = build(objects, bindings, &conflicts);
    if (!built) return built.status();
    install(std::move(objects), std::move(bindings), std::move(*built));
    return Status::ok();
  }

  Status apply(const std::vector<json>& objects, std::vector<std::string>* warnings) override {
    std::unique_lock lock(mu_);
    Objects next = objects_;
    api::StoreChange change;
    if (auto st = stage_objects(objects, next, change, warnings); !st.is_ok()) return st;
    return commit(std::move(next), bindings_, std::move(change), warnings);
  }

  std::vector<std::size_t> nodes_to_apply(NodeNames names, const std::vector<const json*>& objects) override {
    std::vector<std::size_t> out;
    std::vector<std::size_t> same_spec;  // changed objects the ledger need not rebuild for
    {
      std::shared_lock lock(mu_);
      for (std::size_t i = 0; i < names.size() && i < objects.size(); ++i) {
        auto known = objects_.nodes.find(std::string(names[i]));
        const auto position = state_->find_node(names[i]);
        if (known == objects_.nodes.end() || !position) {
          out.push_back(i);
          continue;
        }
        const std::string version = k8s::metadata_string(*objects[i], "resourceVersion");
        if (!version.empty() && version == k8s::metadata_string(known->second, "resourceVersion")) continue;
        if (*objects[i] == known->second) continue;
        auto spec = k8s::decode_node(*objects[i], options_.decode);
        if (spec && *spec == state_->node(*position)) {
          same_spec.push_back(i);
        } else {
          out.push_back(i);  // changed, or no longer decodes: apply() says why
        }
      }
    }
    if (!same_spec.empty()) {
      std::unique_lock lock(mu_);
      for (std::size_t i : same_spec) {
        if (auto known = objects_.nodes.find(std::string(names[i])); known != objects_.nodes.end()) known->second = *objects[i];
      }
    }
    return out;
  }

  Status remove(const std::string& kind, const std::string& name) override {
    std::unique_lock lock(mu_);
    Objects next = objects_;
    api::BindingLog bindings = bindings_;
    api::StoreChange change;
    if (kind == "Node") {
      if (next.nodes.erase(name) == 0) return {Code::kNotFound, fmt::format("node {} is not known", name)};
      std::vector<api::StoredBinding> kept;
      for (const auto& [seq, b] : bindings_) {
        if (b.node != name) kept.push_back(b);
      }
      bindings.assign(kept);
      change.bindings = std::move(kept);
    } else if (kind == "Queue") {
      if (next.queues.erase(name) == 0) return {Code::kNotFound, fmt::format("queue {} is not known", name)};
      for (const auto& [child, q] : next.queues) {
        if (q.parent == name) {
          return invalid_argument("Queue {}: it is the parentQueue of queue {}; remove or re-parent its child queues first",
                                  name, child);
        }
      }
    } else if (kind == "PodGroup") {
      if (next.groups.erase(name) == 0) return {Code::kNotFound, fmt::format("PodGroup {} is not known", name)};
    } else {
      return invalid_argument("kind \"{}\" cannot be removed (Node, Queue, PodGroup)", kind);
    }
    change.objects.push_back({kind, name, nullptr});
    return commit(std::move(next), std::move(bindings), std::move(change), nullptr);
  }

  Result<FilterAnswer> filter(const json& object, NodeNames nodes) override {
    auto pod = decode(object);
    if (!pod) return pod.status();
    remember(*pod, object);
    std::shared_lock lock(mu_);
    FilterAnswer answer;
    std::vector<std::size_t> known;
    known.reserve(nodes.size());
    const auto resolved = names_.resolve(*state_, nodes);  // held: another call may evict it
    const auto& positions = *resolved;
    std::vector<bool> listed(state_->node_count());  // a node sent twice is answered once
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
    if (pinned_to_binding(*pod, known, /*list_failing=*/true, answer)) return answer;
    if (refused_by_queue(*pod, known, answer)) return answer;
    add_verdicts(*pod, known, /*list_passing=*/true, answer);
    return answer;
  }

  Result<FilterAnswer> filter_all(const json& object, std::size_t max_nodes) override {
    auto pod = decode(object);
    if (!pod) return pod.status();
    remember(*pod, object);
    std::shared_lock lock(mu_);
    FilterAnswer answer;
    std::vector<std::size_t> all(state_->node_count());
    for (std::size_t n = 0; n < all.size(); ++n) all[n] = n;
    if (pinned_to_binding(*pod, all, /*list_failing=*/false, answer)) return answer;
    if (refused_by_queue(*pod, all, answer)) return answer;
    if (max_nodes == 1) {
      if (auto best = select(*state_, *pod, *policy_)) {
        answer.passed.push_back(state_->node(best->node).name);
        return answer;
      }
    } else {
      const auto ranked = verdicts_.rank(*state_, *pod, *policy_, all);
      const std::size_t keep = max_nodes == 0 ? ranked.size() : std::min(max_nodes, ranked.size());
      for (std::size_t i = 0; i < keep; ++i) answer.passed.push_back(state_->node(ranked[i].node).name);
      if (!answer.passed.empty()) return answer;
    }
    add_verdicts(*pod, all, /*list_passing=*/false, answer);  // none passes: every node with its reason
    return answer;
  }

  Result<std::vector<HostScore>> prioritize(const json& object, NodeNames nodes) override {
    auto pod = decode(object);
    if (!pod) return pod.status();
    remember(*pod, object);
    std::shared_lock lock(mu_);
    std::vector<std::size_t> known;
    known.reserve(nodes.size());
    const auto resolved = names_.resolve(*state_, nodes);
    const auto& position = *resolved;  // nodes[i] → node index
    for (const auto& p : position) {
      if (p) known.push_back(*p);
    }
    std::vector<std::int64_t> score(state_->node_count(), 0);
    if (!known.empty()) {
      for (const auto& r : verdicts_.rank(*state_, *pod, *policy_, known)) score[r.node] = static_cast<std::int64_t>(r.score + 0.5);
    }
    std::vector<HostScore> out;
    out.reserve(nodes.size());
    for (std::size_t i = 0; i < nodes.size(); ++i) out.push_back({std::string(nodes[i]), position[i] ? score[*position[i]] : 0});
    return out;
  }

  Result<BindAnswer> bind(const std::string& ns, const std::string& name, const std::string& uid,
                          const std::string& node) override {
    const std::string key = (ns.empty() ? "default" : ns) + "/" + name;
    std::optional<PodRequest> pod;
    std::string seen_uid;  // set when Filter saw a pod of this name with another UID
    {
      std::lock_guard seen_lock(seen_mu_);
      auto it = seen_.find(key);
      if (it != seen_.end() && (uid.empty() || it->second.pod.uid.empty() || it->second.pod.uid == uid)) {
        pod = it->second.pod;
      } else if (it != seen_.end()) {
        seen_uid = it->second.pod.uid;
      }
    }
    std::unique_lock lock(mu_);
    if (!pod) {
      if (auto repeat = bound_already(key, uid, node)) return *repeat;
      if (!seen_uid.empty()) {
        return Status(Code::kNotFound, fmt::format("pod {}: Bind names PodUID {}, but Filter saw UID {} under this name "
                                                   "(a recreated pod? run Filter on the current one)",
                                                   key, uid, seen_uid));
      }
      return Status(Code::kNotFound, fmt::format("pod {} was not seen by Filter or Prioritize; fracpack needs its "
                                                 "requests before it can bind it",
                                                 key));
    }
    auto n = state_->find_node(node);
    if (!n) return Status(Code::kNotFound, fmt::format("pod {}: node {} is not known to fracpack", key, node));
    if (auto repeat = bound_already(key, uid, node)) return *repeat;
    if (auto refusal = admit(*pod)) return Status(Code::kResourceExhausted, refusal->message, "queue:" + refusal->queue);
    auto ranked = rank_nodes(*state_, *pod, *policy_, {*n});  // this node only: O(1), not an index search
    if (ranked.empty()) {
      auto why = filter_nodes(*state_, *pod, {*n});
      const Verdict& v = why.front().second;
      // A lost race (the node filled up since Filter) or a node that could never take the pod.
      const char* what = v.code == Code::kUnschedulableAndUnresolvable ? "can never fit" : "no longer fits";
      return Status(Code::kUnschedulable, fmt::format("pod {} {} node {}: {}", key, what, node, v.text()));
    }
    if (Status st = state_->reserve(*pod, *n, ranked.front().choice); !st.is_ok()) return st;
    const Allocation& a = *state_->allocation(key);
    api::StoredBinding record{key, pod->uid, node, a.choice.gpus, object_of(key)};
    if (Status st = store_->put_binding(record); !st.is_ok()) {
      state_->release(key);  // never acknowledge what is not durable
      return st;
    }
    bindings_.add(std::move(record));
    if (book_) {
      if (auto q = leaf_queue(*pod)) book_->charge(*q, queues::charge_placed(*pod, *state_, a), pod->preemptible);
    }
    forget(key);
    return BindAnswer{key, node, a.choice, annotations_for(*pod, a.choice)};
  }

  Result<std::map<std::string, std::vector<std::string>>> preempt(
      const json& object, const std::map<std::string, std::vector<std::string>>& candidates) override {
    auto pod = decode(object);
    if (!pod) return pod.status();
    std::unique_lock lock(mu_);  // what-if removals change the ledger for a moment
    std::map<std::string, std::string> uid_of;
    for (const auto& [seq, b] : bindings_) uid_of[b.pod_key] = b.uid;
    std::map<std::string, std::vector<std::string>> out;
    const queues::QueueBook& book = book_ ? *book_ : empty_book();
    const auto queue = leaf_queue(*pod);
    const Amounts charge = queues::charge_pending(*pod, *state_);
    for (const auto& [node, offered] : candidates) {
      auto n = state_->find_node(node);
      if (!n) continue;
      NodeMask only(state_->node_count(), false);
      only[*n] = true;
      auto victims = queues::find_victims(*state_, book, *pod, queue, charge, *policy_, &only);
      if (!victims) continue;
      std::vector<std::string> uids;
      bool subset = true;
      for (const auto& key : victims->pods) {
        const std::string& uid = uid_of[key];
        if (std::find(offered.begin(), offered.end(), uid) == offered.end()) subset = false;
        uids.push_back(uid);
      }
      if (subset) out[node] = std::move(uids);
    }
    return out;
  }

  Status release(const std::string& pod_key) override {
    std::unique_lock lock(mu_);
    const Allocation* a = state_->allocation(pod_key);
    if (a == nullptr) return {Code::kNotFound, fmt::format("release {}: the ledger holds no binding for this pod", pod_key)};
    if (Status st = store_->remove_binding(pod_key); !st.is_ok()) return st;
    if (book_) {
      if (const auto* b = bindings_.find(pod_key)) {
        if (auto pod = decode_stored(b->pod)) {
          if (auto q = leaf_queue(*pod)) book_->charge(*q, queues::charge_placed(*pod, *state_, *a), pod->preemptible, -1);
        }
      }
    }
    state_->release(pod_key);
    bindings_.erase(pod_key);
    return Status::ok();
  }

  Status sync(const std::vector<json>& bound_pods, bool cluster_empty, std::vector<std::string>* conflicts) override {
    if (bound_pods.empty() && !cluster_empty) {
      return invalid_argument("Sync: no bound pods given; a Sync replaces every binding, so an empty one must say the cluster "
                              "runs no pods (cluster_empty: true)");
    }
    if (!bound_pods.empty() && cluster_empty) {
      return invalid_argument("Sync: cluster_empty is true but {} bound pod(s) are given", bound_pods.size());
    }
    std::unique_lock lock(mu_);
    std::vector<api::StoredBinding> next;
    std::unordered_set<std::string> seen;
    for (std::size_t i = 0; i < bound_pods.size(); ++i) {
      auto pod = decode_with(objects_, bound_pods[i]);
      if (!pod) return Status(pod.status().code(), fmt::format("bound_pods[{}]: {}", i, pod.status().message()));
      if (!pod->bound) return invalid_argument("bound_pods[{}]: pod {}: spec.nodeName is not set; Sync takes bound pods only", i, pod->key());
      if (!seen.insert(pod->key()).second) return invalid_argument("bound_pods[{}]: pod {} is listed twice", i, pod->key());
      next.push_back({pod->key(), pod->uid, pod->bound->node, pod->bound->devices, bound_pods[i]});
    }
    api::BindingLog bindings;
    bindings.assign(next);
    api::StoreChange change;
    change.bindings = std::move(next);
    return commit(objects_, std::move(bindings), std::move(change), conflicts);
  }

  Result<Explanation> explain(const json& object) override {
    auto pod = decode(object);
    if (!pod) return pod.status();
    std::shared_lock lock(mu_);
    Explanation e;
    if (auto best = select(*state_, *pod, *policy_)) {  // it fits: say where, and how each node stands
      e.code = Code::kOk;
      std::size_t fit = 0;
      for (auto& [n, verdict] : filter_nodes(*state_, *pod)) {
        fit += verdict.fits() ? 1 : 0;
        if (e.nodes.size() < options_.explain_nodes) {
          e.nodes.emplace_back(state_->node(n).name, std::move(verdict));
        } else {
          ++e.nodes_omitted;
        }
      }
      e.summary = fmt::format("{}/{} nodes are available; the policy's choice is {}", fit, state_->node_count(),
                              state_->node(best->node).name);
    } else {
      e = fracpack::explain(*state_, *pod, nullptr, options_.explain_nodes);
    }
    if (auto refusal = admit(*pod)) {
      e.summary = refusal->message + "; and " + e.summary;
      if (e.code == Code::kOk) e.code = Code::kUnschedulable;
    }
    return e;
  }

  LedgerSnapshot snapshot() const override {
    std::shared_lock lock(mu_);
    LedgerSnapshot out;
    out.nodes.reserve(state_->node_count());
    for (std::size_t n = 0; n < state_->node_count(); ++n) {
      LedgerSnapshot::Node& node = out.nodes.emplace_back();
      node.name = state_->node(n).name;
      for (std::size_t g = 0; g < state_->node(n).gpus.size(); ++g) {
        const GpuUsage& u = state_->usage(n).gpus[g];
        node.gpus.push_back({static_cast<int>(g), u.state, state_->node(n).gpus[g].memory, u.used, u.fenced(), u.holders});
      }
    }
    for (const auto& [seq, b] : bindings_) {
      // The ledger's devices: a running pod adopted without a devices annotation got its GPUs then.
      const Allocation* a = state_->allocation(b.pod_key);
      out.bindings.push_back({b.pod_key, b.uid, b.node, a != nullptr ? a->choice.gpus : b.gpus});
    }
    if (book_) {
      for (std::size_t q : tree_->top_down()) {
        out.queues.push_back({tree_->queue(q).name, gpus(book_->allocated(q)), gpus(book_->allocated_non_preemptible(q)),
                              gpus(book_->fair_share(q))});
      }
    }
    return out;
  }

  LedgerGauges gauges() const override {
    std::shared_lock lock(mu_);
    LedgerGauges g;
    for (GpuState s : {GpuState::kIdle, GpuState::kWhole, GpuState::kSharedTimeSlicing, GpuState::kSharedSmSharing}) {
      g.gpus_by_state[std::string(gpu_state_name(s))] = 0;
    }
    for (std::size_t n = 0; n < state_->node_count(); ++n) {
      for (const auto& u : state_->usage(n).gpus) ++g.gpus_by_state[std::string(gpu_state_name(u.state))];
    }
    if (book_) {
      for (std::size_t q : tree_->top_down()) {
        g.queues.push_back({tree_->queue(q).name, gpus(book_->allocated(q)), gpus(book_->fair_share(q))});
      }
    }
    g.pods_bound = bindings_.size();
    return g;
  }

 private:
  /// A queue amount's GPUs (the book counts thousandths).
  template <class Amounts>
  static double gpus(const Amounts& amounts) {
    return static_cast<double>(amounts[queues::Resource::kGpu]) / 1000.0;
  }

  Result<PodRequest> decode(const json& object) const {
    if (!object.is_object()) return invalid_argument("Pod: must be an object, not a {}", object.type_name());
    std::shared_lock lock(mu_);
    return decode_with(objects_, object);
  }
  /// decode() for callers that already hold the lock.
  Result<PodRequest> decode_stored(const json& object) const { return decode_with(objects_, object); }
  /// A pod as `objects` (its priority classes and PodGroups) make it.
  Result<PodRequest> decode_with(const Objects& objects, const json& object) const {
    auto pod = k8s::decode_pod(object, options_.decode, objects.classes);
    if (pod && pod->gang) apply_group(objects, *pod);
    return pod;
  }
  static void apply_group(const Objects& objects, PodRequest& pod) {
    auto g = objects.groups.find(pod.namespace_name + "/" + *pod.gang);
    if (g == objects.groups.end()) return;
    if (g->second.queue) pod.queue = *g->second.queue;
    if (g->second.priority_class) {
      if (auto v = objects.classes.find(*g->second.priority_class)) {
        pod.priority = *v;
        pod.preemptible = *v < kNonPreemptibleThreshold;
      }
    }
    if (g->second.preemptibility) pod.preemptible = *g->second.preemptibility == "preemptible";
  }

  void remember(const PodRequest& pod, const json& object) {
    std::lock_guard lock(seen_mu_);
    const std::string key = pod.key();
    auto found = seen_.find(key);
    // Filter then Prioritize send the same pod: keep the copy already held (a deep compare is
    // cheaper than a deep copy).
    if (found != seen_.end() && found->second.pod.uid == pod.uid && found->second.object == object) return;
    const std::size_t bytes = approx_bytes(object);
    if (found != seen_.end()) {
      seen_bytes_ -= found->second.bytes;
      found->second = Known{pod, object, bytes, found->second.seq};  // keeps its place in the order
    } else {
      seen_.emplace(key, Known{pod, object, bytes, ++seen_seq_});
      seen_order_.emplace_back(key, seen_seq_);
    }
    seen_bytes_ += bytes;
    // Bounded by count and by bytes: a client sending huge distinct pods must not exhaust memory.
    // An order entry whose sequence number no longer matches belongs to a pod forgotten since
    // (bound, or released): dropping it must not drop the pod's newer copy.
    while (seen_order_.size() > 1 && (seen_order_.size() > options_.pods_remembered || seen_bytes_ > kBytesRemembered)) {
      const auto& [oldest, seq] = seen_order_.front();
      if (auto old = seen_.find(oldest); old != seen_.end() && old->second.seq == seq) {
        seen_bytes_ -= old->second.bytes;
        seen_.erase(old);
      }
      seen_order_.pop_front();
    }
  }
  void forget(const std::string& key) {
    std::lock_guard lock(seen_mu_);
    if (auto it = seen_.find(key); it != seen_.end()) {
      seen_bytes_ -= it->second.bytes;
      seen_.erase(it);  // its order entry goes stale: it no longer matches any sequence number
    }
  }
  json object_of(const std::string& key) {
    std::lock_guard lock(seen_mu_);
    auto it = seen_.find(key);
    return it == seen_.end() ? json::object() : it->second.object;
  }

  std::optional<std::size_t> leaf_queue(const PodRequest& pod) const {
    if (!tree_) return std::nullopt;
    return leaf_queue(*tree_, pod);
  }
  static std::optional<std::size_t> leaf_queue(const queues::QueueTree& tree, const PodRequest& pod) {
    auto q = tree.find(pod.queue);
    if (!q || !tree.is_leaf(*q)) return std::nullopt;
    return q;
  }

  /// When the pod's queue refuses it, every node in `nodes` fails with the queue's reason.
  /// Caller holds mu_.
  bool refused_by_queue(const PodRequest& pod, const std::vector<std::size_t>& nodes, FilterAnswer& answer) const {
    auto refusal = admit(pod);
    if (!refusal) return false;
    const SharedReason why(refusal->message);
    for (std::size_t n : nodes) answer.failed.emplace_back(state_->node(n).name, why);
    return true;
  }

  /// A pod the ledger already holds (its Bind succeeded here but the scheduler retries it, say)
  /// fits only where it is bound: that node passes, every other is unresolvable, so the retry
  /// binds it there again. Another pod of the same name (another UID) fits nowhere until the old
  /// binding is released. `list_failing`: list the other nodes with the reason. Caller holds mu_.
  bool pinned_to_binding(const PodRequest& pod, const std::vector<std::size_t>& nodes, bool list_failing, FilterAnswer& answer) const {
    const std::string key = pod.key();
    const Allocation* held = state_->allocation(key);
    if (held == nullptr) return false;
    const api::StoredBinding* b = bindings_.find(key);
    const bool other_pod = b != nullptr && !b->uid.empty() && !pod.uid.empty() && b->uid != pod.uid;
    const std::string& where = state_->node(held->node).name;
    const SharedReason why(other_pod ? fmt::format("pod {} with UID {} is bound to node {} in fracpack's ledger; this pod (UID {}) is "
                                                   "another of that name: release the old one, or Sync",
                                                   key, b->uid, where, pod.uid)
                                     : fmt::format("pod {} is already bound to node {} in fracpack's ledger", key, where));
    for (std::size_t n : nodes) {
      if (!other_pod && n == held->node) {
        answer.passed.push_back(where);
      } else if (list_failing || other_pod) {
        answer.unresolvable.emplace_back(state_->node(n).name, why);
      }
    }
    return true;
  }

  /// Bind of a pod the ledger already holds: the same pod to the same node is a repeat (the
  /// answer again); another node, or another pod of that name (another UID), is kAlreadyExists.
  /// nullopt when `key` is not bound. Caller holds mu_.
  std::optional<Result<BindAnswer>> bound_already(const std::string& key, const std::string& uid, const std::string& node) {
    const Allocation* held = state_->allocation(key);
    if (held == nullptr) return std::nullopt;
    const api::StoredBinding* b = bindings_.find(key);
    if (b != nullptr && !uid.empty() && !b->uid.empty() && b->uid != uid) {
      return Status(Code::kAlreadyExists, fmt::format("pod {} is bound with UID {}; this Bind names UID {} (a recreated pod? release "
                                                      "the old one, or Sync)", key, b->uid, uid));
    }
    if (state_->node(held->node).name == node) return answer_for(key, *held);
    return Status(Code::kAlreadyExists, fmt::format("pod {} is already bound to node {}", key, state_->node(held->node).name));
  }

  /// Each node's cached verdict into `answer`: failing nodes with their reason categories, and
  /// (with `list_passing`) the nodes that fit. Caller holds mu_.
  void add_verdicts(const PodRequest& pod, const std::vector<std::size_t>& nodes, bool list_passing, FilterAnswer& answer) {
    verdicts_.visit(*state_, pod, *policy_, nodes, [&](std::size_t n, const VerdictCache::Entry& e) {
      const std::string& name = state_->node(n).name;
      if (e.fits()) {
        if (list_passing) answer.passed.push_back(name);
      } else if (e.code == Code::kUnschedulableAndUnresolvable) {
        answer.unresolvable.emplace_back(name, e.categories);
      } else {
        answer.failed.emplace_back(name, e.categories);
      }
    });
  }

  /// Queue admission (none without queues). A pod whose queue is missing or not a leaf is refused.
  std::optional<queues::Refusal> admit(const PodRequest& pod) const {
    if (!book_) return std::nullopt;
    auto q = leaf_queue(pod);
    if (!q) {
      return queues::Refusal{"Invalid", pod.queue,
                             fmt::format("pod {}: queue \"{}\" is not a leaf Queue known to fracpack", pod.key(), pod.queue)};
    }
    return book_->admit(*q, queues::charge_pending(pod, *state_), pod.preemptible);
  }

  const queues::QueueBook& empty_book() {
    if (!empty_tree_) {
      empty_tree_ = std::make_unique<queues::QueueTree>(*queues::QueueTree::build({}));
      empty_book_ = std::make_unique<queues::QueueBook>(*empty_tree_);
    }
    return *empty_book_;
  }

  /// Validates `objects` and stages them into `into` and `change`. Nothing is staged unless all
  /// of them are good (the caller's copies are then as they were).
  Status stage_objects(const std::vector<json>& objects, Objects& into, api::StoreChange& change,
                       std::vector<std::string>* warnings) const {
    Objects next = into;
    api::StoreChange staged = change;
    for (std::size_t i = 0; i < objects.size(); ++i) {
      const json& o = objects[i];
      const std::string kind = k8s::kind_of(o);
      auto at = [&](const Status& st) { return Status(st.code(), fmt::format("objects[{}]: {}", i, st.message())); };
      std::string name;
      if (kind == "Node") {
        auto n = k8s::decode_node(o, options_.decode);
        if (!n) return at(n.status());
        name = n->name;
        next.nodes[name] = o;
      } else if (kind == "Queue") {
        auto q = queues::decode_queue(o);
        if (!q) return at(q.status());
        name = q->name;
        next.queues[name] = std::move(*q);
      } else if (kind == "PodGroup") {
        auto g = queues::decode_pod_group(o);
        if (!g) return at(g.status());
        name = g->key();
        next.groups[name] = std::move(*g);
      } else if (kind == "PriorityClass") {
        auto v = o.find("value");
        name = k8s::metadata_string(o, "name");
        if (v == o.end() || !v->is_number_integer() || name.empty() || *v < INT32_MIN || *v > INT32_MAX) {
          return at(invalid_argument("PriorityClass {}: needs metadata.name and an integer value (32 bits)", name));
        }
        next.classes.add(name, v->get<std::int32_t>());
      } else {
        if (warnings != nullptr) {
          warnings->push_back(fmt::format("{}: kind \"{}\" is not used by the extender; ignored", k8s::describe(o, 0), kind));
        }
        continue;
      }
      staged.objects.push_back({kind, name, &o});
    }
    into = std::move(next);
    change = std::move(staged);
    return Status::ok();
  }

  /// The ledger, queues and book that `objects` and `bindings` make.
  struct Built {
    std::optional<ClusterState> state;
    std::unique_ptr<queues::QueueTree> tree;
    std::unique_ptr<queues::QueueBook> book;
  };

  /// Builds the ledger from `objects` and re-adopts every binding in order; bindings it cannot
  /// hold are conflicts (their GPUs fenced). An error (nodes or queues that do not form a valid
  /// cluster) changes nothing.
  Result<Built> build(const Objects& objects, const api::BindingLog& bindings, std::vector<std::string>* conflicts) const {
    std::vector<NodeSpec> nodes;
    for (const auto& [name, object] : objects.nodes) {
      auto node = k8s::decode_node(object, options_.decode);
      if (!node) return node.status();
      nodes.push_back(std::move(*node));
    }
    auto created = ClusterState::create(std::move(nodes), options_.placement);
    if (!created) return created.status();
    Built out;
    out.state.emplace(std::move(*created));
    ClusterState& state = *out.state;
    if (!objects.queues.empty()) {
      std::vector<queues::QueueSpec> specs;
      for (const auto& [name, q] : objects.queues) specs.push_back(q);
      auto tree = queues::QueueTree::build(std::move(specs));
      if (!tree) return tree.status();
      out.tree = std::make_unique<queues::QueueTree>(std::move(*tree));
      out.book = std::make_unique<queues::QueueBook>(*out.tree);
    }
    for (const auto& [seq, b] : bindings) {
      auto pod = decode_with(objects, b.pod);
      auto n = state.find_node(b.node);
      Status st = !pod ? pod.status()
                  : !n ? Status(Code::kNotFound, fmt::format("node {} is gone", b.node))
                       : state.adopt(*pod, *n, b.gpus.empty() ? std::nullopt : std::optional<std::vector<int>>(b.gpus));
      if (!st.is_ok()) {
        if (n) (void)state.hold_conflict(b.pod_key, *n, pod ? &*pod : nullptr, b.gpus);
        if (conflicts != nullptr) conflicts->push_back(fmt::format("{}: {}", b.pod_key, st.message()));
        continue;
      }
      if (out.book) {
        if (auto q = leaf_queue(*out.tree, *pod)) {
          out.book->charge(*q, queues::charge_placed(*pod, state, *state.allocation(b.pod_key)), pod->preemptible);
        }
      }
    }
    if (out.book) {
      std::vector<Amounts> requests(out.tree->size());
      for (std::size_t q = 0; q < out.tree->size(); ++q) requests[q] = out.book->allocated(q);
      out.book->compute_fair_shares(queues::cluster_total(state), requests);
    }
    return out;
  }

  void install(Objects objects, api::BindingLog bindings, Built built) {
    objects_ = std::move(objects);
    bindings_ = std::move(bindings);
    state_.emplace(std::move(*built.state));
    tree_ = std::move(built.tree);
    book_ = std::move(built.book);
  }

  /// A validated change: builds the ledger it makes, writes it in one transaction, then installs
  /// it. A change that makes no valid cluster, or that the store cannot write, leaves memory and
  /// disk exactly as they were. Caller holds mu_ exclusively.
  Status commit(Objects next, api::BindingLog bindings, api::StoreChange change, std::vector<std::string>* conflicts) {
    std::vector<std::string> displaced;
    auto built = build(next, bindings, &displaced);
    if (!built) return built.status();
    if (Status st = store_->commit(change); !st.is_ok()) return st;
    install(std::move(next), std::move(bindings), std::move(*built));
    if (conflicts != nullptr) conflicts->insert(conflicts->end(), displaced.begin(), displaced.end());
    return Status::ok();
  }

  BindAnswer answer_for(const std::string& key, const Allocation& a) {
    BindAnswer answer;
    answer.pod = key;
    answer.node = state_->node(a.node).name;
    answer.choice = a.choice;
    if (const auto* b = bindings_.find(key)) {
      if (auto pod = decode_stored(b->pod)) answer.annotations = annotations_for(*pod, a.choice);
    }
    return answer;
  }

  ExtenderOptions options_;
  std::shared_ptr<const Policy> policy_;
  std::unique_ptr<api::Store> store_;
  mutable std::shared_mutex mu_;
  Objects objects_;
  std::optional<ClusterState> state_;
  std::unique_ptr<queues::QueueTree> tree_;  // stable address: the book points into it
  std::unique_ptr<queues::QueueBook> book_;
  std::unique_ptr<queues::QueueTree> empty_tree_;
  std::unique_ptr<queues::QueueBook> empty_book_;
  api::BindingLog bindings_;
  VerdictCache verdicts_;
  api::NameResolver names_;  // candidate lists → positions, for lists sent again  // Filter/Prioritize answers per pod shape and node, refreshed per node change
  struct Known {
    PodRequest pod;
    json object;
    std::size_t bytes = 0;  ///< approx_bytes(object)
    std::uint64_t seq = 0;  ///< when it was remembered; its entry in seen_order_ carries the same
  };
  std::size_t seen_bytes_ = 0;
  std::mutex seen_mu_;
  std::map<std::string, Known> seen_;
  std::deque<std::pair<std::string, std::uint64_t>> seen_order_;  ///< (pod key, Known::seq), oldest first
  std::uint64_t seen_seq_ = 0;
};

}  // namespace

Result<std::unique_ptr<Extender>> Extender::open(const ExtenderOptions& options) {
  PolicyOptions policy_options;
  policy_options.workload = options.workload;
  auto policy = make_policy(options.policy, policy_options);
  if (!policy) return policy.status();
  auto store = api::Store::open(options.state_path, options.fsync_every_bind ? api::Durability::kPowerLoss
                                                                             : api::Durability::kProcessCrash);
  if (!store) return store.status();
  auto core = std::make_unique<ExtenderImpl>(options, *policy, std::move(*store));
  if (Status st = core->load(); !st.is_ok()) return st;
  return std::unique_ptr<Extender>(std::move(core));
}

}  // namespace fracpack
