#include <charconv>

#include "fracpack/k8s/decode.hpp"
#include "fracpack/core/quantity.hpp"
#include "fracpack/k8s/json_fields.hpp"
#include "fracpack/k8s/names.hpp"

namespace fracpack::k8s {

using nlohmann::json;
namespace {

constexpr std::int64_t kBytesThreshold = 1'048'576;  // KAI: a gpu.memory label this large is bytes

/// A non-negative decimal integer label; nullopt when absent.
Result<std::optional<std::int64_t>> integer_label(const NodeSpec& node, std::string_view key) {
  auto it = node.labels.find(std::string(key));
  if (it == node.labels.end()) return std::optional<std::int64_t>{};
  const std::string& s = it->second;
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size() || v < 0) {
    return invalid_argument("node {}: label \"{}\" = \"{}\": must be a non-negative integer",
                            node.name, key, excerpt(s));
  }
  return std::optional<std::int64_t>{v};
}

constexpr std::int64_t kMaxGpusPerNode = 1024;
constexpr std::int64_t kMaxReplicas = 256;

/// Label MiB (or bytes when ≥ 2^20), floored to a multiple of 100 MiB like KAI.
MiB floor_gpu_memory(std::int64_t label_value) {
  std::int64_t mib = label_value >= kBytesThreshold ? label_value / kBytesPerMiB : label_value;
  return MiB(mib / 100 * 100);
}

/// floor_gpu_memory(), refusing a value that floors to nothing (it would take fractions forever).
Result<MiB> gpu_memory_of(const NodeSpec& node, std::string_view source, std::int64_t value) {
  const MiB m = floor_gpu_memory(value);
  if (m.count() <= 0) {
    return invalid_argument("node {}: {} = {} gives 0 MiB per GPU once floored to 100 MiB (values ≥ 1048576 are "
                            "bytes); a GPU needs at least 100 MiB",
                            node.name, source, value);
  }
  return m;
}

/// Whether status.allocatable or status.capacity is given at all (a hand-written node may have neither).
bool has_resource_list(const json& object) {
  const json* status = member(object, "status");
  return status != nullptr && (member(*status, "allocatable") != nullptr || member(*status, "capacity") != nullptr);
}

Status read_allocatable(const json& object, NodeSpec& node, std::optional<std::int64_t>& gpu_allocatable) {
  const std::string who = "node " + node.name;
  const json* status = member(object, "status");
  if (status == nullptr) return Status::ok();
  // Allocatable is what pods may use; fall back to capacity for hand-written nodes.
  const char* key = member(*status, "allocatable") != nullptr ? "allocatable" : "capacity";
  auto values = string_map(*status, key, who + ": status");
  if (!values) return values.status();
  for (const auto& [name, text] : *values) {
    const std::string what = fmt::format("status.{}[\"{}\"]", key, excerpt(name));
    if (name == "cpu") {
      auto v = parse_milli_cpu(text, what);
      if (!v) return in_context(v.status(), who);
      node.cpu = *v;
    } else if (name == "memory") {
      auto v = parse_bytes(text, what);
      if (!v) return in_context(v.status(), who);
      node.memory = *v;
    } else if (name == "pods") {
      auto v = parse_count(text, what);
      if (!v) return in_context(v.status(), who);
      node.pods = *v;
    } else if (name == kGpuResource) {
      auto v = parse_count(text, what);
      if (!v) return in_context(v.status(), who);
      gpu_allocatable = *v;
    } else if (name != "ephemeral-storage" && !name.starts_with("hugepages-")) {
      auto v = parse_count(text, what);
      if (!v) return in_context(v.status(), who);
      node.extended[name] = *v;
    }
  }
  return Status::ok();
}

/// "True" in any case, or a YAML boolean true (an unquoted `status: True`).
bool is_true(const json& v) {
  if (v.is_boolean()) return v.get<bool>();
  if (!v.is_string()) return false;
  std::string s = v.get<std::string>();
  for (char& c : s) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return s == "true";
}

Status read_conditions(const json& object, NodeSpec& node, bool& has_fractioning) {
  const std::string who = "node " + node.name;
  const json* status = member(object, "status");
  if (status == nullptr) return Status::ok();
  auto conditions = optional_array(*status, "conditions", who + ": status");
  if (!conditions) return conditions.status();
  if (*conditions == nullptr) return Status::ok();
  std::size_t index = 0;
  for (const auto& c : **conditions) {
    const std::string where = fmt::format("{}: status.conditions[{}]", who, index++);
    if (!c.is_object()) return invalid_argument("{} must be a map with type and status, not a {}", where, c.type_name());
    auto type = optional_string(c, "type", where);
    if (!type) return type.status();
    if (!type->has_value()) continue;
    const json* value = member(c, "status");
    const bool yes = value != nullptr && is_true(*value);
    if (**type == "Ready") node.ready = yes;
    if (**type == kFractioningCondition) {
      has_fractioning = true;
      node.fractions_ready = yes;
    }
  }
  return Status::ok();
}

/// Parses the per-device inventory annotation "81920,81920,40960".
Result<std::vector<MiB>> read_inventory(const NodeSpec& node, const std::string& text) {
  std::vector<MiB> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    std::string_view item(text.data() + start, end - start);
    std::int64_t v = 0;
    auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || p != item.data() + item.size() || v <= 0) {
      return invalid_argument(
          "node {}: annotation \"{}\" = \"{}\": must list each GPU's memory in MiB, comma-separated",
          node.name, kGpuInventoryAnnotation, excerpt(text));
    }
    auto m = gpu_memory_of(node, fmt::format("annotation \"{}\" entry {}", kGpuInventoryAnnotation, out.size()), v);
    if (!m) return m.status();
    out.push_back(*m);
    start = end + 1;
  }
  return out;
}

Status read_gpus(const json& object, NodeSpec& node, std::optional<std::int64_t> gpu_allocatable,
                 bool has_fractioning) {
  auto replicas = integer_label(node, kGpuReplicasLabel);
  if (!replicas) return replicas.status();
  if (replicas->value_or(1) > kMaxReplicas) {
    return invalid_argument("node {}: label \"{}\" = {}: more than {} replicas per GPU is not supported", node.name,
                            kGpuReplicasLabel, **replicas, kMaxReplicas);
  }
  if (replicas->value_or(1) > 1) {
    if (has_fractioning) {
      return invalid_argument(
          "node {}: label \"{}\" = {} (device-plugin replicas) and condition \"{}\" (gpu-fractioning) "
          "cannot both be enabled on one node",
          node.name, kGpuReplicasLabel, **replicas, kFractioningCondition);
    }
    node.sharing = SharingKind::kReplicas;
    node.replica.replicas = static_cast<int>(**replicas);
    auto strategy = node.labels.find(std::string(kSharingStrategyLabel));
    if (strategy != node.labels.end() && strategy->second == "mps") {
      node.replica.strategy = ComputeMode::kSmSharing;
    } else if (strategy != node.labels.end() && strategy->second != "time-slicing") {
      return invalid_argument("node {}: label \"{}\" = \"{}\": must be time-slicing or mps with {} > 1",
                              node.name, kSharingStrategyLabel, excerpt(strategy->second), kGpuReplicasLabel);
    }
  } else if (has_fractioning) {
    node.sharing = SharingKind::kNvFractions;
  }

  // Devices: the count label, never more than the device plugin advertises (allocatable leaves
  // out unhealthy devices); allocatable alone when there is no label.
  auto count = integer_label(node, kGpuCountLabel);
  if (!count) return count.status();
  const std::optional<std::int64_t> advertised =
      gpu_allocatable ? std::optional<std::int64_t>(*gpu_allocatable / node.replica.replicas) : std::nullopt;
  const std::int64_t advertised_count = advertised.value_or(INT64_MAX);
  std::int64_t physical = count->value_or(advertised.value_or(0));
  physical = std::min(physical, advertised_count);
  if (physical > kMaxGpusPerNode) {
    return invalid_argument("node {}: {} GPUs is more than fracpack supports on one node ({})", node.name, physical,
                            kMaxGpusPerNode);
  }

  std::vector<MiB> memory(static_cast<std::size_t>(physical), MiB{0});
  if (auto label = integer_label(node, kGpuMemoryLabel); !label) {
    return label.status();
  } else if (label->has_value() && physical > 0) {
    auto m = gpu_memory_of(node, fmt::format("label \"{}\"", kGpuMemoryLabel), **label);
    if (!m) return m.status();
    node.gpu_memory_known = true;
    std::fill(memory.begin(), memory.end(), *m);
  }
  auto annotations = string_map(member(object, "metadata") ? object["metadata"] : json::object(),
                                "annotations", "node " + node.name + ": metadata");
  if (!annotations) return annotations.status();
  if (auto it = annotations->find(std::string(kGpuInventoryAnnotation)); it != annotations->end()) {
    auto inventory = read_inventory(node, it->second);
    if (!inventory) return inventory.status();
    if (count->has_value() && static_cast<std::int64_t>(inventory->size()) != **count) {
      return invalid_argument("node {}: annotation \"{}\" lists {} GPUs but label \"{}\" says {}",
                              node.name, kGpuInventoryAnnotation, inventory->size(), kGpuCountLabel, **count);
    }
    if (!count->has_value() && static_cast<std::int64_t>(inventory->size()) > kMaxGpusPerNode) {
      return invalid_argument("node {}: annotation \"{}\" lists {} GPUs, more than fracpack supports ({})", node.name,
                              kGpuInventoryAnnotation, inventory->size(), kMaxGpusPerNode);
    }
    if (!count->has_value()) physical = std::min(static_cast<std::int64_t>(inventory->size()), advertised_count);
    inventory->resize(static_cast<std::size_t>(physical));
    memory = std::move(*inventory);
    node.gpu_memory_known = physical > 0;
  }
  for (std::size_t i = 0; i < memory.size(); ++i) {
    node.gpus.push_back(GpuDevice{static_cast<int>(i), memory[i]});
  }
  return Status::ok();
}

}  // namespace

Result<NodeSpec> decode_node(const json& object, const DecodeConfig& /*config*/) {
  NodeSpec node;
  const json* metadata = member(object, "metadata");
  if (metadata == nullptr || !metadata->is_object()) {
    return invalid_argument("node: metadata is missing or not a map");
  }
  auto name = optional_string(*metadata, "name", "node: metadata");
  if (!name) return name.status();
  if (!name->has_value() || (*name)->empty()) return invalid_argument("node: metadata.name is missing");
  node.name = **name;
  if (!is_dns_subdomain(node.name)) {
    return invalid_argument("node \"{}\": metadata.name must be a DNS subdomain (lowercase letters, digits, '-' and "
                            "'.', at most 253 characters)",
                            excerpt(node.name));
  }

  auto labels = string_map(*metadata, "labels", "node " + node.name + ": metadata");
  if (!labels) return labels.status();
  node.labels = std::move(*labels);
  if (auto it = node.labels.find(std::string(kGpuProductLabel)); it != node.labels.end()) {
    node.gpu_product = it->second;
  }

  if (const json* spec = member(object, "spec")) {
    if (const json* u = member(*spec, "unschedulable")) {
      const auto text = scalar_text(*u);
      if (!text || (*text != "true" && *text != "false")) {
        return invalid_argument("node {}: spec.unschedulable must be true or false, not {}", node.name, excerpt(u->dump()));
      }
      node.schedulable = *text != "true";
    }
  }

  std::optional<std::int64_t> gpu_allocatable;
  if (auto st = read_allocatable(object, node, gpu_allocatable); !st.is_ok()) return st;
  if (!gpu_allocatable && has_resource_list(object)) gpu_allocatable = 0;  // the device plugin advertises none
  bool has_fractioning = false;
  if (auto st = read_conditions(object, node, has_fractioning); !st.is_ok()) return st;
  if (auto st = read_gpus(object, node, gpu_allocatable, has_fractioning); !st.is_ok()) return st;
  return node;
}

}  // namespace fracpack::k8s
