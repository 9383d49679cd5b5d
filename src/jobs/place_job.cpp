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
#include "fracpack/status.hpp"

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
  std::vector<const k8s::InputObject*> nodes;
  std::vector<const k8s::InputObject*> pods;
  PriorityClasses classes;
  std::map<std::string, int> min_member;  ///< "namespace/podgroup" → spec.minMember
};

/// "Kind namespace/name (origin)" for messages about an object.
std::string describe(const k8s::InputObject& in) {
  return fmt::format("{} ({})", k8s::describe(in.object, 0), in.origin);
}

/// A non-negative integer field of at most `max`; nullopt when absent or out of range.
std::optional<std::int64_t> bounded_integer(const json& v, std::int64_t min, std::int64_t max) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    return u <= static_cast<std::uint64_t>(max) && static_cast<std::int64_t>(u) >= min ? std::optional<std::int64_t>(u)
                                                                                       : std::nullopt;
  }
  if (!v.is_number_integer()) return std::nullopt;
  const auto i = v.get<std::int64_t>();
  return i >= min && i <= max ? std::optional<std::int64_t>(i) : std::nullopt;
}

Inputs sort_inputs(const std::vector<k8s::InputObject>& objects, PlaceReport& report) {
  Inputs in;
  for (const auto& input : objects) {
    const json& o = input.object;
    const std::string kind = k8s::kind_of(o);
    if (kind == "Node") {
      in.nodes.push_back(&input);
    } else if (kind == "Pod") {
      in.pods.push_back(&input);
    } else if (kind == "PriorityClass") {
      auto value = o.find("value");
      auto v = value == o.end() ? std::nullopt : bounded_integer(*value, INT32_MIN, 1'000'000'000);
      if (!v || meta(o, "name").empty()) {
        report.warnings.push_back(fmt::format(
            "{}: ignored; it needs metadata.name and an integer value up to 1000000000 (Kubernetes' limit)",
            describe(input)));
        continue;
      }
      in.classes.add(meta(o, "name"), static_cast<std::int32_t>(*v));
    } else if (kind == "PodGroup") {
      const json* spec = o.contains("spec") && o["spec"].is_object() ? &o["spec"] : nullptr;
      std::string ns = meta(o, "namespace");
      if (ns.empty()) ns = "default";
      if (spec == nullptr || !spec->contains("minMember")) continue;  // no minMember: all members together
      auto mm = bounded_integer((*spec)["minMember"], 0, 1 << 20);
      if (!mm) {
        report.warnings.push_back(fmt::format("{}: spec.minMember must be an integer from 0 to {}; using all members",
                                              describe(input), 1 << 20));
        continue;
      }
      in.min_member[ns + "/" + meta(o, "name")] = static_cast<int>(*mm);
    } else if (kind == "Queue") {
      continue;  // queues are honoured by the queue layer; placement alone ignores them
    } else {
      report.warnings.push_back(fmt::format("{}: kind \"{}\" is not used by placement; ignored", describe(input),
                                            kind.empty() ? "(none)" : kind));
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
  np.nodes_omitted = why.nodes_omitted;
  return np;
}

/// Loads one running pod. When the ledger cannot hold it, it is a conflict and the GPUs its
/// annotation claims are fenced: never offered to a pending pod.
bool load_bound(ClusterState& state, const PodRequest& pod, PlaceReport& report) {
  const Binding& b = *pod.bound;
  auto n = state.find_node(b.node);
  if (!n) {
    report.conflicts.push_back({pod.key(), b.node, "bound to a node that is not in the cluster input"});
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
                                fmt::format("its gpus.devices annotation lists {} GPU(s), the pod asks for {}",
                                            devices->size(), needed)});
    state.fence(*n, *devices);
    return false;
  }
  Status st = state.adopt(pod, *n, devices);
  if (!st.is_ok()) {
    std::string reason = st.message();
    const std::string prefix = fmt::format("pod {} on node {}: ", pod.key(), b.node);
    if (reason.starts_with(prefix)) reason.erase(0, prefix.size());
    if (devices) {
      state.fence(*n, *devices);
      reason += fmt::format("; GPU(s) {} are fenced off from new placements", fmt::join(*devices, ","));
    }
    report.conflicts.push_back({pod.key(), b.node, std::move(reason)});
    return false;
  }
  report.bound.push_back(Placement{pod.key(), b.node, state.allocation(pod.key())->choice, 0});
  return true;
}

}  // namespace

Result<PlaceReport> run_place(const std::vector<k8s::InputObject>& objects, const PlaceOptions& options) {
  auto policy = make_policy(options.policy);
  if (!policy) return policy.status();
  PlaceReport report;
  report.policy = options.policy;
  Inputs in = sort_inputs(objects, report);

  std::vector<NodeSpec> nodes;
  std::set<std::string> names;
  for (const k8s::InputObject* o : in.nodes) {
    auto node = k8s::decode_node(o->object, options.decode);
    if (!node) {
      report.warnings.push_back(fmt::format("{} ({}); the node is left out", node.status().message(), o->origin));
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
    const json& o = in.pods[i]->object;
    const std::string phase = phase_of(o);
    if (phase == "Succeeded" || phase == "Failed") continue;
    auto pod = k8s::decode_pod(o, options.decode, in.classes);
    std::string who = meta(o, "namespace").empty() ? "default" : meta(o, "namespace");
    who += "/" + meta(o, "name");
    if (meta(o, "name").empty()) who = in.pods[i]->origin;
    if (!seen.insert(who).second) {  // duplicates by name, valid or not: the first copy counts
      report.warnings.push_back(fmt::format("pod {} appears again in the input; the later copy is ignored", who));
      continue;
    }
    if (!pod) {
      input_order.emplace(who, i);
      report.unschedulable.push_back(
          {who, "Invalid", fmt::format("{} ({})", pod.status().message(), in.pods[i]->origin), {}});
      continue;
    }
    input_order.emplace(pod->key(), i);
    if (pod->bound) {
      if (load_bound(state, *pod, report) && pod->gang) ++bound_in_gang[pod->namespace_name + "/" + *pod->gang];
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
      record(pod, place_pod(state, pod, **policy, nullptr, options.explain_nodes));
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
      for (const auto& m : gang.members) outcomes.push_back(place_pod(state, m, **policy, nullptr, options.explain_nodes));
    } else {
      gang.min_member = remaining;
      outcomes = place_gang(state, gang, **policy, options.explain_nodes);
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
