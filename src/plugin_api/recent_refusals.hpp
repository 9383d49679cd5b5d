// Pods whose Filter found no node, and when. kube-scheduler and fracpack watch the same API
// server, and kube-scheduler may act first: a pod deleted moves the waiting pods back to its
// active queue, and their Filter can reach fracpack before fracpack's watch applied the deletion.
// Refused then, such a pod would sit in kube-scheduler's unschedulable queue until the next
// cluster event or for 60 s, while room is free. So when the watch frees room (a pod released,
// a node added or changed), the pods refused within a short window before are asked for again
// (ExtenderImpl::retry_refused); after a Queue edit, which kube-scheduler does not watch, those
// refused within kQueueRetryWindow. Only pods that would now be admitted and fit are asked for.
// Internal to src/plugin_api/.
#pragma once

#include <algorithm>
#include <chrono>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace fracpack::api {

/// How far back refusals are retried after a Queue edit or the first full list: kube-scheduler
/// retries every pod it set aside after at most 5 minutes (podMaxInUnschedulablePodsDuration;
/// 60 s in v1.20), so older ones come back without us.
inline constexpr std::chrono::milliseconds kQueueRetryWindow{300'000};

class RecentRefusals {
 public:
  using Clock = std::chrono::steady_clock;
  /// `keep`: how long a refusal is remembered (the longest window take() is asked for). `capacity`:
  /// most pods remembered (beyond it the oldest refusal is forgotten).
  explicit RecentRefusals(std::chrono::milliseconds keep, std::size_t capacity = 4096) : keep_(keep), capacity_(capacity) {}

  /// Filter found no node for `pod` at `now`. Thread-safe (Filters run concurrently).
  void refused(const std::string& pod, Clock::time_point now) {
    std::lock_guard lock(mu_);
    if (last_.size() >= capacity_ && !last_.contains(pod)) {
      std::erase_if(last_, [&](const auto& e) { return e.second < now - keep_; });
      if (last_.size() >= capacity_) {
        last_.erase(std::min_element(last_.begin(), last_.end(), [](const auto& a, const auto& b) { return a.second < b.second; }));
      }
    }
    last_[pod] = now;
  }
  /// The pods refused within `within` before `now`, oldest first, at most `most`; they are
  /// forgotten (a pod refused again is recorded again). Refusals older than `keep` are dropped.
  std::vector<std::string> take(Clock::time_point now, std::chrono::milliseconds within, std::size_t most) {
    std::lock_guard lock(mu_);
    std::vector<std::pair<Clock::time_point, std::string>> recent;
    for (auto it = last_.begin(); it != last_.end();) {
      if (it->second < now - keep_) {
        it = last_.erase(it);
      } else {
        if (it->second >= now - within) recent.emplace_back(it->second, it->first);
        ++it;
      }
    }
    std::sort(recent.begin(), recent.end());
    if (recent.size() > most) recent.resize(most);
    std::vector<std::string> out;
    out.reserve(recent.size());
    for (auto& [_, pod] : recent) {
      last_.erase(pod);
      out.push_back(std::move(pod));
    }
    return out;
  }

 private:
  std::chrono::milliseconds keep_;
  std::size_t capacity_;
  std::mutex mu_;
  std::unordered_map<std::string, Clock::time_point> last_;
};

}  // namespace fracpack::api
