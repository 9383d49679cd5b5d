#include "jobs/place_inputs.hpp"

#include <charconv>
#include <set>

#include <fmt/format.h>

#include "fracpack/k8s/decode.hpp"
#include "fracpack/k8s/strict_fields.hpp"

namespace fracpack::jobs {
namespace {

using nlohmann::json;

std::string meta(const json& object, const char* field) {
  auto md = object.find("metadata");
  if (md == object.end() || !md->is_object()) return "";
  auto v = md->find(field);
  return v != md->end() && v->is_string() ? v->get<std::string>() : "";
}

std::string phase_of(const json& pod) {
  auto status = pod.find("status");
  if (status == pod.end() || !status->is_object()) return "";
  auto phase = status->find("phase");
  return phase != status->end() && phase->is_string() ? phase->get<std::string>() : "";
}

/// "Kind namespace/name (origin)" for messages about an object.
std::string describe(const k8s::InputObject& in) { return fmt::format("{} ({})", k8s::describe(in.object, 0), in.origin); }

/// An integer field within [min, max]; nullopt when out of range or not an integer.
std::optional<std::int64_t> bounded_integer(const json& v, std::int64_t min, std::int64_t max) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(max)) return std::nullopt;
    return static_cast<std::int64_t>(u) >= min ? std::optional<std::int64_t>(static_cast<std::int64_t>(u)) : std::nullopt;
  }
  if (!v.is_number_integer()) return std::nullopt;
  const auto i = v.get<std::int64_t>();
  return i >= min && i <= max ? std::optional<std::int64_t>(i) : std::nullopt;
}

/// spec.nodeName of a pod object, when it is a non-empty string.
std::optional<std::string> bound_node(const json& pod) {
  auto spec = pod.find("spec");
  if (spec == pod.end() || !spec->is_object()) return std::nullopt;
  auto node = spec->find("nodeName");
  if (node == spec->end() || !node->is_string() || node->get<std::string>().empty()) return std::nullopt;
  return node->get<std::string>();
}

/// Device indices from any `nvidia.com/container.<ctr>.gpus.devices` annotation, read leniently:
/// entries that are not indices are skipped (the pod failed validation; this is damage control).
std::vector<int> claimed_devices(const json& pod) {
  std::vector<int> out;
  auto md = pod.find("metadata");
  if (md == pod.end() || !md->is_object()) return out;
  auto annotations = md->find("annotations");
  if (annotations == md->end() || !annotations->is_object()) return out;
  for (const auto& [key, value] : annotations->items()) {
    if (!key.starts_with("nvidia.com/container.") || !key.ends_with(".gpus.devices") || !value.is_string()) continue;
    const std::string& text = value.get_ref<const std::string&>();
    std::size_t start = 0;
    while (start <= text.size()) {
      std::size_t end = text.find(',', start);
      if (end == std::string::npos) end = text.size();
      int v = -1;
      auto [p, ec] = std::from_chars(text.data() + start, text.data() + end, v);
      if (ec == std::errc() && p == text.data() + end && v >= 0 && v < 1024) out.push_back(v);
      start = end + 1;
    }
  }
  return out;
}

using ObjectList = std::vector<const k8s::InputObject*>;

/// A PriorityClass into `in.classes`; one without a name or an integer value is a warning.
void read_priority_class(const k8s::InputObject& input, PlaceInputs& in, PlaceReport& report) {
  const json& o = input.object;
  auto value = o.find("value");
  auto v = value == o.end() ? std::nullopt : bounded_integer(*value, INT32_MIN, 1'000'000'000);
  if (!v || meta(o, "name").empty()) {
    report.warnings.push_back(fmt::format(
        "{}: ignored; it needs metadata.name and an integer value up to 1000000000 (Kubernetes' limit)",
        describe(input)));
    return;
  }
  in.classes.add(meta(o, "name"), static_cast<std::int32_t>(*v));
}

/// A PodGroup into `in.groups`; an invalid one is a warning and is kept with every member required.
void read_pod_group(const k8s::InputObject& input, PlaceInputs& in, PlaceReport& report) {
  const json& o = input.object;
  std::vector<std::string> unhonoured;
  auto group = queues::decode_pod_group(o, &unhonoured);
  for (auto& w : unhonoured) report.warnings.push_back(fmt::format("{} ({})", w, input.origin));
  if (group) {
    in.groups[group->key()] = std::move(*group);
    return;
  }
  report.warnings.push_back(fmt::format("{} ({}); its pods are placed all-or-nothing", group.status().message(),
                                        input.origin));
  queues::PodGroupSpec all;  // known, with every member required
  all.name = meta(o, "name");
  if (!meta(o, "namespace").empty()) all.namespace_name = meta(o, "namespace");
  if (!all.name.empty()) in.groups[all.key()] = all;
}

/// A Queue into `in.queues`: an invalid or repeated queue refuses the whole input.
Status read_queue(const k8s::InputObject& input, PlaceInputs& in, PlaceReport& report,
                  std::set<std::string>& queue_names) {
  std::vector<std::string> unhonoured;
  auto queue = queues::decode_queue(input.object, &unhonoured);
  if (!queue) return Status(queue.status().code(), fmt::format("{} ({})", queue.status().message(), input.origin));
  if (!queue_names.insert(queue->name).second) {
    return invalid_argument("queue {}: appears twice in the input ({})", queue->name, input.origin);
  }
  for (auto& w : unhonoured) report.warnings.push_back(fmt::format("{} ({})", w, input.origin));
  in.queues.push_back(std::move(*queue));
  return Status::ok();
}

/// Every object by kind: PriorityClasses, PodGroups and Queues read now (pods need the classes),
/// Nodes and Pods collected for later; other kinds are warnings, or errors (check_foreign_kind).
Status sort_objects(const std::vector<k8s::InputObject>& objects, PlaceInputs& in, PlaceReport& report,
                    ObjectList& nodes, ObjectList& pods) {
  std::set<std::string> queue_names;
  for (const auto& input : objects) {
    const std::string kind = k8s::kind_of(input.object);
    if (kind == "Node") {
      nodes.push_back(&input);
    } else if (kind == "Pod") {
      pods.push_back(&input);
    } else if (kind == "PriorityClass") {
      read_priority_class(input, in, report);
    } else if (kind == "PodGroup") {
      read_pod_group(input, in, report);
    } else if (kind == "Queue") {
      if (auto s = read_queue(input, in, report, queue_names); !s.is_ok()) return s;
    } else if (auto s = k8s::check_foreign_kind(input.object, describe(input)); !s.is_ok()) {
      return s;
    } else {
      report.warnings.push_back(fmt::format("{}: kind \"{}\" is not used by placement; ignored", describe(input),
                                            kind.empty() ? "(none)" : kind));
    }
  }
  return Status::ok();
}

/// Nodes into `in.nodes`; an invalid node or a second copy is left out with a warning.
void read_nodes(const ObjectList& nodes, const PlaceOptions& options, PlaceInputs& in, PlaceReport& report) {
  std::set<std::string> node_names;
  for (const k8s::InputObject* o : nodes) {
    auto node = k8s::decode_node(o->object, options.decode);
    if (!node) {
      report.warnings.push_back(fmt::format("{} ({}); the node is left out", node.status().message(), o->origin));
      const std::string name = meta(o->object, "name");
      if (!name.empty()) in.rejected_nodes.emplace(name, node.status().message());
    } else if (!node_names.insert(node->name).second) {
      report.warnings.push_back(fmt::format("node {}: appears twice; the later copy is left out", node->name));
    } else {
      in.nodes.push_back(std::move(*node));
    }
  }
}

/// "namespace/name" of a pod object, its origin when it has no name.
std::string pod_key(const k8s::InputObject& input) {
  const json& o = input.object;
  if (meta(o, "name").empty()) return input.origin;
  return (meta(o, "namespace").empty() ? "default" : meta(o, "namespace")) + "/" + meta(o, "name");
}

/// Pods into bound and pending, in input order; finished pods skipped, repeats warned about,
/// invalid ones refused (or, when bound, kept as unreadable holders of their devices).
void read_pods(const ObjectList& pods, const PlaceOptions& options, PlaceInputs& in, PlaceReport& report) {
  for (std::size_t i = 0; i < pods.size(); ++i) {
    const json& o = pods[i]->object;
    const std::string phase = phase_of(o);
    if (phase == "Succeeded" || phase == "Failed") continue;
    const std::string who = pod_key(*pods[i]);
    if (!in.order.emplace(who, i).second) {  // duplicates by name, valid or not: the first copy counts
      report.warnings.push_back(fmt::format("pod {} appears again in the input; the later copy is ignored", who));
      continue;
    }
    auto pod = k8s::decode_pod(o, options.decode, in.classes);
    if (!pod) {
      const std::string reason = fmt::format("{} ({})", pod.status().message(), pods[i]->origin);
      if (auto node = bound_node(o)) {
        in.unreadable_bound.push_back({who, *node, reason, claimed_devices(o)});
      } else {
        report.unschedulable.push_back(NotPlaced::refused(who, "Invalid", reason));
      }
      continue;
    }
    (pod->bound ? in.bound : in.pending).push_back({std::move(*pod), i});
  }
}

}  // namespace

Result<PlaceInputs> read_inputs(const std::vector<k8s::InputObject>& objects, const PlaceOptions& options,
                                PlaceReport& report) {
  PlaceInputs in;
  ObjectList nodes;
  ObjectList pods;
  if (auto s = sort_objects(objects, in, report, nodes, pods); !s.is_ok()) return s;
  read_nodes(nodes, options, in, report);
  read_pods(pods, options, in, report);
  return in;
}

}  // namespace fracpack::jobs
