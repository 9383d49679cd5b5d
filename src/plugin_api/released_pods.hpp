// Pods this server released, remembered so that a Release retried (its answer lost, or sent twice)
// is answered OK like the first, while a Release of a name never bound here is still NOT_FOUND.
// Bounded: the newest kReleasedRemembered keys (each the key of a pod that was bound, so at most
// 317 characters: ~5 MiB in all). Not thread-safe: the extender core's lock guards it. Internal
// to src/plugin_api/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <utility>

namespace fracpack::api {

class ReleasedPods {
 public:
  static constexpr std::size_t kReleasedRemembered = 16'384;

  /// `pod_key` was released (or its binding dropped with its node, or by a Sync).
  void add(const std::string& pod_key) {
    if (!keys_.try_emplace(pod_key, ++seq_).second) return;
    order_.emplace_back(pod_key, seq_);
    while (keys_.size() > kReleasedRemembered || order_.size() > 2 * kReleasedRemembered) {
      // An entry whose number no longer matches is of a key erased (or erased and added) since.
      if (auto it = keys_.find(order_.front().first); it != keys_.end() && it->second == order_.front().second) keys_.erase(it);
      order_.pop_front();
    }
  }
  /// `pod_key` is bound again: a later Release is of the new binding.
  void erase(const std::string& pod_key) { keys_.erase(pod_key); }
  [[nodiscard]] bool contains(const std::string& pod_key) const { return keys_.contains(pod_key); }

 private:
  std::unordered_map<std::string, std::uint64_t> keys_;      ///< key → when it was added
  std::deque<std::pair<std::string, std::uint64_t>> order_;  ///< (key, number) oldest first
  std::uint64_t seq_ = 0;
};

}  // namespace fracpack::api
