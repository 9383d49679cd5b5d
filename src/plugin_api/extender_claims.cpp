// What a running pod's GPU claim may change (docs/security.md, "What fracpack believes"). A bound
// pod's GPU annotations and labels are written by fracpack's Bind (or by the binder that placed
// it) and read once, when the ledger first holds the pod bound where it runs. The container was
// started on those GPUs; a later edit of the same running pod (another GPU index, another group,
// another memory request) moves nothing on the node. Believing it would move the pod in the
// ledger, free the GPU the container still uses, and delete that GPU's reservation pod: a tenant
// with patch rights on its own pods could hand a neighbour's whole-GPU job the same device.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>

#include "fracpack/core/labels.hpp"
#include "fracpack/core/quoting.hpp"
#include "fracpack/k8s/object_stream.hpp"
#include "plugin_api/extender_impl.hpp"

namespace fracpack::api {
namespace {

/// Who last wrote the pod, as the API server records it: the manager of the newest managedFields
/// entry ("" when there is none).
std::string last_writer(const json& pod) {
  static const json::json_pointer kFields("/metadata/managedFields");
  if (!pod.contains(kFields) || !pod[kFields].is_array()) return {};
  std::string writer;
  std::string newest;
  for (const auto& entry : pod[kFields]) {
    if (!entry.is_object()) continue;
    const std::string time = entry.value("time", std::string());  // RFC 3339: compares as text
    const auto manager = entry.find("manager");
    if (manager != entry.end() && manager->is_string() && time >= newest) {
      newest = time;
      writer = manager->get<std::string>();
    }
  }
  return writer;
}

/// A running pod's GPU claim as its object states it, in words: the annotations a scheduler reads
/// or writes for its GPUs (what it asks, the GPUs, devices and portions it names) and its GPU
/// groups. The same words, the same claim.
std::string claim_text(const json& pod) {
  static const json::json_pointer kAnnotations("/metadata/annotations");
  std::vector<std::string> parts;
  if (pod.contains(kAnnotations) && pod[kAnnotations].is_object()) {
    for (const auto& [key, value] : pod[kAnnotations].items()) {
      const bool gpu = key.starts_with("nvidia.com/container.") || key == k8s::kLedgerGpusAnnotation || key.starts_with("gpu-fraction") ||
                       key == "gpu-memory";
      if (gpu && key != k8s::kGpuGroupsAnnotation) parts.push_back(fmt::format("{}={}", key, value.is_string() ? value.get<std::string>() : value.dump()));
    }
  }
  std::sort(parts.begin(), parts.end());
  parts.push_back(fmt::format("groups={}", fmt::join(bound_gpu_groups(pod), ",")));
  return fmt::format("{}", fmt::join(parts, ", "));  // whole: an edit past any excerpt is an edit
}

/// spec.nodeName, or "" (whatever type a hostile writer gave it).
std::string bound_node(const json& pod) {
  static const json::json_pointer kNode("/spec/nodeName");
  return pod.contains(kNode) && pod[kNode].is_string() ? pod[kNode].get<std::string>() : std::string();
}

/// The items of a comma-separated annotation value.
std::vector<std::string> comma_items(const std::string& text) {
  std::vector<std::string> out;
  for (std::size_t at = 0; at <= text.size();) {
    const auto comma = std::min(text.find(',', at), text.size());
    std::string item = text.substr(at, comma - at);
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    if (!item.empty()) out.push_back(std::move(item));
    at = comma + 1;
  }
  return out;
}

std::optional<int> index_of(const std::string& item) {
  int v = -1;
  const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
  if (ec != std::errc() || end != item.data() + item.size() || v < 0 || v > 4095) return std::nullopt;
  return v;
}

}  // namespace

std::vector<int> ExtenderImpl::readable_gpus(const json& pod, const std::string& node) const {
  std::vector<int> out;
  auto add = [&](std::optional<int> g) {
    if (g && std::find(out.begin(), out.end(), *g) == out.end()) out.push_back(*g);
  };
  static const json::json_pointer kAnnotations("/metadata/annotations");
  if (!pod.contains(kAnnotations) || !pod[kAnnotations].is_object()) return out;
  for (const auto& [key, value] : pod[kAnnotations].items()) {
    if (!value.is_string()) continue;
    const bool ledger = key == k8s::kLedgerGpusAnnotation;
    const bool devices = key.starts_with("nvidia.com/container.") && key.ends_with(".gpus.devices");
    if (!ledger && !devices) continue;
    for (const std::string& item : comma_items(value.get<std::string>())) {
      auto g = index_of(item);
      if (!g && devices && book_) g = book_->gpu_of_device(node, item);  // a UUID a reservation pod reported
      add(g);
    }
  }
  const int count = gpu_count_of(node);
  std::erase_if(out, [&](int g) { return count >= 0 && g >= count; });
  std::sort(out.begin(), out.end());
  return out;
}

void ExtenderImpl::record_claim(const std::string& key, const json& object) {
  const std::string uid = k8s::metadata_string(object, "uid");
  const std::string node = bound_node(object);
  auto it = recorded_claims_.find(key);
  if (it != recorded_claims_.end() && it->second.uid == uid && it->second.node == node) return;  // the first view is the record
  recorded_claims_[key] = {uid, node, claim_text(object)};
}

bool ExtenderImpl::claim_edited(const std::string& key, const PodRequest* raw, const json& object) {
  const auto rec = recorded_claims_.find(key);
  const std::string uid = k8s::metadata_string(object, "uid");
  const std::string node = bound_node(object);
  if (rec == recorded_claims_.end() || uid.empty() || rec->second.uid != uid || rec->second.node != node) return false;
  const PodRecord* held = state_.pod(key);
  // A conflict (two pods claimed one GPU) stays held as recorded too: its fence is what protects
  // the GPU its containers use.
  if (held == nullptr || (held->standing != PodStanding::kBound && held->standing != PodStanding::kConflict)) return false;
  const std::string now = claim_text(object);
  if (now == rec->second.text) {
    if (claim_edits_.erase(key) > 0) {
      spdlog::info("pod {}: its GPU claim reads as recorded again; the GPUs its edit named are no longer fenced", key);
      (void)state_.fence_claim(key, {});
    }
    return false;
  }
  if (auto [it, added] = claim_edits_.try_emplace(key, now); added || it->second != now) {
    it->second = now;
    std::string writer = last_writer(object);
    spdlog::warn("pod {} on node {}: its GPU claim was edited on the running pod by {}: recorded [{}], now [{}]{}; it keeps holding "
                 "what was recorded (its containers run there), and GPUs the edit names are fenced while the edit stands",
                 key, node, writer.empty() ? std::string("an unknown writer (no managedFields)") : excerpt(writer), excerpt(rec->second.text, 1024), excerpt(now, 1024),
                 raw == nullptr ? " (unreadable)" : "");
    constexpr std::size_t kWriters = 64;  // writer names come from the API server's objects: bounded
    if (writer.empty()) writer = "unknown";
    if (!claim_edit_writers_.contains(writer) && claim_edit_writers_.size() >= kWriters) writer = "other";
    ++claim_edit_writers_[writer];
  }
  // What the edit names, read every way it can be: the GPUs its groups lead to, and the indices and
  // devices its annotations write (a group left as it was must not hide an index written beside it).
  std::vector<int> named = readable_gpus(object, node);
  if (raw != nullptr) named.insert(named.end(), raw->bound->devices.begin(), raw->bound->devices.end());
  (void)state_.fence_claim(key, named);
  return true;
}

}  // namespace fracpack::api
