#include <charconv>

#include "fracpack/k8s/decode.hpp"
#include "fracpack/k8s/time.hpp"
#include "fracpack/core/quoting.hpp"
#include "fracpack/k8s/json_fields.hpp"
#include "fracpack/k8s/names.hpp"
#include "k8s/pod_parts.hpp"

namespace fracpack::k8s {

using nlohmann::json;
namespace {

/// PodGroup name: KAI's annotation first, then the coscheduling / Volcano spellings.
/// KAI's sub-group membership label (pkg/common/constants: SubGroupLabelKey; docs/placement.md rule 18).
constexpr std::string_view kSubGroupLabel = "kai.scheduler/subgroup-name";
constexpr std::string_view kGangAnnotations[] = {"pod-group-name", "scheduling.k8s.io/group-name"};
constexpr std::string_view kGangLabels[] = {"scheduling.x-k8s.io/pod-group", "pod-group.scheduling.sigs.k8s.io"};

/// A pod asks for a device-plugin replica slot when its nodeSelector targets replica sharing.
bool asks_for_shared_slot(const std::map<std::string, std::string>& selector) {
  if (selector.count(std::string(kSharingStrategyLabel)) || selector.count(std::string(kGpuReplicasLabel))) {
    return true;
  }
  auto product = selector.find(std::string(kGpuProductLabel));
  return product != selector.end() && product->second.ends_with("-SHARED");
}

Result<std::optional<std::int32_t>> spec_priority(const json& spec, const std::string& who) {
  const json* p = member(spec, "priority");
  if (p == nullptr) return std::optional<std::int32_t>{};
  const bool in_range = p->is_number_unsigned()  ? p->get<std::uint64_t>() <= INT32_MAX
                        : p->is_number_integer() ? p->get<std::int64_t>() >= INT32_MIN && p->get<std::int64_t>() <= INT32_MAX
                                                 : false;
  if (!in_range) return invalid_argument("{}: spec.priority must be a 32-bit integer, not {}", who, excerpt(p->dump()));
  return std::optional<std::int32_t>{static_cast<std::int32_t>(p->get<std::int64_t>())};
}

/// metadata's name, namespace, uid and creationTimestamp, each checked (docs/requests.md rule 23).
Status read_identity(const json& metadata, PodRequest& pod) {
  auto name = optional_string(metadata, "name", "pod: metadata");
  if (!name) return name.status();
  if (!name->has_value() || (*name)->empty()) return invalid_argument("pod: metadata.name is missing");
  pod.name = **name;
  auto ns = optional_string(metadata, "namespace", "pod " + excerpt(pod.name) + ": metadata");
  if (!ns) return ns.status();
  if (ns->has_value() && !(*ns)->empty()) pod.namespace_name = **ns;
  if (!is_dns_label(pod.namespace_name)) {
    return invalid_argument("pod \"{}/{}\": metadata.namespace must be a DNS label (lowercase letters, digits and '-', "
                            "at most 63)",
                            excerpt(pod.namespace_name), excerpt(pod.name));
  }
  if (!is_dns_subdomain(pod.name)) {
    return invalid_argument("pod \"{}/{}\": metadata.name must be a DNS subdomain (lowercase letters, digits, '-' and "
                            "'.', at most 253)",
                            pod.namespace_name, excerpt(pod.name));
  }
  const std::string who = "pod " + pod.key();
  auto uid = optional_string(metadata, "uid", who + ": metadata");
  if (!uid) return uid.status();
  pod.uid = uid->value_or("");
  if (const json* created = member(metadata, "creationTimestamp")) {
    auto seconds = created->is_string() ? parse_rfc3339(created->get<std::string>()) : std::nullopt;
    if (!seconds) return invalid_argument("{}: metadata.creationTimestamp must be an RFC 3339 time", who);
    pod.created = *seconds;
  }
  return Status::ok();
}

/// status.startTime (the kubelet's, metav1.Time), when the pod has one: min-runtime protection
/// counts from it (queues/min_runtime.hpp).
Status read_start_time(const json& object, const std::string& who, PodRequest& pod) {
  const json* status = member(object, "status");
  const json* start = status != nullptr && status->is_object() ? member(*status, "startTime") : nullptr;
  if (start == nullptr || start->is_null()) return Status::ok();
  auto seconds = start->is_string() ? parse_rfc3339(start->get<std::string>()) : std::nullopt;
  if (!seconds) return invalid_argument("{}: status.startTime must be an RFC 3339 time", who);
  pod.started = *seconds;
  return Status::ok();
}

/// The GPU request: a fraction from the annotations, or whole GPUs from the resources; never both.
Status read_gpu_request(const PodResources& resources, const FractionAnnotations& fractions, const std::string& who,
                        PodRequest& pod) {
  if (fractions.fraction) {
    if (resources.gpus > 0) {
      return invalid_argument("{}: a fractional pod must not also request {} (container {} asks for {}); use one form",
                              who, kGpuResource,
                              resources.gpu_containers.empty() ? "?" : resources.gpu_containers.front(),
                              resources.gpus);
    }
    pod.gpu = *fractions.fraction;
  } else if (resources.gpus > 0) {
    if (resources.gpus > 1024) {
      return invalid_argument("{}: {} = {} is more GPUs than any node has (at most 1024)", who, kGpuResource,
                              resources.gpus);
    }
    pod.gpu = WholeGpus{static_cast<int>(resources.gpus), asks_for_shared_slot(pod.node_selector)};
  }
  return Status::ok();
}

/// The queue: the first of the configured label keys the pod carries, else the default queue.
std::string queue_of(const std::map<std::string, std::string>& labels, const DecodeConfig& config) {
  for (const auto& key : config.queue_label_keys) {
    if (auto it = labels.find(key); it != labels.end() && !it->second.empty()) return it->second;
  }
  return config.default_queue;
}

/// Priority and preemptibility from the PriorityClass, spec.priority and the preemptibility label.
Status read_priority(const json& spec, const std::map<std::string, std::string>& labels,
                     const PriorityClasses& classes, const std::string& who, PodRequest& pod) {
  auto class_name = optional_string(spec, "priorityClassName", who + ": spec");
  if (!class_name) return class_name.status();
  pod.priority_class = class_name->value_or("");
  auto priority_value = spec_priority(spec, who);
  if (!priority_value) return priority_value.status();
  std::optional<std::string> preemptibility;
  if (auto it = labels.find(std::string(kPreemptibilityLabel)); it != labels.end()) preemptibility = it->second;
  auto decision = resolve_priority(who, pod.priority_class, *priority_value, preemptibility, classes);
  if (!decision) return decision.status();
  pod.priority = decision->priority;
  pod.preemptible = decision->preemptible;
  return Status::ok();
}

/// The PodGroup name: the annotations first, then the labels, each in their order of precedence.
std::optional<std::string> gang_of(const std::map<std::string, std::string>& annotations,
                                   const std::map<std::string, std::string>& labels) {
  for (auto key : kGangAnnotations) {
    if (auto it = annotations.find(std::string(key)); it != annotations.end() && !it->second.empty()) return it->second;
  }
  for (auto key : kGangLabels) {
    if (auto it = labels.find(std::string(key)); it != labels.end() && !it->second.empty()) return it->second;
  }
  return std::nullopt;
}

}  // namespace

Result<PodRequest> decode_pod(const json& object, const DecodeConfig& config,
                              const PriorityClasses& classes) {
  PodRequest pod;
  const json* metadata = member(object, "metadata");
  if (metadata == nullptr || !metadata->is_object()) return invalid_argument("pod: metadata is missing or not a map");
  if (auto st = read_identity(*metadata, pod); !st.is_ok()) return st;
  const std::string who = "pod " + pod.key();
  auto labels = string_map(*metadata, "labels", who + ": metadata");
  auto annotations = string_map(*metadata, "annotations", who + ": metadata");
  if (!labels) return labels.status();
  if (!annotations) return annotations.status();

  const json* spec = member(object, "spec");
  if (spec == nullptr || !spec->is_object()) return invalid_argument("{}: spec is missing", who);
  auto scheduler = optional_string(*spec, "schedulerName", who + ": spec");
  if (!scheduler) return scheduler.status();
  pod.scheduler_name = scheduler->value_or("");
  auto node_name = optional_string(*spec, "nodeName", who + ": spec");
  if (!node_name) return node_name.status();
  const bool bound = node_name->has_value() && !(*node_name)->empty();

  auto resources = read_pod_resources(*spec, who, config);
  if (!resources) return resources.status();
  pod.cpu = resources->cpu;
  pod.memory = resources->memory;
  pod.rdma = resources->rdma;
  pod.extended = resources->extended;
  auto fractions = read_fraction_annotations(*annotations, resources->containers, bound, who);
  if (!fractions) return fractions.status();

  auto selector = string_map(*spec, "nodeSelector", who + ": spec");
  if (!selector) return selector.status();
  pod.node_selector = std::move(*selector);
  auto affinity = read_required_node_affinity(*spec, who);
  if (!affinity) return affinity.status();
  pod.node_affinity = std::move(*affinity);
  if (auto st = read_gpu_request(*resources, *fractions, who, pod); !st.is_ok()) return st;
  if (bound) pod.bound = Binding{**node_name, fractions->devices};
  if (auto st = read_start_time(object, who, pod); !st.is_ok()) return st;

  pod.queue = queue_of(*labels, config);
  if (auto st = read_priority(*spec, *labels, classes, who, pod); !st.is_ok()) return st;
  pod.gang = gang_of(*annotations, *labels);
  if (auto it = labels->find(std::string(kSubGroupLabel)); it != labels->end()) pod.sub_group = it->second;
  return pod;
}

std::optional<std::string> pod_group_of(const json& pod) {
  auto strings = [&](const char* field) {
    std::map<std::string, std::string> out;
    const json::json_pointer at(std::string("/metadata/") + field);
    if (!pod.is_object() || !pod.contains(at) || !pod[at].is_object()) return out;
    for (const auto& [k, v] : pod[at].items()) {
      if (v.is_string()) out.emplace(k, v.get<std::string>());
    }
    return out;
  };
  return gang_of(strings("annotations"), strings("labels"));
}

}  // namespace fracpack::k8s
