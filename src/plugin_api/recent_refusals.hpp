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
  /// `keep`: how long a refusal is remembered (the longest window recent() is asked for). `capacity`:
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
  /// The pods refused within `within` before `now`, newest first (the likeliest to have raced
  /// the change that freed room). They stay remembered until forget(): a pod that does not fit
  /// now may after the next change. Refusals older than `keep` are dropped.
  std::vector<std::string> recent(Clock::time_point now, std::chrono::milliseconds within) {
    std::lock_guard lock(mu_);
    std::vector<std::pair<Clock::time_point, std::string>> found;
    for (auto it = last_.begin(); it != last_.end();) {
      if (it->second < now - keep_) {
        it = last_.erase(it);
      } else {
        if (it->second >= now - within) found.emplace_back(it->second, it->first);
        ++it;
      }
    }
    std::sort(found.begin(), found.end(), [](const auto& x, const auto& y) { return x.first != y.first ? x.first > y.first : x.second < y.second; });
    std::vector<std::string> out;
    out.reserve(found.size());
    for (auto& [_, pod] : found) out.push_back(std::move(pod));
    return out;
  }
  /// The pod was asked for again, or no longer waits: a new refusal records it again.
  void forget(const std::string& pod) {
    std::lock_guard lock(mu_);
    last_.erase(pod);
  }

 private:
  std::chrono::milliseconds keep_;
  std::size_t capacity_;
  std::mutex mu_;
  std::unordered_map<std::string, Clock::time_point> last_;
};

}  // namespace fracpack::api
