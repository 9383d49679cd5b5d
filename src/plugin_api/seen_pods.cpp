#include "plugin_api/seen_pods.hpp"

#include "plugin_api/json_bytes.hpp"

namespace fracpack::api {

using nlohmann::json;

std::vector<std::string> SeenPods::remember(const PodRequest& pod, const json& object) {
  std::vector<std::string> dropped;
  std::lock_guard lock(mu_);
  const std::string key = pod.key();
  auto found = pods_.find(key);
  // Filter then Prioritize send the same pod: keep the copy already held (a deep compare is
  // cheaper than a deep copy).
  if (found != pods_.end() && found->second.pod.uid == pod.uid && found->second.object == object) return dropped;
  const std::size_t bytes = approx_bytes(object);
  if (found != pods_.end()) {
    bytes_ -= found->second.bytes;
    found->second = Known{pod, object, bytes, found->second.seq};  // keeps its place in the order
  } else {
    pods_.emplace(key, Known{pod, object, bytes, ++seq_});
    order_.emplace_back(key, seq_);
  }
  bytes_ += bytes;
  // An order entry whose sequence number no longer matches belongs to a pod forgotten since
  // (bound, or released): dropping it must not drop the pod's newer copy.
  while (order_.size() > 1 && (order_.size() > max_pods_ || bytes_ > max_bytes_)) {
    const auto& [oldest, seq] = order_.front();
    if (auto old = pods_.find(oldest); old != pods_.end() && old->second.seq == seq) {
      bytes_ -= old->second.bytes;
      dropped.push_back(oldest);
      pods_.erase(old);
    }
    order_.pop_front();
  }
  return dropped;
}

bool SeenPods::forget(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = pods_.find(key);
  if (it == pods_.end()) return false;
  bytes_ -= it->second.bytes;
  pods_.erase(it);  // its order entry goes stale: it no longer matches any sequence number
  return true;
}

std::optional<SeenPods::Seen> SeenPods::find(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = pods_.find(key);
  if (it == pods_.end()) return std::nullopt;
  return Seen{it->second.pod, it->second.object};
}

std::size_t SeenPods::size() const {
  std::lock_guard lock(mu_);
  return pods_.size();
}

std::size_t SeenPods::bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

}  // namespace fracpack::api
