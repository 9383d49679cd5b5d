// The kubelet's part in GPU pods' lives, for kube-rig (which has no kubelet), and what a kubelet
// would see go wrong. Devices of a node are "GPU-<node>-<i>", i below its allocatable
// nvidia.com/gpu. When a pod is first seen bound:
// - a pod that requests nvidia.com/gpu (a whole-GPU pod, a reservation pod) is admitted as the
//   device plugin admits it: it gets that many devices no admitted pod holds, the lowest first; when
//   there are not enough, the kubelet refuses it (phase Failed, UnexpectedAdmissionError), as a
//   real kubelet does;
// - a reservation pod's program (KAI's cmd/resourcereservation) then writes its device's UUID into
//   run.ai/reserve_for_gpu_index, after `start_delay` (+ up to `start_jitter`: container start);
// - a fraction (no nvidia.com/gpu) starts on the UUIDs its gpus.devices names, and runs there
//   whatever is written on the pod later.
// It follows the API server with a watch, as a kubelet does. violations() lists what a real node
// would have suffered: a pod the kubelet had to refuse, a fraction started on a GPU no reservation
// pod holds, a reservation pod deleted while fractions ran on its GPU, a whole-GPU pod handed a
// GPU a fraction runs on.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "support/kube_rig.hpp"

namespace fracpack::test {

class DeviceAgent {
 public:
  using json = nlohmann::json;
  struct Options {
    std::string ns = "kai-resource-reservation";  ///< the reservation pods' namespace
    std::chrono::milliseconds start_delay{0};     ///< a reservation pod reports this long after its admission
    std::chrono::milliseconds start_jitter{0};    ///< plus up to this much (seeded)
    std::uint64_t seed = 1;
  };
  explicit DeviceAgent(const KubeRig& rig) : DeviceAgent(rig, Options{}) {}
  DeviceAgent(const KubeRig& rig, Options options) : rig_(rig), options_(std::move(options)), random_(options_.seed) {
    watcher_ = std::thread([this] { watch_loop(); });
    reporter_ = std::thread([this] { report_loop(); });
  }
  DeviceAgent(const DeviceAgent&) = delete;
  DeviceAgent& operator=(const DeviceAgent&) = delete;
  ~DeviceAgent() {
    stop_ = true;
    watcher_.join();
    reporter_.join();
  }
  /// While paused, reservation pods report nothing (a device plugin out of devices, an image
  /// that does not start); they report once resumed.
  void pause(bool paused) { paused_ = paused; }
  /// Reservation pods that reported their GPU so far.
  [[nodiscard]] int reported() const { return reported_; }
  /// What went wrong on the nodes so far (see the file's comment); empty when nothing did.
  [[nodiscard]] std::vector<std::string> violations() const {
    std::lock_guard lock(mu_);
    return violations_;
  }
  /// Running fractions: pod → the device UUIDs they started on.
  [[nodiscard]] std::map<std::string, std::vector<std::string>> fractions() const {
    std::lock_guard lock(mu_);
    std::map<std::string, std::vector<std::string>> out;
    for (const auto& [key, f] : fractions_) out[key] = f.devices;
    return out;
  }

 private:
  struct Held {
    std::string uid;
    std::string node;
    std::vector<std::string> devices;
    bool reservation = false;
  };
  struct Report {
    std::string key;
    std::string uuid;
    std::chrono::steady_clock::time_point due;
  };

  static std::string key_of(const json& pod) {
    return pod["metadata"].value("namespace", "default") + "/" + pod["metadata"].value("name", "");
  }
  static std::int64_t gpus_requested(const json& pod) {
    std::int64_t n = 0;
    const json containers = pod["spec"].value("containers", json::array());  // named: a temporary's items would dangle
    for (const auto& c : containers) {
      const json resources = c.value("resources", json::object());
      for (const char* kind : {"requests", "limits"}) {
        const json amounts = resources.value(kind, json::object());
        if (!amounts.contains("nvidia.com/gpu")) continue;
        const json& v = amounts["nvidia.com/gpu"];
        n += v.is_string() ? std::stoll(v.get<std::string>()) : v.get<std::int64_t>();
        break;
      }
    }
    return n;
  }
  static std::vector<std::string> fraction_devices(const json& pod) {
    std::vector<std::string> out;
    const json annotations = pod["metadata"].value("annotations", json::object());  // named: a temporary's items would dangle
    for (const auto& [k, v] : annotations.items()) {
      if (!k.starts_with("nvidia.com/container.") || !k.ends_with(".gpus.devices") || !v.is_string()) continue;
      const std::string text = v.get<std::string>();
      for (std::size_t at = 0; at <= text.size();) {
        const auto comma = std::min(text.find(',', at), text.size());
        if (comma > at) out.push_back(text.substr(at, comma - at));
        at = comma + 1;
      }
    }
    return out;
  }

  /// GPUs of `node` (allocatable nvidia.com/gpu), asked once. Caller holds mu_.
  int devices_of(const std::string& node) {
    if (auto it = devices_.find(node); it != devices_.end()) return it->second;
    const json n = rig_.get("/api/v1/nodes/" + node + kMark);
    int count = 0;
    if (n.is_object()) {
      const json allocatable = n["status"].value("allocatable", json::object());
      if (allocatable.contains("nvidia.com/gpu")) {
        const json& v = allocatable["nvidia.com/gpu"];
        count = v.is_string() ? std::stoi(v.get<std::string>()) : v.get<int>();
      }
    }
    return devices_[node] = count;
  }

  /// The pod as the API server shows it now. Caller holds mu_.
  void seen(const json& pod) {
    const std::string key = key_of(pod);
    const std::string uid = pod["metadata"].value("uid", "");
    const std::string node = pod["spec"].value("nodeName", "");
    const std::string phase = pod.contains("status") ? pod["status"].value("phase", "") : "";
    if ((held_.contains(key) && held_[key].uid != uid) || (fractions_.contains(key) && fractions_[key].uid != uid)) gone(key);
    if (phase == "Succeeded" || phase == "Failed") {
      gone(key);
      return;
    }
    if (node.empty() || held_.contains(key) || fractions_.contains(key)) return;  // pending, or started already
    const std::int64_t asked = gpus_requested(pod);
    const bool reservation = pod["metadata"].value("namespace", "") == options_.ns;
    if (asked > 0) {
      admit(key, uid, node, asked, reservation);
    } else if (auto devices = fraction_devices(pod); !devices.empty()) {
      start_fraction(key, uid, node, devices);
    }
  }

  void admit(const std::string& key, const std::string& uid, const std::string& node, std::int64_t asked, bool reservation) {
    std::set<std::string> taken;
    for (const auto& [_, h] : held_) {
      if (h.node == node) taken.insert(h.devices.begin(), h.devices.end());
    }
    Held h{uid, node, {}, reservation};
    for (int i = 0; i < devices_of(node) && static_cast<std::int64_t>(h.devices.size()) < asked; ++i) {
      const std::string uuid = fmt::format("GPU-{}-{}", node, i);
      if (!taken.contains(uuid)) h.devices.push_back(uuid);
    }
    if (static_cast<std::int64_t>(h.devices.size()) < asked) {
      violations_.push_back(fmt::format("the kubelet of {} refused {}: {} nvidia.com/gpu asked, {} free", node, key, asked, h.devices.size()));
      refusals_.push_back(key);
      return;
    }
    for (const auto& [other, f] : fractions_) {
      for (const auto& d : h.devices) {
        if (f.node == node && !reservation && std::find(f.devices.begin(), f.devices.end(), d) != f.devices.end()) {
          violations_.push_back(fmt::format("{} got {}, where fraction {} runs", key, d, other));
        }
      }
    }
    if (reservation) {
      const auto jitter = options_.start_jitter.count() > 0 ? std::uniform_int_distribution<std::int64_t>(0, options_.start_jitter.count())(random_) : 0;
      reports_.push_back({key, h.devices.front(), std::chrono::steady_clock::now() + options_.start_delay + std::chrono::milliseconds(jitter)});
    }
    held_[key] = std::move(h);
  }

  void start_fraction(const std::string& key, const std::string& uid, const std::string& node, const std::vector<std::string>& devices) {
    for (const auto& d : devices) {
      const bool reserved = std::any_of(held_.begin(), held_.end(), [&](const auto& h) {
        return h.second.reservation && h.second.node == node && std::find(h.second.devices.begin(), h.second.devices.end(), d) != h.second.devices.end();
      });
      if (!reserved) violations_.push_back(fmt::format("fraction {} started on {} of {}, which no reservation pod holds", key, d, node));
    }
    fractions_[key] = {uid, node, devices, false};
  }

  /// The pod is deleted, or finished. Caller holds mu_.
  void gone(const std::string& key) {
    fractions_.erase(key);
    auto it = held_.find(key);
    if (it == held_.end()) return;
    if (it->second.reservation) {
      for (const auto& [other, f] : fractions_) {
        if (f.node == it->second.node && std::find(f.devices.begin(), f.devices.end(), it->second.devices.front()) != f.devices.end()) {
          violations_.push_back(fmt::format("reservation pod {} went while fraction {} ran on its {}", key, other, it->second.devices.front()));
        }
      }
    }
    held_.erase(it);
    std::erase_if(reports_, [&](const Report& r) { return r.key == key; });
  }

  /// A list: the pods as they are (those not listed are gone).
  void listed(const json& items) {
    std::lock_guard lock(mu_);
    std::set<std::string> present;
    for (const auto& p : items) present.insert(key_of(p));
    std::vector<std::string> known;
    for (const auto& [key, _] : held_) known.push_back(key);
    for (const auto& [key, _] : fractions_) known.push_back(key);
    for (const auto& key : known) {
      if (!present.contains(key)) gone(key);
    }
    for (const auto& p : items) seen(p);
  }

  void watch_loop() {
    while (!stop_) {
      const json list = rig_.get(std::string("/api/v1/pods") + kMark);
      if (!list.is_object()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        continue;
      }
      listed(list["items"]);
      std::string version = list["metadata"].value("resourceVersion", "");
      bool expired = false;
      while (!stop_ && !expired) {
        httplib::Client c("127.0.0.1", rig_port());
        c.set_read_timeout(10, 0);
        std::string buffer;
        auto res = c.Get(fmt::format("/api/v1/pods?watch=1&allowWatchBookmarks=true&timeoutSeconds=5&resourceVersion={}&{}", version, kMark + 1),
                         [&](const char* data, std::size_t size) {
                           buffer.append(data, size);
                           for (auto nl = buffer.find('\n'); nl != std::string::npos; nl = buffer.find('\n')) {
                             const json event = json::parse(buffer.substr(0, nl), nullptr, false);
                             buffer.erase(0, nl + 1);
                             if (!event.is_object()) continue;
                             const std::string type = event.value("type", "");
                             const json& object = event["object"];
                             if (type == "ERROR") {
                               expired = true;
                               return false;
                             }
                             version = object["metadata"].value("resourceVersion", version);
                             if (type == "BOOKMARK") continue;
                             std::lock_guard lock(mu_);
                             if (type == "DELETED") {
                               gone(key_of(object));
                             } else {
                               seen(object);
                             }
                           }
                           return !stop_.load();
                         });
        if (!res && !stop_) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
  }

  void report_loop() {
    while (!stop_) {
      std::vector<Report> due;
      std::vector<std::string> refused;
      {
        std::lock_guard lock(mu_);
        const auto now = std::chrono::steady_clock::now();
        if (!paused_) {
          std::erase_if(reports_, [&](const Report& r) {
            if (r.due > now) return false;
            due.push_back(r);
            return true;
          });
        }
        refused.swap(refusals_);
      }
      for (const Report& r : due) {
        const auto slash = r.key.find('/');
        const json patch = {{"metadata", {{"annotations", {{"run.ai/reserve_for_gpu_index", r.uuid}}}}}};
        if (rig_.send("PATCH", fmt::format("/api/v1/namespaces/{}/pods/{}{}", r.key.substr(0, slash), r.key.substr(slash + 1), kMark), patch,
                      "application/merge-patch+json") == 200) {
          ++reported_;
        }
      }
      for (const auto& key : refused) {
        const auto slash = key.find('/');
        const json patch = {{"status", {{"phase", "Failed"}, {"reason", "UnexpectedAdmissionError"},
                                        {"message", "Allocate failed due to requested number of devices unavailable for nvidia.com/gpu"}}}};
        rig_.send("PATCH", fmt::format("/api/v1/namespaces/{}/pods/{}/status{}", key.substr(0, slash), key.substr(slash + 1), kMark), patch,
                  "application/merge-patch+json");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  [[nodiscard]] int rig_port() const {
    const std::string url = rig_.url();
    return std::stoi(url.substr(url.rfind(':') + 1));
  }

  /// On every request of the agent's, so that a test reading kube-rig's request log can tell
  /// them from fracpack's (kube-rig ignores the parameter).
  static constexpr const char* kMark = "?agent=device-agent";

  const KubeRig& rig_;
  Options options_;
  std::mt19937_64 random_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> paused_{false};
  std::atomic<int> reported_{0};
  mutable std::mutex mu_;
  std::map<std::string, int> devices_;          ///< node → GPUs
  std::map<std::string, Held> held_;            ///< admitted pods holding devices
  std::map<std::string, Held> fractions_;       ///< running fractions and their UUIDs
  std::vector<Report> reports_;                 ///< reservation pods to report, when due
  std::vector<std::string> refusals_;           ///< pods to mark Failed
  std::vector<std::string> violations_;
  std::thread watcher_;
  std::thread reporter_;
};

}  // namespace fracpack::test
