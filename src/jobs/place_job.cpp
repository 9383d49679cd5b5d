#include "fracpack/place_job.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "fracpack/cluster_state.hpp"
#include "fracpack/k8s/decode.hpp"
#include "fracpack/k8s/object_stream.hpp"
#include "fracpack/ledger.hpp"
#include "fracpack/policy.hpp"

namespace fracpack {
namespace {

using nlohmann::json;

std::string phase_of(const json& pod) {
  auto status = pod.find("status");
  if (status == pod.end() || !status->is_object()) return "";
  auto phase = status->find("phase");
  return phase != status->end() && phase->is_string() ? phase->get<std::string>() : "";
}

std::string meta(const json& object, const char* field) {
  auto md = object.find("metadata");
  if (md == object.end() || !md->is_object()) return "";
  auto v = md->find(field);
  return v != md->end() && v->is_string() ? v->get<std::string>() : "";
}

/// The inputs sorted by kind, decoded where they are simple (priority classes, pod groups).
struct Inputs {
  std::vector<const json*> nodes;
  std::vector<const json*> pods;
  PriorityClasses classes;
  std::map<std::string, int> min_member;  ///< "namespace/podgroup" → spec.minMember
};

Inputs sort_inputs(const std::vector<json>& objects, PlaceReport& report) {
  Inputs in;
  for (std::size_t i = 0; i < objects.size(); ++i) {
    const json& o = objects[i];
    const std::string kind = k8s::kind_of(o);
    if (kind == "Node") {
      in.nodes.push_back(&o);
    } else if (kind == "Pod") {
      in.pods.push_back(&o);
    } else if (kind == "PriorityClass") {
      auto value = o.find("value");
      if (value == o.end() || !value->is_number_integer() || meta(o, "name").empty()) {
        report.warnings.push_back(fmt::format("{}: ignored, it needs metadata.name and an integer value",
                                              k8s::describe(o, i)));
        continue;
      }
      in.classes.add(meta(o, "name"), value->get<std::int32_t>());
    } else if (kind == "PodGroup") {
      const json* spec = o.contains("spec") ? &o["spec"] : nullptr;
      auto mm = spec != nullptr && spec->is_object() ? spec->find("minMember") : o.end();
      std::string ns = meta(o, "namespace");
      if (ns.empty()) ns = "default";
      if (spec != nullptr && spec->is_object() && mm != spec->end() && mm->is_number_integer() && mm->get<std::int64_t>() >= 0) {
        in.min_member[ns + "/" + meta(o, "name")] = static_cast<int>(std::min<std::int64_t>(mm->get<std::int64_t>(), 1 << 20));
      } else if (spec != nullptr && spec->is_object() && mm != spec->end()) {
        report.warnings.push_back(fmt::format("{}: spec.minMember must be a non-negative integer; using all members",
                                              k8s::describe(o, i)));
      }
    } else if (kind == "Queue") {
      continue;  // queues are honoured by the queue layer; placement alone ignores them
    } else {
      report.warnings.push_back(fmt::format("{}: kind \"{}\" is not used by placement; ignored",
                                            k8s::describe(o, i), kind.empty() ? "(none)" : kind));
    }
  }
  return in;
}

NotPlaced not_placed(const std::string& pod, const Explanation& why) {
  NotPlaced np;
  np.pod = pod;
  np.status = std::string(code_name(why.code));
  np.reason = why.summary;
  for (const auto& [node, verdict] : why.nodes) np.nodes.emplace_back(node, verdict.text());
  return np;
}

/// Loads one bound pod; a conflict when the ledger cannot hold it as bound.
void load_bound(ClusterState& state, const PodRequest& pod, const Policy& first_fit, PlaceReport& report) {
  const Binding& b = *pod.bound;
  auto n = state.find_node(b.node);
  if (!n) {
    report.conflicts.push_back({pod.key(), b.node, "bound to a node that is not in the cluster input"});
    return;
  }
  Status st;
  if (!b.devices.empty() || pod.cpu_only()) {
    GpuChoice choice;
    choice.gpus = b.devices;
    st = state.reserve(pod, *n, choice);
  } else {
    NodeMask only(state.node_count(), false);
    only[*n] = true;
    PlaceOutcome o = place_pod(state, pod, first_fit, &only);
    if (!o.placement) {
      st = Status(o.why.code, o.why.nodes.empty() ? o.why.summary : o.why.nodes.front().second.text());
    }
  }
  if (!st.is_ok()) {
    std::string reason = st.message();
    const std::string prefix = fmt::format("pod {} on node {}: ", pod.key(), b.node);
    if (reason.starts_with(prefix)) reason.erase(0, prefix.size());
    report.conflicts.push_back({pod.key(), b.node, std::move(reason)});
    return;
  }
  const Allocation* a = state.allocation(pod.key());
  report.bound.push_back(Placement{pod.key(), b.node, a->choice, 0});
}

}  // namespace

Result<PlaceReport> run_place(const std::vector<json>& objects, const PlaceOptions& options) {
  auto policy = make_policy(options.policy);
  if (!policy) return policy.status();
  auto first_fit = make_policy("first-fit");
  PlaceReport report;
  report.policy = options.policy;
  Inputs in = sort_inputs(objects, report);

  std::vector<NodeSpec> nodes;
  std::set<std::string> names;
  for (const json* o : in.nodes) {
    auto node = k8s::decode_node(*o, options.decode);
    if (!node) {
      report.warnings.push_back(fmt::format("{}; the node is left out", node.status().message()));
    } else if (!names.insert(node->name).second) {
      report.warnings.push_back(fmt::format("node {}: appears twice; the later copy is left out", node->name));
    } else {
      nodes.push_back(std::move(*node));
    }
  }
  report.nodes = nodes.size();
  for (const auto& node : nodes) {
    if (!node.gpus.empty() && node.gpu_memory_known && node.gpus.front().memory <= options.placement.reserved_per_gpu) {
      report.warnings.push_back(fmt::format("node {}: the reserved GPU memory ({} MiB) is not below its GPUs' {} MiB; "
                                            "no fraction fits there",
                                            node.name, options.placement.reserved_per_gpu.count(),
                                            node.gpus.front().memory.count()));
    }
  }
  auto created = ClusterState::create(std::move(nodes), options.placement);
  if (!created) return created.status();
  ClusterState state = std::move(*created);

  std::vector<PodRequest> pending;
  std::map<std::string, std::size_t> input_order;  // pod key → position in the input
  std::set<std::string> seen;
  std::map<std::string, int> bound_in_gang;
  for (std::size_t i = 0; i < in.pods.size(); ++i) {
    const json& o = *in.pods[i];
    const std::string phase = phase_of(o);
    if (phase == "Succeeded" || phase == "Failed") continue;
    auto pod = k8s::decode_pod(o, options.decode, in.classes);
    if (!pod) {
      std::string who = meta(o, "namespace").empty() ? "default" : meta(o, "namespace");
      who += "/" + meta(o, "name");
      input_order.emplace(who, i);
      report.unschedulable.push_back({who, "Invalid", pod.status().message(), {}});
      continue;
    }
    input_order.emplace(pod->key(), i);
    if (!seen.insert(pod->key()).second) {
      report.warnings.push_back(fmt::format("pod {} appears again in the input; the later copy is ignored", pod->key()));
      continue;
    }
    if (pod->bound) {
      load_bound(state, *pod, **first_fit, report);
      if (pod->gang) ++bound_in_gang[pod->namespace_name + "/" + *pod->gang];
    } else {
      pending.push_back(std::move(*pod));
    }
  }

  std::set<std::string> gangs_done;
  auto record = [&](const PodRequest& pod, const PlaceOutcome& o) {
    if (o.placement) {
      report.placements.push_back(*o.placement);
    } else {
      report.unschedulable.push_back(not_placed(pod.key(), o.why));
    }
  };
  for (std::size_t i = 0; i < pending.size(); ++i) {
    const PodRequest& pod = pending[i];
    if (!pod.gang) {
      record(pod, place_pod(state, pod, **policy));
      continue;
    }
    const std::string gang_key = pod.namespace_name + "/" + *pod.gang;
    if (!gangs_done.insert(gang_key).second) continue;
    Gang gang;
    gang.name = gang_key;
    for (std::size_t j = i; j < pending.size(); ++j) {
      if (pending[j].gang && pending[j].namespace_name + "/" + *pending[j].gang == gang_key) {
        gang.members.push_back(pending[j]);
      }
    }
    auto mm = in.min_member.find(gang_key);
    if (mm == in.min_member.end()) {
      report.warnings.push_back(fmt::format(
          "pod {} names PodGroup {}, which is not in the input; its {} pending pod(s) are placed all-or-nothing",
          pod.key(), gang_key, gang.members.size()));
    }
    const int min_member = mm == in.min_member.end() ? static_cast<int>(gang.members.size()) : mm->second;
    const int remaining = min_member - bound_in_gang[gang_key];  // members already running count
    std::vector<PlaceOutcome> outcomes;
    if (remaining <= 0) {
      for (const auto& m : gang.members) outcomes.push_back(place_pod(state, m, **policy));
    } else {
      gang.min_member = remaining;
      outcomes = place_gang(state, gang, **policy);
    }
    for (std::size_t k = 0; k < outcomes.size(); ++k) record(gang.members[k], outcomes[k]);
  }

  std::stable_sort(report.unschedulable.begin(), report.unschedulable.end(),
                   [&](const NotPlaced& a, const NotPlaced& b) { return input_order[a.pod] < input_order[b.pod]; });

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
