#include "fracpack/place_job.hpp"
#include "fracpack/fragmentation.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "fracpack/cluster_state.hpp"
#include "fracpack/ledger.hpp"
#include "fracpack/policy.hpp"
#include "fracpack/queues/charge.hpp"
#include "fracpack/queues/queue_book.hpp"
#include "fracpack/queues/reclaim.hpp"
#include "fracpack/queues/session.hpp"
#include "jobs/place_inputs.hpp"
#include "jobs/place_jobs.hpp"

namespace fracpack {
namespace {

using queues::Amounts;

NotPlaced not_placed(const std::string& pod, const Explanation& why) {
  NotPlaced np;
  np.pod = pod;
  np.status = std::string(code_name(why.code));
  np.reason = why.summary;
  for (const auto& [node, verdict] : why.nodes) np.nodes.emplace_back(node, verdict.text());
  np.nodes_omitted = why.nodes_omitted;
  return np;
}

/// Loads one running pod. When the ledger cannot hold it, it is a conflict and the GPUs its
/// annotation claims are fenced: never offered to a pending pod.
/// A running pod that the ledger cannot hold as it claims still holds its node's CPU, memory and
/// pod slot (it runs there), and the GPUs it names are fenced.
void hold_conflicting(ClusterState& state, const PodRequest& pod, std::size_t node, const std::vector<int>& fence) {
  (void)state.hold_conflict(pod.key(), node, &pod, fence);  // a pod key is loaded once: cannot fail
}

std::string missing_node(const std::string& node, const std::map<std::string, std::string>& rejected) {
  auto it = rejected.find(node);
  if (it == rejected.end()) return "bound to a node that is not in the cluster input";
  return fmt::format("bound to node {}, which was left out: {}", node, it->second);
}

bool load_bound(ClusterState& state, const PodRequest& pod, const std::map<std::string, std::string>& rejected,
                PlaceReport& report) {
  const Binding& b = *pod.bound;
  auto n = state.find_node(b.node);
  if (!n) {
    report.conflicts.push_back({pod.key(), b.node, missing_node(b.node, rejected)});
    return false;
  }
  std::optional<std::vector<int>> devices;
  if (!b.devices.empty()) devices = b.devices;
  const auto* fraction = pod.fraction();
  const auto* whole = pod.whole();
  const std::size_t needed = fraction ? static_cast<std::size_t>(fraction->num_devices)
                             : whole  ? static_cast<std::size_t>(whole->count)
                                      : 0;
  if (devices && devices->size() != needed && !(whole && state.node(*n).sharing == SharingKind::kReplicas)) {
    report.conflicts.push_back({pod.key(), b.node,
                                fmt::format("its gpus.devices annotation lists {} GPU(s), the pod asks for {}; GPU(s) "
                                            "{} are fenced off from new placements",
                                            devices->size(), needed, fmt::join(*devices, ","))});
    hold_conflicting(state, pod, *n, *devices);
    return false;
  }
  Status st = state.adopt(pod, *n, devices);
  if (!st.is_ok()) {
    std::string reason = st.message();
    const std::string prefix = fmt::format("pod {} on node {}: ", pod.key(), b.node);
    if (reason.starts_with(prefix)) reason.erase(0, prefix.size());
    if (devices) reason += fmt::format("; GPU(s) {} are fenced off from new placements", fmt::join(*devices, ","));
    report.conflicts.push_back({pod.key(), b.node, std::move(reason)});
    hold_conflicting(state, pod, *n, devices.value_or(std::vector<int>{}));
    return false;
  }
  report.bound.push_back(Placement{pod.key(), b.node, state.allocation(pod.key())->choice, 0});
  return true;
}

/// Places jobs in input order with no queue admission (the input has no Queue objects).
std::vector<queues::JobOutcome> run_in_order(ClusterState& state, const Policy& policy,
                                             const std::vector<queues::Job>& jobs, std::size_t detailed,
                                             ExplainCache& cache) {
  std::vector<queues::JobOutcome> out;
  for (const queues::Job& job : jobs) {
    queues::JobOutcome o;
    o.job = &job;
    if (job.members.size() == 1 && job.min_member <= 1) {
      o.members.push_back(place_pod(state, job.members.front(), policy, nullptr, detailed, &cache));
    } else {
      Gang gang{job.name, job.members, job.min_member};
      o.members = place_gang(state, gang, policy, detailed, &cache);
    }
    out.push_back(std::move(o));
  }
  return out;
}

QueueTotals totals_of(const queues::QueueBook& book, std::size_t q, const Amounts& pending) {
  const auto& spec = book.tree().queue(q);
  QueueTotals t;
  t.name = spec.name;
  t.parent = spec.parent;
  t.depth = book.tree().depth(q);
  t.deserved = book.deserved(q);
  t.fair_share = book.fair_share(q);
  t.allocated = book.allocated(q);
  t.allocated_non_preemptible = book.allocated_non_preemptible(q);
  t.pending = pending;
  for (queues::Resource r : queues::kResources) t.limit[r] = spec.resource(r).limit;
  return t;
}

}  // namespace

Result<PlaceReport> run_place(const std::vector<k8s::InputObject>& objects, const PlaceOptions& options) {
  if (auto known = make_policy(options.policy, PolicyOptions{0, std::make_shared<const std::vector<TypicalPod>>(1, TypicalPod{})});
      !known) {
    return known.status();  // an unknown name fails before the inputs are read
  }
  PlaceReport report;
  report.policy = options.policy;
  auto read = jobs::read_inputs(objects, options, report);
  if (!read) return read.status();
  jobs::PlaceInputs& in = *read;
  // fgd, fgd-cpu and fgd-lp measure fragmentation for a target workload: here, every pod of the input.
  std::vector<PodRequest> all_pods;
  for (const auto* list : {&in.bound, &in.pending}) {
    for (const auto& p : *list) all_pods.push_back(p.pod);
  }
  PolicyOptions policy_options;
  policy_options.workload = std::make_shared<const std::vector<TypicalPod>>(typical_pods(all_pods));
  const bool no_shapes = std::none_of(policy_options.workload->begin(), policy_options.workload->end(),
                                      [](const TypicalPod& t) { return t.gpus > 0; });
  if (policy_options.workload->empty()) policy_options.workload = std::make_shared<const std::vector<TypicalPod>>(1, TypicalPod{});
  auto policy = make_policy(options.policy, policy_options);
  if (!policy) return policy.status();
  if (no_shapes && needs_workload(options.policy)) {
    report.warnings.push_back(fmt::format("policy {}: no input pod asks for GPU in milli-GPU (gpu-fraction or whole GPUs), so its "
                                          "target workload is empty and every node scores alike (ties by node order)",
                                          options.policy));
  }

  report.nodes = in.nodes.size();
  for (const auto& node : in.nodes) {
    if (!node.gpus.empty() && node.gpu_memory_known && node.gpus.front().memory <= options.placement.reserved_per_gpu) {
      report.warnings.push_back(fmt::format("node {}: the reserved GPU memory ({} MiB) is not below its GPUs' {} MiB; "
                                            "no fraction fits there",
                                            node.name, options.placement.reserved_per_gpu.count(),
                                            node.gpus.front().memory.count()));
    }
  }
  auto created = ClusterState::create(std::move(in.nodes), options.placement);
  if (!created) return created.status();
  ClusterState state = std::move(*created);

  // Queues (optional): the tree, and what running pods already hold.
  std::optional<queues::QueueTree> tree;
  if (!in.queues.empty()) {
    auto built = queues::QueueTree::build(std::move(in.queues), &report.warnings);
    if (!built) return built.status();
    tree = std::move(*built);
  }
  std::optional<queues::QueueBook> book;
  if (tree) book.emplace(*tree);

  for (const auto& u : in.unreadable_bound) {
    auto n = state.find_node(u.node);
    if (!n) {
      report.conflicts.push_back({u.key, u.node, fmt::format("{}; also {}", u.reason, missing_node(u.node, in.rejected_nodes))});
      continue;
    }
    std::vector<int> fence = u.devices;
    if (fence.empty()) {  // what it holds is unknown: none of the node's GPUs is safe to hand out
      for (const auto& gpu : state.node(*n).gpus) fence.push_back(gpu.index);
    }
    (void)state.hold_conflict(u.key, *n, nullptr, fence);
    report.conflicts.push_back(
        {u.key, u.node, fmt::format("a running pod that fails validation: {}; GPU(s) {} are fenced off from new placements",
                                    u.reason, fence.empty() ? std::string("none (the node has no GPUs)") : fmt::format("{}", fmt::join(fence, ",")))});
  }
  std::map<std::string, int> running_in_gang;
  Amounts foreign;  // what pods of other schedulers hold: not for queues to divide
  for (auto& b : in.bound) {
    if (b.pod.gang) {  // a PodGroup's queue and priority apply to its running pods too
      auto group = in.groups.find(b.pod.namespace_name + "/" + *b.pod.gang);
      if (group != in.groups.end()) {
        if (auto bad = jobs::apply_group(group->second, in.classes, b.pod)) report.warnings.push_back(*bad);
      }
    }
    if (!load_bound(state, b.pod, in.rejected_nodes, report)) continue;
    if (b.pod.gang) ++running_in_gang[b.pod.namespace_name + "/" + *b.pod.gang];
    if (!book) continue;
    const auto& ours = options.decode.scheduler_names;
    if (!b.pod.scheduler_name.empty() && std::find(ours.begin(), ours.end(), b.pod.scheduler_name) == ours.end()) {
      foreign += queues::charge_placed(b.pod, state, *state.allocation(b.pod.key()));
      state.set_holder(b.pod.key(), Holder::kForeign);
      continue;
    }
    auto q = tree->find(b.pod.queue);
    if (!q || !tree->is_leaf(*q)) {
      report.warnings.push_back(fmt::format("pod {} runs in queue \"{}\", which is not a leaf Queue in the input; "
                                            "its usage is not counted",
                                            b.pod.key(), b.pod.queue));
      continue;
    }
    book->charge(*q, queues::charge_placed(b.pod, state, *state.allocation(b.pod.key())), b.pod.preemptible);
  }

  std::vector<queues::Job> jobs = jobs::build_jobs(in, running_in_gang, tree ? &*tree : nullptr, report);
  // Pending charges depend only on the pod's shape and the nodes' static terms: one scan per shape.
  std::map<std::string, Amounts> charge_by_shape;
  auto pending_charge = [&](const PodRequest& pod) {
    auto [it, fresh] = charge_by_shape.try_emplace(pod_shape(pod));
    if (fresh) it->second = queues::charge_pending(pod, state);
    return it->second;
  };
  for (auto& job : jobs) {
    const std::size_t core = job.min_member <= 0 ? job.members.size() : std::min<std::size_t>(job.members.size(), job.min_member);
    for (std::size_t i = 0; i < job.members.size(); ++i) {
      job.member_charges.push_back(pending_charge(job.members[i]));
      if (i < core) job.charge += job.member_charges.back();
    }
  }
  ExplainCache cache;
  std::vector<queues::JobOutcome> outcomes;
  if (book) {
    std::vector<Amounts> requests(tree->size());
    for (std::size_t q = 0; q < tree->size(); ++q) requests[q] = book->allocated(q);
    for (const auto& job : jobs) requests[job.queue] += job.charge;
    const Amounts total = queues::cluster_total(state, foreign);
    book->compute_fair_shares(total, requests);
    outcomes = queues::run_session(state, *book, **policy, jobs, total, options.explain_nodes, &cache);
  } else {
    outcomes = run_in_order(state, **policy, jobs, options.explain_nodes, cache);
  }

  std::vector<Amounts> pending(tree ? tree->size() : 0);
  std::map<std::string, std::optional<queues::Victims>> victims_by_shape;
  for (const auto& o : outcomes) {
    const queues::Job& job = *o.job;
    for (std::size_t i = 0; i < job.members.size(); ++i) {
      const PodRequest& pod = job.members[i];
      const std::optional<queues::Refusal>& refusal = o.refusal ? o.refusal : (i < o.refused.size() ? o.refused[i] : std::nullopt);
      if (refusal) {
        report.unschedulable.push_back(NotPlaced::refused(pod.key(), refusal->reason, refusal->message));
      } else if (o.members[i].placement) {
        report.placements.push_back(*o.members[i].placement);
        continue;
      } else {
        NotPlaced np = not_placed(pod.key(), o.members[i].why);
        if (book && np.status == "Unschedulable" && job.members.size() == 1) {
          // The ledger no longer changes here: one search per shape, queue and priority.
          const std::string key = fmt::format("{}#{}#{}", pod_shape(pod), pod.queue, pod.priority);
          auto [it, fresh] = victims_by_shape.try_emplace(key);
          if (fresh) it->second = queues::find_victims(state, *book, pod, job.queue, job.member_charges[i], **policy);
          if (it->second) np.preemption = Preemption{it->second->node, it->second->pods};
        }
        report.unschedulable.push_back(std::move(np));
      }
      if (book) {
        for (std::size_t q : tree->path_to_root(job.queue)) pending[q] += pending_charge(pod);
      }
    }
  }
  std::stable_sort(report.unschedulable.begin(), report.unschedulable.end(), [&](const NotPlaced& a, const NotPlaced& b) {
    return in.order[a.pod] < in.order[b.pod];
  });

  if (book) {
    for (std::size_t q : tree->top_down()) report.queues.push_back(totals_of(*book, q, pending[q]));
  }
  std::map<GpuState, std::int64_t> counts;
  for (std::size_t n = 0; n < state.node_count(); ++n) {
    for (const auto& gpu : state.usage(n).gpus) ++counts[gpu.state];
  }
  for (GpuState s : {GpuState::kIdle, GpuState::kWhole, GpuState::kSharedTimeSlicing, GpuState::kSharedSmSharing}) {
    report.gpu_states.push_back({std::string(gpu_state_name(s)), counts[s]});
  }
  return report;
}

}  // namespace fracpack
