// SchedulingState: cluster objects (nodes, Queues, PodGroups, priority classes), the queue book
// and fair shares. Pods are in state_pods.cpp.
#include "fracpack/queues/scheduling_state.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "fracpack/k8s/decode.hpp"
#include "fracpack/core/quoting.hpp"
#include "fracpack/queues/charge.hpp"
#include "fracpack/binpack/scheduler.hpp"

namespace fracpack {

using queues::Amounts;

std::string_view standing_name(PodStanding standing) {
  switch (standing) {
    case PodStanding::kPending: return "pending";
    case PodStanding::kBound: return "bound";
    case PodStanding::kConflict: return "conflict";
    case PodStanding::kWaitingForNode: return "waiting-for-node";
    case PodStanding::kIgnored: return "ignored";
  }
  return "unknown";
}

SchedulingState::SchedulingState(Options options)
    : options_(std::move(options)), cluster_(*ClusterState::create({}, options_.placement)) {}

Status SchedulingState::validate(const ObjectChange& change, std::vector<std::string>* warnings) const {
  std::set<std::string> nodes_after;
  for (const auto& node : change.nodes) {
    if (Status st = ClusterState::validate_node(node); !st.is_ok()) return st;
    if (!nodes_after.insert(node.name).second) return invalid_argument("node {}: the name appears twice in the cluster", node.name);
  }
  for (const auto& name : change.removed_nodes) {
    if (!cluster_.find_node(name) && !nodes_after.contains(name)) return {Code::kNotFound, fmt::format("node {} is not known", excerpt(name))};
  }
  for (const auto& key : change.removed_groups) {
    const bool added = std::any_of(change.groups.begin(), change.groups.end(), [&](const auto& g) { return g.key() == key; });
    if (!groups_.contains(key) && !added) return {Code::kNotFound, fmt::format("PodGroup {} is not known", excerpt(key))};
  }
  if (change.queues.empty() && change.removed_queues.empty()) return Status::ok();
  std::map<std::string, queues::QueueSpec> specs = queue_specs_;
  for (const auto& q : change.queues) specs[q.name] = q;
  for (const auto& name : change.removed_queues) {
    if (specs.erase(name) == 0) return {Code::kNotFound, fmt::format("queue {} is not known", excerpt(name))};
  }
  for (const auto& name : change.removed_queues) {
    for (const auto& [child, q] : specs) {
      if (q.parent == name) {
        return invalid_argument("Queue {}: it is the parentQueue of queue {}; remove or re-parent its child queues first", name, child);
      }
    }
  }
  std::vector<queues::QueueSpec> list;
  for (const auto& [_, q] : specs) list.push_back(q);
  auto tree = queues::QueueTree::build(std::move(list), warnings);
  return tree ? Status::ok() : tree.status();
}

std::vector<std::string> SchedulingState::apply(const ObjectChange& change) {
  const DebugCheck check(*this);
  std::vector<std::string> conflicts;
  for (const auto& [name, value] : change.priority_classes) classes_.add(name, value);
  if (!change.queues.empty() || !change.removed_queues.empty()) {
    for (const auto& q : change.queues) queue_specs_[q.name] = q;
    for (const auto& name : change.removed_queues) queue_specs_.erase(name);
    rebuild_book();
  }
  std::set<std::string> groups_changed;
  for (const auto& g : change.groups) {
    groups_[g.key()] = g;
    groups_changed.insert(g.key());
  }
  for (const auto& key : change.removed_groups) {
    groups_.erase(key);
    groups_changed.insert(key);
  }
  for (const auto& key : groups_changed) rederive(key);
  for (const auto& spec : change.nodes) {
    if (auto n = cluster_.find_node(spec.name)) {
      auto taken = cluster_.update_node(*n, spec);  // validated: cannot fail
      readopt(*n, std::move(*taken), &conflicts);
    } else {
      (void)cluster_.add_node(spec);
      auto waiting = waiting_.extract(spec.name);
      if (!waiting.empty()) {
        for (const auto& key : waiting.mapped()) adopt(key, pods_.at(key));
      }
    }
  }
  for (const auto& name : change.removed_nodes) {
    auto n = cluster_.find_node(name);
    if (!n) continue;
    for (const Allocation& a : cluster_.remove_node(*n)) {
      PodRecord& record = pods_.at(a.pod);
      if (record.standing == PodStanding::kBound) {
        if (record.ours) {
          charge(record, -1);
        } else {
          foreign_ -= record.charge;
        }
      }
      record.standing = PodStanding::kWaitingForNode;
      record.note = fmt::format("bound to node {}, which is not in the cluster", name);
      waiting_[name].insert(a.pod);
    }
  }
  if (!change.nodes.empty() || !change.removed_nodes.empty()) nodes_changed();
  return conflicts;
}

void SchedulingState::nodes_changed() {
  ++nodes_version_;
  capacity_ = queues::cluster_total(cluster_, Amounts{});  // O(nodes), once per change, not per fair-share read
  std::lock_guard lock(lazy_mu_);
  pending_stale_ = true;
  fair_dirty_ = true;
}

void SchedulingState::rebuild_book() {
  book_.reset();
  tree_.reset();
  if (!queue_specs_.empty()) {
    std::vector<queues::QueueSpec> list;
    for (const auto& [_, q] : queue_specs_) list.push_back(q);
    tree_ = std::make_unique<queues::QueueTree>(std::move(*queues::QueueTree::build(std::move(list))));
    book_ = std::make_unique<queues::QueueBook>(*tree_);
    book_->set_refusal_messages(options_.refusal_messages);
    for (std::size_t q = 0; q < tree_->size(); ++q) {
      if (!tree_->is_leaf(q)) continue;
      auto it = totals_.find(tree_->queue(q).name);
      if (it == totals_.end()) continue;
      book_->charge(q, it->second.allocated - it->second.non_preemptible, /*preemptible=*/true);
      book_->charge(q, it->second.non_preemptible, /*preemptible=*/false);
    }
  }
  std::lock_guard lock(lazy_mu_);
  fair_dirty_ = true;
}

std::optional<std::size_t> SchedulingState::leaf_queue(const PodRequest& pod) const {
  if (!tree_) return std::nullopt;
  auto q = tree_->find(pod.queue);
  if (!q || !tree_->is_leaf(*q)) return std::nullopt;
  return q;
}

std::optional<std::string> SchedulingState::queue_problem(const PodRequest& pod) const {
  if (!tree_) return std::nullopt;
  auto q = tree_->find(pod.queue);
  if (auto w = waiting_queues_.find(pod.queue); !q && w != waiting_queues_.end()) {
    return fmt::format("queue \"{}\" waits for its parentQueue \"{}\", which is not a Queue (or the chain loops); its jobs are "
                       "refused until it is",
                       pod.queue, w->second);
  }
  if (!q) {
    return pod.queue == options_.decode.default_queue
               ? fmt::format("it has no kai.scheduler/queue label, so it goes to {}, which is not a known Queue (a fresh KAI "
                             "install creates it with zero quota)",
                             pod.queue)
               : fmt::format("queue \"{}\" (label kai.scheduler/queue, or the PodGroup's spec.queue) is not a known Queue", pod.queue);
  }
  if (!tree_->is_leaf(*q)) return fmt::format("queue \"{}\" has child queues; jobs go in leaf queues only (KAI)", pod.queue);
  return std::nullopt;
}

std::optional<queues::Refusal> SchedulingState::admit(const PodRequest& pod) const {
  if (!book_) return std::nullopt;
  if (auto problem = queue_problem(pod)) return queues::Refusal{"Invalid", pod.queue, fmt::format("pod {}: {}", pod.key(), *problem)};
  return book_->admit(*leaf_queue(pod), pending_charge(pod), pod.preemptible);
}

Amounts SchedulingState::pending_charge(const PodRequest& pod) const {
  const std::string shape = pod_shape(pod);
  std::lock_guard lock(lazy_mu_);
  auto& [version, amount] = pending_charges_[shape];
  if (version != nodes_version_ + 1) {  // +1: version 0 means never computed
    amount = queues::charge_pending(pod, cluster_);
    version = nodes_version_ + 1;
  }
  if (pending_charges_.size() > 4096) {  // many one-off shapes: start again rather than grow
    const Amounts keep = amount;
    pending_charges_.clear();
    return keep;
  }
  return amount;
}

Amounts SchedulingState::total() const {
  Amounts out = capacity_;
  for (queues::Resource r : queues::kResources) out[r] = std::max<std::int64_t>(0, out[r] - foreign_[r]);
  return out;
}

const queues::QueueBook* SchedulingState::book() const {
  ensure_fair_shares();
  return book_.get();
}

void SchedulingState::ensure_fair_shares() const {
  if (!book_) return;
  std::lock_guard fair(fair_mu_);  // one reader computes; the others wait for its result
  bool stale = false;
  {
    std::lock_guard lock(lazy_mu_);
    if (!fair_dirty_ && !pending_stale_) return;
    stale = pending_stale_;
  }
  if (stale) {  // a node changed since the pending charges were summed: sum them again
    std::unordered_map<std::string, Amounts> sums;
    for (const auto& [key, record] : pods_) {
      if (record.standing == PodStanding::kPending) sums[record.pod.queue] += pending_charge(record.pod);
    }
    std::lock_guard lock(lazy_mu_);
    pending_sum_ = std::move(sums);
    pending_stale_ = false;
  }
  std::lock_guard lock(lazy_mu_);
  std::vector<Amounts> requests(tree_->size());
  for (std::size_t q = 0; q < tree_->size(); ++q) {
    requests[q] = book_->allocated(q);
    if (auto it = pending_sum_.find(tree_->queue(q).name); it != pending_sum_.end()) requests[q] += it->second;
  }
  book_->compute_fair_shares(total(), requests);
  fair_dirty_ = false;
}

void SchedulingState::add_pending(const PodRequest& pod, int sign) {
  const Amounts c = pending_charge(pod);
  std::lock_guard lock(lazy_mu_);
  fair_dirty_ = true;
  if (pending_stale_) return;  // summed again before the next use
  Amounts& sum = pending_sum_[pod.queue];
  if (sign > 0) {
    sum += c;
  } else {
    sum -= c;
  }
}

std::optional<queues::Victims> SchedulingState::search_victims(const queues::VictimTarget& target, const queues::Amounts& charge,
                                                                const Policy& policy, const NodeMask* nodes, queues::VictimPass passes,
                                                                std::optional<std::int64_t>* lapse) {
  static const queues::QueueTree kNoQueues = *queues::QueueTree::build({});
  const queues::QueueBook* b = book();
  const queues::QueueBook empty(kNoQueues);
  const queues::VictimShield shield{options_.min_runtime, now(), lapse};
  const queues::VictimJobs jobs = victim_jobs();
  const queues::VictimReplacing replacing{[this](const Allocation& a) { return running_pod(a); },
                                          [this](const Allocation& a) { return movable(a); }};
  return queues::find_victims(cluster_, b != nullptr ? *b : empty, target, leaf_queue(target.pod), charge, policy, shield, nodes,
                              &jobs, passes, &replacing);
}

std::optional<queues::Victims> SchedulingState::find_victims(const PodRequest& pod, const Policy& policy, const NodeMask* nodes,
                                                             std::optional<std::int64_t>* lapse) {
  return search_victims(queues::VictimTarget{pod}, pending_charge(pod), policy, nodes, queues::VictimPass::kBoth, lapse);
}

std::optional<queues::Victims> SchedulingState::find_victims(const queues::Job& job, const Policy& policy, queues::VictimPass passes,
                                                             std::optional<std::int64_t>* lapse) {
  if (job.members.empty()) return std::nullopt;
  const PodRequest& first = job.members.front();
  if (job.single_pod()) return search_victims(queues::VictimTarget{first}, pending_charge(first), policy, nullptr, passes, lapse);
  const Gang gang{job.name, job.members, job.min_member, job.rule.get(), job.running};
  return search_victims(queues::VictimTarget{first, &gang}, job.charge, policy, nullptr, passes, lapse);
}

queues::VictimJobs SchedulingState::victim_jobs() const {
  queues::VictimJobs out;
  for (const auto& [key, members] : group_members_) {
    const auto group = groups_.find(key);
    if (group == groups_.end()) continue;
    std::vector<std::pair<std::optional<std::int64_t>, std::string>> running;  // by start: the earliest are its core
    for (const std::string& member : members) {
      const PodRecord& r = pods_.at(member);
      const Allocation* a = cluster_.allocation(member);
      if (r.standing == PodStanding::kBound && r.planned_until) out[member] = {key, false, true};
      if (r.standing == PodStanding::kBound && !r.planned_until && a != nullptr) running.emplace_back(a->started, member);
    }
    std::sort(running.begin(), running.end(), [](const auto& x, const auto& y) {
      if (x.first != y.first) return x.first.has_value() && (!y.first || *x.first < *y.first);  // no start: the latest
      return x.second < y.second;
    });
    if (!group->second.sub_groups.empty()) {
      mark_sub_group_cores(key, group->second, running, out);
      continue;
    }
    const std::size_t core = static_cast<std::size_t>(std::max(1, group->second.min_member));
    for (std::size_t i = 0; i < running.size(); ++i) out[running[i].second] = {key, i < core};
  }
  return out;
}

void SchedulingState::mark_sub_group_cores(const std::string& key, const GangRule& rule,
                                           const std::vector<std::pair<std::optional<std::int64_t>, std::string>>& running,
                                           queues::VictimJobs& out) const {
  std::map<std::string, int> leaves;  // leaf sub-group name → its place in spec.subGroups
  for (std::size_t g = 0; g < rule.sub_groups.size(); ++g) leaves[rule.sub_groups[g].name] = static_cast<int>(g);
  for (const SubGroupSpec& s : rule.sub_groups) leaves.erase(s.parent);
  std::vector<int> running_in(rule.sub_groups.size(), 0);
  std::vector<int> leaf_of(running.size(), -1);
  for (std::size_t i = 0; i < running.size(); ++i) {
    const std::string& label = pods_.at(running[i].second).pod.sub_group;
    const auto leaf = leaves.find(label.empty() ? std::string("default") : label);
    if (leaf == leaves.end()) continue;
    leaf_of[i] = leaf->second;
    ++running_in[leaf->second];
  }
  std::vector<int> seen(rule.sub_groups.size(), 0);
  for (std::size_t i = 0; i < running.size(); ++i) {  // earliest first: each leaf's first minMember are the core
    const int g = leaf_of[i];
    queues::VictimJob job{key, g >= 0 && seen[g]++ < std::max(1, rule.sub_groups[g].min_member)};
    if (g >= 0 && !job.core) {
      job.sub_group = g;
      job.sub_group_min = std::max(1, rule.sub_groups[g].min_member);
      job.sub_group_running = running_in[g];
    }
    out[running[i].second] = job;
  }
}

bool SchedulingState::within_preemption_delay(const PodRequest& pod) const {
  if (!pod.gang) return false;
  const auto group = groups_.find(pod.gang_key());
  if (group == groups_.end()) return false;
  const auto from = group->second.evicts_from(pod.created);
  return from && now() < *from;
}

std::int64_t SchedulingState::now() const {
  if (options_.clock) return options_.clock();
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void SchedulingState::mark_started(const std::string& key, PodRecord& record) {
  if (!record.raw.started) record.raw.started = now();
  record.pod.started = record.raw.started;
  cluster_.set_started(key, *record.raw.started);
}

}  // namespace fracpack
