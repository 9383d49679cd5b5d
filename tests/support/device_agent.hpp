// The kubelet's part in a reservation pod's life, for kube-rig (which has no kubelet): the device
// plugin gives each reservation pod one GPU of its node that no other reservation pod has, and
// the pod's program (KAI's cmd/resourcereservation) writes that GPU's UUID into its annotation
// run.ai/reserve_for_gpu_index. UUIDs read "GPU-<node>-<index>".
#pragma once

#include <atomic>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "support/kube_rig.hpp"

namespace fracpack::test {

class DeviceAgent {
 public:
  explicit DeviceAgent(const KubeRig& rig, std::string ns = "kai-resource-reservation") : rig_(rig), ns_(std::move(ns)) {
    thread_ = std::thread([this] { run(); });
  }
  DeviceAgent(const DeviceAgent&) = delete;
  DeviceAgent& operator=(const DeviceAgent&) = delete;
  ~DeviceAgent() {
    stop_ = true;
    thread_.join();
  }
  /// While paused, new reservation pods get no GPU (a device plugin out of devices, an image
  /// that does not start).
  void pause(bool paused) { paused_ = paused; }
  /// Reservation pods that got a GPU so far.
  [[nodiscard]] int reported() const { return reported_; }

 private:
  void run() {
    while (!stop_) {
      if (!paused_) report_new();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  void report_new() {
    const nlohmann::json list = rig_.get("/api/v1/namespaces/" + ns_ + "/pods");
    if (!list.is_object()) return;
    std::map<std::string, std::set<std::string>> taken;  // node → UUIDs reported
    for (const auto& p : list["items"]) {
      const auto annotations = p["metadata"].value("annotations", nlohmann::json::object());
      if (annotations.contains(kAnnotation)) taken[p["spec"].value("nodeName", "")].insert(annotations[kAnnotation].get<std::string>());
    }
    for (const auto& p : list["items"]) {
      const auto annotations = p["metadata"].value("annotations", nlohmann::json::object());
      const std::string node = p["spec"].value("nodeName", "");
      if (annotations.contains(kAnnotation) || node.empty()) continue;
      std::string uuid;
      for (int i = 0; uuid.empty() || taken[node].contains(uuid); ++i) uuid = fmt::format("GPU-{}-{}", node, i);
      taken[node].insert(uuid);
      const nlohmann::json patch = {{"metadata", {{"annotations", {{kAnnotation, uuid}}}}}};
      if (rig_.send("PATCH", fmt::format("/api/v1/namespaces/{}/pods/{}", ns_, p["metadata"]["name"].get<std::string>()), patch,
                    "application/merge-patch+json") == 200) {
        ++reported_;
      }
    }
  }
  static constexpr const char* kAnnotation = "run.ai/reserve_for_gpu_index";
  const KubeRig& rig_;
  std::string ns_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> paused_{false};
  std::atomic<int> reported_{0};
  std::thread thread_;
};

}  // namespace fracpack::test
