// The placement invariants read from the API server's objects alone, as an outside checker sees
// them (not from any fracpack ledger): per node and ledger index (fracpack.io/gpus on pods,
// fracpack.io/gpu on reservation pods) no whole-GPU pod beside fractions or another whole-GPU pod
// or a reservation pod, one compute mode, one physical GPU (and one index per physical GPU), the
// fractions' memory within the GPU's; and every running fraction's GPU groups have a live
// reservation pod on its node that reported the device the fraction names. Tests only.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/kube_rig.hpp"

namespace fracpack::test {

namespace invariants_detail {

using nlohmann::json;

inline std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  for (std::size_t at = 0; at <= text.size();) {
    const auto comma = std::min(text.find(',', at), text.size());
    if (comma > at) out.push_back(text.substr(at, comma - at));
    at = comma + 1;
  }
  return out;
}

/// "30Gi", "500Mi", "81920" (MiB) → MiB; -1 when unreadable.
inline long long mib(const std::string& q) {
  try {
    if (q.ends_with("Gi")) return std::stoll(q.substr(0, q.size() - 2)) * 1024;
    if (q.ends_with("Mi")) return std::stoll(q.substr(0, q.size() - 2));
    return std::stoll(q);
  } catch (const std::exception&) {
    return -1;
  }
}

inline std::string annotation(const json& pod, const std::string& key) {
  const json a = pod["metadata"].value("annotations", json::object());
  return a.contains(key) && a[key].is_string() ? a[key].get<std::string>() : std::string();
}

/// One ledger index of one node, as the objects there describe it.
struct Slot {
  std::vector<std::string> whole;         ///< whole-GPU pods
  std::vector<std::string> fractions;
  std::vector<std::string> reservations;  ///< live reservation pods naming it
  std::set<std::string> modes;
  std::set<std::string> devices;          ///< physical GPUs named for it
  long long memory = 0;                   ///< fractions' requests, MiB
};

}  // namespace invariants_detail

/// Every invariant broken in the API server's objects now; empty when all hold.
inline std::vector<std::string> api_invariants(const KubeRig& rig, const std::string& reservations = "kai-resource-reservation") {
  using namespace invariants_detail;
  std::vector<std::string> out;
  const json pods = rig.get("/api/v1/pods");
  const json nodes = rig.get("/api/v1/nodes");
  if (!pods.is_object() || !nodes.is_object()) return {"cannot list pods or nodes"};
  std::map<std::string, long long> gpu_memory;  // node → MiB per GPU (label)
  for (const auto& n : nodes["items"]) {
    const json labels = n["metadata"].value("labels", json::object());  // named, as above
    if (labels.contains("nvidia.com/gpu.memory")) gpu_memory[n["metadata"]["name"]] = mib(labels["nvidia.com/gpu.memory"].get<std::string>());
  }
  std::map<std::pair<std::string, int>, Slot> slots;
  std::map<std::pair<std::string, std::string>, std::string> reserved;  // (node, group) → reported device
  std::map<std::pair<std::string, std::string>, std::set<int>> device_indices;  // (node, device) → indices naming it
  std::vector<std::pair<std::string, json>> fractions;
  for (const auto& p : pods["items"]) {
    const std::string node = p["spec"].value("nodeName", "");
    const std::string phase = p.contains("status") ? p["status"].value("phase", "") : "";
    if (node.empty() || phase == "Succeeded" || phase == "Failed") continue;
    const std::string key = p["metadata"].value("namespace", "") + "/" + p["metadata"].value("name", "");
    if (p["metadata"].value("namespace", "") == reservations) {
      if (p["metadata"].contains("deletionTimestamp")) continue;
      const std::string group = p["metadata"].value("labels", json::object()).value("runai-gpu-group", "");
      const std::string device = annotation(p, "run.ai/reserve_for_gpu_index");
      reserved[{node, group}] = device;
      if (const std::string index = annotation(p, "fracpack.io/gpu"); !index.empty()) {
        Slot& s = slots[{node, std::stoi(index)}];
        s.reservations.push_back(key);
        if (!device.empty()) {
          s.devices.insert(device);
          device_indices[{node, device}].insert(std::stoi(index));
        }
      }
      continue;
    }
    const std::vector<std::string> indices = split(annotation(p, "fracpack.io/gpus"));
    std::vector<std::string> devices;
    std::string memory;
    std::string mode = "time-slicing";
    const json annotations = p["metadata"].value("annotations", json::object());  // named: a temporary's items would dangle
    for (const auto& [k, v] : annotations.items()) {
      if (!v.is_string() || !k.starts_with("nvidia.com/container.")) continue;
      if (k.ends_with(".gpus.devices")) devices = split(v.get<std::string>());
      if (k.ends_with(".gpu-memory.request")) memory = v.get<std::string>();
      if (k.ends_with(".gpu-compute.mode")) mode = v.get<std::string>();
    }
    const bool fraction = !memory.empty();
    if (fraction && !split(annotation(p, "fracpack.io/gpu-groups")).empty()) fractions.emplace_back(key, p);
    for (std::size_t i = 0; i < indices.size(); ++i) {
      Slot& s = slots[{node, std::stoi(indices[i])}];
      if (!fraction) {
        s.whole.push_back(key);
        continue;
      }
      s.fractions.push_back(key);
      s.modes.insert(mode);
      s.memory += mib(memory);
      if (i < devices.size()) {
        s.devices.insert(devices[i]);
        device_indices[{node, devices[i]}].insert(std::stoi(indices[i]));
      }
    }
  }
  for (const auto& [at, s] : slots) {
    const std::string where = fmt::format("{} GPU {}", at.first, at.second);
    if (!s.whole.empty() && (s.whole.size() > 1 || !s.fractions.empty() || !s.reservations.empty())) {
      out.push_back(fmt::format("{}: whole-GPU pod(s) {} beside {} fraction(s) and {} reservation pod(s)", where, fmt::join(s.whole, ","),
                                s.fractions.size(), s.reservations.size()));
    }
    if (s.modes.size() > 1) out.push_back(fmt::format("{}: two compute modes", where));
    if (s.devices.size() > 1) out.push_back(fmt::format("{}: names physical GPUs {}", where, fmt::join(s.devices, ",")));
    if (s.reservations.size() > 1) out.push_back(fmt::format("{}: reservation pods {}", where, fmt::join(s.reservations, ",")));
    if (auto m = gpu_memory.find(at.first); m != gpu_memory.end() && s.memory > m->second) {
      out.push_back(fmt::format("{}: fractions ask {} MiB of its {} MiB", where, s.memory, m->second));
    }
  }
  for (const auto& [at, indices] : device_indices) {
    if (indices.size() > 1) out.push_back(fmt::format("{}: physical GPU {} is named at indices {}", at.first, at.second, fmt::join(indices, ",")));
  }
  for (const auto& [key, p] : fractions) {
    const std::string node = p["spec"]["nodeName"];
    const auto groups = split(annotation(p, "fracpack.io/gpu-groups"));
    std::vector<std::string> devices;
    for (const auto& [k, v] : p["metadata"]["annotations"].items()) {
      if (k.ends_with(".gpus.devices") && v.is_string()) devices = split(v.get<std::string>());
    }
    for (std::size_t i = 0; i < groups.size(); ++i) {
      auto r = reserved.find({node, groups[i]});
      if (r == reserved.end()) {
        out.push_back(fmt::format("fraction {}: its GPU group {} has no reservation pod on {}", key, groups[i], node));
      } else if (i < devices.size() && r->second != devices[i]) {
        out.push_back(fmt::format("fraction {}: runs on {}, its group's reservation pod holds {}", key, devices[i], r->second));
      }
    }
  }
  return out;
}

}  // namespace fracpack::test
