#include "fracpack/sim/place_job.hpp"
#include "fracpack/binpack/fragmentation.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include <fmt/format.h>

#include "fracpack/binpack/cluster_state.hpp"
#include "fracpack/binpack/ledger.hpp"
#include "fracpack/binpack/policy.hpp"
#include "fracpack/queues/charge.hpp"
#include "fracpack/queues/queue_book.hpp"
#include "fracpack/queues/cycle.hpp"
#include "fracpack/queues/reclaim.hpp"
#include "fracpack/queues/session.hpp"
#include "fracpack/queues/scheduling_state.hpp"
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

std::string missing_node(const std::string& node, const std::map<std::string, std::string>& rejected) {
  auto it = rejected.find(node);
  if (it == rejected.end()) return "bound to a node that is not in the cluster input";
  return fmt::format("bound to node {}, which was left out: {}", node, it->second);
}

/// Loads the running pods into the state, reporting each as bound or as a conflict (a running pod
/// the ledger cannot hold as it claims: its node resources stay counted, its GPUs fenced).
/// Returns each gang's running members (their sub-group and node).
jobs::RunningMembers load_running(SchedulingState& state, const jobs::PlaceInputs& in, PlaceReport& report) {
  for (const auto& u : in.unreadable_bound) {
    if (state.observe_unreadable(u.key, u.node, u.devices, u.reason) == PodStanding::kWaitingForNode) {
      report.conflicts.push_back({u.key, u.node, fmt::format("{}; also {}", u.reason, missing_node(u.node, in.rejected_nodes))});
      (void)state.forget(u.key);
    } else {
      report.conflicts.push_back({u.key, u.node, state.pod(u.key)->note});
    }
  }
  jobs::RunningMembers running_in_gang;
  for (const auto& b : in.bound) {
    if (auto bad = state.effective(b.pod); !bad) report.warnings.push_back(bad.status().message());
    const PodStanding standing = state.observe(b.pod);
    const PodRecord& record = *state.pod(b.pod.key());
    if (standing == PodStanding::kWaitingForNode) {
      report.conflicts.push_back({b.pod.key(), b.pod.bound->node, missing_node(b.pod.bound->node, in.rejected_nodes)});
      (void)state.forget(b.pod.key());
      continue;
    }
    if (standing == PodStanding::kConflict) {
      report.conflicts.push_back({b.pod.key(), b.pod.bound->node, record.note});
      continue;
    }
    report.bound.push_back(Placement{b.pod.key(), b.pod.bound->node, state.cluster().allocation(b.pod.key())->choice, 0});
    if (b.pod.gang) running_in_gang[b.pod.gang_key()].push_back({b.pod.sub_group, state.cluster().allocation(b.pod.key())->node});
    if (record.ours && state.tree() != nullptr && state.queue_problem(record.pod)) {
      report.warnings.push_back(fmt::format("pod {} runs in queue \"{}\", which is not a leaf Queue in the input; "
                                            "its usage is not counted",
                                            b.pod.key(), record.pod.queue));
    }
  }
  return running_in_gang;
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

/// The policy for this run. fgd, fgd-cpu and fgd-lp measure fragmentation for a target
/// workload: here, every pod of the input (with a warning when none asks for GPUs).
Result<std::shared_ptr<const Policy>> run_policy(const jobs::PlaceInputs& in, const PlaceOptions& options, PlaceReport& report) {
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
  if (policy && no_shapes && needs_workload(options.policy)) {
    report.warnings.push_back(fmt::format("policy {}: no input pod asks for GPU in milli-GPU (gpu-fraction or whole GPUs), so its "
                                          "target workload is empty and every node scores alike (ties by node order)",
                                          options.policy));
  }
  return policy;
}

/// A node whose GPUs the per-GPU reserve takes whole can hold no fraction: said, not hidden.
void warn_reserve(const std::vector<NodeSpec>& nodes, const PlaceOptions& options, PlaceReport& report) {
  for (const auto& node : nodes) {
    if (!node.gpus.empty() && node.gpu_memory_known && node.gpus.front().memory <= options.placement.reserved_per_gpu) {
      report.warnings.push_back(fmt::format("node {}: the reserved GPU memory ({} MiB) is not below its GPUs' {} MiB; "
                                            "no fraction fits there",
                                            node.name, options.placement.reserved_per_gpu.count(),
                                            node.gpus.front().memory.count()));
    }
  }
}

/// Nodes, Queues, PodGroups and PriorityClasses into the state, validated first.
Status load_objects(SchedulingState& state, jobs::PlaceInputs& in, PlaceReport& report) {
  ObjectChange cluster;
  cluster.nodes = std::move(in.nodes);
  cluster.queues = in.queues;
  for (const auto& [key, group] : in.groups) cluster.groups.push_back(group);
  if (Status st = state.validate(cluster, &report.warnings); !st.is_ok()) return st;
  state.set_classes(in.classes);
  (void)state.apply(cluster);
  return Status::ok();
}

/// What each job and member counts against its queue; members observed pending, so their asks
/// count in their queues' fair shares.
void charge_jobs(std::vector<queues::Job>& jobs, SchedulingState& state) {
  for (auto& job : jobs) {
    for (std::size_t i = 0; i < job.members.size(); ++i) {
      job.member_charges.push_back(state.pending_charge(job.members[i]));
      (void)state.observe(job.members[i]);
    }
    const Gang gang{job.name, job.members, job.min_member, job.rule.get(), job.running};
    for (std::size_t i : gang_minimum_by_count(gang)) job.charge += job.member_charges[i];
  }
}

/// The cycle's outcomes into the report: placements, refusals by queue, pods that fit nowhere
/// (with the victims or moves another action placed them on). Returns what still waits, per queue.
class OutcomeReport {
 public:
  /// `decision_step`: a decision's place among the cycle's.
  OutcomeReport(SchedulingState& state, PlaceReport& report, std::function<std::size_t(const cycle::Decision*)> decision_step)
      : state_(state), report_(report), tree_(state.tree()), pending_(tree_ ? tree_->size() : 0),
        decision_step_(std::move(decision_step)) {}

  /// A job allocate took a turn on; `decision`: what a later action did for it (null: nothing).
  void add(const queues::JobOutcome& o, const cycle::Decision* decision) {
    const queues::Job& job = *o.job;
    for (std::size_t i = 0; i < job.members.size(); ++i) {
      const std::optional<queues::Refusal>& refusal = o.refusal ? o.refusal : (i < o.refused.size() ? o.refused[i] : std::nullopt);
      if (!refusal && o.members[i].placement) {
        report_.placements.push_back(*o.members[i].placement);
        continue;
      }
      NotPlaced np = refusal ? NotPlaced::refused(job.members[i].key(), refusal->reason, refusal->message)
                             : not_placed(job.members[i].key(), o.members[i].why);
      waiting(job, i, std::move(np), decision);
    }
  }
  /// A job allocate did not take a turn on (it is not among the actions).
  void add_unvisited(const queues::Job& job, const cycle::Decision* decision) {
    for (std::size_t i = 0; i < job.members.size(); ++i) {
      waiting(job, i, NotPlaced::refused(job.members[i].key(), "Unschedulable", "not placed: allocate is not among the actions"),
              decision);
    }
  }
  [[nodiscard]] const std::vector<Amounts>& pending() const { return pending_; }

 private:
  void waiting(const queues::Job& job, std::size_t i, NotPlaced np, const cycle::Decision* decision) {
    const std::string key = job.members[i].key();
    if (decision != nullptr) {
      for (const Placement& p : decision->placed) {
        if (p.pod != key) continue;
        Preemption pre{p.node, p.choice.gpus, decision->victims, std::string(cycle::action_name(decision->action)), {},
                       decision_step_(decision)};
        for (const queues::Move& m : decision->moves) pre.moved.push_back(Placement{m.pod, m.to_node, m.to, 0});
        np.preemption = std::move(pre);
      }
    }
    report_.unschedulable.push_back(std::move(np));
    if (tree_ != nullptr && decision == nullptr) {  // one an action placed is charged as allocated
      for (std::size_t q : tree_->path_to_root(job.queue)) pending_[q] += state_.pending_charge(job.members[i]);
    }
  }

  SchedulingState& state_;
  PlaceReport& report_;
  const queues::QueueTree* tree_;
  std::vector<Amounts> pending_;
  std::function<std::size_t(const cycle::Decision*)> decision_step_;
};

/// Per-queue totals (top-down) and how many GPUs are in each state.
void report_totals(const SchedulingState& state, const std::vector<Amounts>& pending, PlaceReport& report) {
  if (const queues::QueueTree* tree = state.tree()) {
    for (std::size_t q : tree->top_down()) report.queues.push_back(totals_of(*state.book(), q, pending[q]));
  }
  std::map<GpuState, std::int64_t> counts;
  for (std::size_t n = 0; n < state.cluster().node_count(); ++n) {
    for (const auto& gpu : state.cluster().usage(n).gpus) ++counts[gpu.state];
  }
  for (GpuState s : {GpuState::kIdle, GpuState::kWhole, GpuState::kSharedTimeSlicing, GpuState::kSharedSmSharing}) {
    report.gpu_states.push_back({std::string(gpu_state_name(s)), counts[s]});
  }
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
  auto policy = run_policy(in, options, report);
  if (!policy) return policy.status();
  report.nodes = in.nodes.size();
  warn_reserve(in.nodes, options, report);
  SchedulingState::Options state_options{options.placement, options.decode};
  state_options.min_runtime = options.min_runtime;
  SchedulingState state(std::move(state_options));
  if (Status st = load_objects(state, in, report); !st.is_ok()) return st;

  const jobs::RunningMembers running_in_gang = load_running(state, in, report);
  std::vector<queues::Job> jobs = jobs::build_jobs(in, state, running_in_gang, report);
  charge_jobs(jobs, state);
  ExplainCache cache;
  cycle::CycleOptions cycle_options;
  cycle_options.actions = options.actions;
  if (state.tree() == nullptr) {  // without Queues: pods in input order, no victims and no moves (as before KAI's cycle)
    std::erase_if(cycle_options.actions, [](cycle::ActionKind a) { return a != cycle::ActionKind::kAllocate; });
  }
  cycle_options.session = {options.explain_nodes, &cache};
  std::vector<const queues::Job*> pointers;
  for (const queues::Job& job : jobs) pointers.push_back(&job);
  const cycle::CycleResult result = cycle::run_cycle(state, **policy, pointers, cycle_options);
  std::map<const queues::Job*, const cycle::Decision*> decided;
  for (const cycle::Decision& d : result.decisions) {
    if (d.job != nullptr) decided[d.part_of != nullptr ? d.part_of : d.job] = &d;
  }
  const auto decision_of = [&](const queues::Job* job) {
    auto it = decided.find(job);
    return it == decided.end() ? nullptr : it->second;
  };
  OutcomeReport outcomes(state, report, [&](const cycle::Decision* d) { return static_cast<std::size_t>(d - result.decisions.data()); });
  std::set<const queues::Job*> visited;
  for (const auto& o : result.allocated) {
    visited.insert(o.job);
    outcomes.add(o, decision_of(o.job));
  }
  for (const queues::Job& job : jobs) {
    if (!visited.count(&job)) outcomes.add_unvisited(job, decision_of(&job));
  }
  std::stable_sort(report.unschedulable.begin(), report.unschedulable.end(), [&](const NotPlaced& a, const NotPlaced& b) {
    return in.order[a.pod] < in.order[b.pod];
  });
  report_totals(state, outcomes.pending(), report);
  return report;
}

}  // namespace fracpack
