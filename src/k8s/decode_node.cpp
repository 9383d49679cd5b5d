#include <charconv>

#include "fracpack/k8s/decode.hpp"
#include "fracpack/quantity.hpp"
#include "k8s/json_fields.hpp"

namespace fracpack::k8s {
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
                            node.name, key, s);
  }
  return std::optional<std::int64_t>{v};
}

/// Label MiB (or bytes when ≥ 2^20), floored to a multiple of 100 MiB like KAI.
MiB floor_gpu_memory(std::int64_t label_value) {
  std::int64_t mib = label_value >= kBytesThreshold ? label_value / kBytesPerMiB : label_value;
  return MiB(mib / 100 * 100);
}

Status read_allocatable(const json& object, NodeSpec& node, std::int64_t& gpu_allocatable) {
  const std::string who = "node " + node.name;
  const json* status = member(object, "status");
  if (status == nullptr) return Status::ok();
  // Allocatable is what pods may use; fall back to capacity for hand-written nodes.
  const char* key = member(*status, "allocatable") != nullptr ? "allocatable" : "capacity";
  auto values = string_map(*status, key, who + ": status");
  if (!values) return values.status();
  for (const auto& [name, text] : *values) {
    const std::string what = fmt::format("status.{}[\"{}\"]", key, name);
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

Status read_conditions(const json& object, NodeSpec& node, bool& has_fractioning) {
  const std::string who = "node " + node.name;
  const json* status = member(object, "status");
  if (status == nullptr) return Status::ok();
  auto conditions = optional_array(*status, "conditions", who + ": status");
  if (!conditions) return conditions.status();
  if (*conditions == nullptr) return Status::ok();
  for (const auto& c : **conditions) {
    auto type = optional_string(c, "type", who + ": status.conditions[]");
    auto value = optional_string(c, "status", who + ": status.conditions[]");
    if (!type) return type.status();
    if (!value) return value.status();
    if (!type->has_value()) continue;
    const bool is_true = value->value_or("") == "True";
    if (**type == "Ready") node.ready = is_true;
    if (**type == kFractioningCondition) {
      has_fractioning = true;
      node.fractions_ready = is_true;
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
          node.name, kGpuInventoryAnnotation, text);
    }
    out.push_back(floor_gpu_memory(v));
    start = end + 1;
  }
  return out;
}

Status read_gpus(const json& object, NodeSpec& node, std::int64_t gpu_allocatable,
                 bool has_fractioning) {
  auto replicas = integer_label(node, kGpuReplicasLabel);
  if (!replicas) return replicas.status();
  if (replicas->value_or(1) > 1) {
    if (has_fractioning) {
      return invalid_argument(
          "node {}: label \"{}\" = {} (device-plugin replicas) and condition \"{}\" (gpu-fractioning) "
          "cannot both be enabled on one node",
          node.name, kGpuReplicasLabel, **replicas, kFractioningCondition);
    }
    node.sharing = SharingKind::kReplicas;
    node.replica.replicas = static_cast<int>(std::min<std::int64_t>(**replicas, 1 << 20));
    auto strategy = node.labels.find(std::string(kSharingStrategyLabel));
    if (strategy != node.labels.end() && strategy->second == "mps") {
      node.replica.strategy = ComputeMode::kSmSharing;
    } else if (strategy != node.labels.end() && strategy->second != "time-slicing") {
      return invalid_argument("node {}: label \"{}\" = \"{}\": must be time-slicing or mps with {} > 1",
                              node.name, kSharingStrategyLabel, strategy->second, kGpuReplicasLabel);
    }
  } else if (has_fractioning) {
    node.sharing = SharingKind::kNvFractions;
  }

  auto count = integer_label(node, kGpuCountLabel);
  if (!count) return count.status();
  std::int64_t physical = count->value_or(gpu_allocatable / node.replica.replicas);
  if (physical > 4096) {
    return invalid_argument("node {}: {} GPUs is more than fracpack supports on one node (4096)",
                            node.name, physical);
  }

  std::vector<MiB> memory(static_cast<std::size_t>(physical), MiB{0});
  if (auto label = integer_label(node, kGpuMemoryLabel); !label) {
    return label.status();
  } else if (label->has_value()) {
    node.gpu_memory_known = true;
    std::fill(memory.begin(), memory.end(), floor_gpu_memory(**label));
  }
  auto annotations = string_map(member(object, "metadata") ? object["metadata"] : json::object(),
                                "annotations", "node " + node.name + ": metadata");
  if (!annotations) return annotations.status();
  if (auto it = annotations->find(std::string(kGpuInventoryAnnotation)); it != annotations->end()) {
    auto inventory = read_inventory(node, it->second);
    if (!inventory) return inventory.status();
    if (count->has_value() && static_cast<std::int64_t>(inventory->size()) != physical) {
      return invalid_argument("node {}: annotation \"{}\" lists {} GPUs but label \"{}\" says {}",
                              node.name, kGpuInventoryAnnotation, inventory->size(), kGpuCountLabel,
                              physical);
    }
    memory = std::move(*inventory);
    node.gpu_memory_known = true;
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

  auto labels = string_map(*metadata, "labels", "node " + node.name + ": metadata");
  if (!labels) return labels.status();
  node.labels = std::move(*labels);
  if (auto it = node.labels.find(std::string(kGpuProductLabel)); it != node.labels.end()) {
    node.gpu_product = it->second;
  }

  if (const json* spec = member(object, "spec")) {
    if (const json* u = member(*spec, "unschedulable"); u != nullptr && u->is_boolean()) {
      node.schedulable = !u->get<bool>();
    }
  }

  std::int64_t gpu_allocatable = 0;
  if (auto st = read_allocatable(object, node, gpu_allocatable); !st.is_ok()) return st;
  bool has_fractioning = false;
  if (auto st = read_conditions(object, node, has_fractioning); !st.is_ok()) return st;
  if (auto st = read_gpus(object, node, gpu_allocatable, has_fractioning); !st.is_ok()) return st;
  return node;
}

}  // namespace fracpack::k8s
