// Pods seen by Filter or Prioritize and not yet bound, kept for Bind: kube-scheduler's Bind names
// only the pod, so its requests come from the Filter that preceded it. Bounded by count and by
// bytes (a client sending huge distinct pods must not exhaust memory); the oldest go first, and a
// pod dropped must go through Filter again. Thread-safe. Internal to src/plugin_api/.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "fracpack/core/request.hpp"

namespace fracpack::api {

class SeenPods {
 public:
  struct Seen {
    PodRequest pod;
    nlohmann::json object;
  };
  SeenPods(std::size_t max_pods, std::size_t max_bytes) : max_pods_(max_pods), max_bytes_(max_bytes) {}

  /// Keeps `pod` (decoded from `object`) under its key, replacing an older copy. Returns the keys
  /// of pods dropped to stay within the bounds.
  std::vector<std::string> remember(const PodRequest& pod, const nlohmann::json& object);
  /// Drops `key`; true when it was kept.
  bool forget(const std::string& key);
  /// The pod kept under `key`, if any.
  [[nodiscard]] std::optional<Seen> find(const std::string& key) const;
  [[nodiscard]] std::size_t size() const;
  /// approx_bytes() of the pods kept: at most max_bytes, unless the one pod kept is larger.
  [[nodiscard]] std::size_t bytes() const;

 private:
  struct Known {
    PodRequest pod;
    nlohmann::json object;
    std::size_t bytes = 0;  ///< approx_bytes(object)
    std::uint64_t seq = 0;  ///< when it was remembered; its entry in order_ carries the same
  };
  std::size_t max_pods_;
  std::size_t max_bytes_;
  mutable std::mutex mu_;
  std::size_t bytes_ = 0;
  std::map<std::string, Known> pods_;
  std::deque<std::pair<std::string, std::uint64_t>> order_;  ///< (pod key, Known::seq), oldest first
  std::uint64_t seq_ = 0;
};

}  // namespace fracpack::api
