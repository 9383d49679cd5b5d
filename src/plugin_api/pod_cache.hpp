// Parsed pods by their exact bytes. A scheduler sends the same pod to Filter and then Prioritize
// (and Preempt); parsing a full v1 Pod of a few KB is most of what those calls cost the server
// when they carry no node names, so the second parse is skipped. Thread-safe, bounded in bytes
// (least recently used go first): a count bound let a client sending large distinct pods (7 MB
// each) hold 256 of them, gigabytes. Internal to src/plugin_api/.
#pragma once

#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "fracpack/core/status.hpp"
#include "plugin_api/json_bytes.hpp"
#include "plugin_api/json_object.hpp"

namespace fracpack::api {

class PodCache {
 public:
  /// What the cache holds at most by default: hundreds of ordinary pods, a few large ones.
  static constexpr std::size_t kDefaultBytes = std::size_t{64} << 20;

  /// `max_bytes`: the budget for the request bytes kept as keys plus approx_bytes() of each parsed
  /// pod. A pod larger than the whole budget is parsed and not kept.
  explicit PodCache(std::size_t max_bytes = kDefaultBytes) : max_bytes_(max_bytes) {}

  /// parse_object(bytes, field), remembered.
  Result<std::shared_ptr<const nlohmann::json>> parse(const std::string& bytes, const std::string& field) {
    if (auto hit = find(bytes)) return hit;
    auto parsed = parse_object(bytes, field);
    if (!parsed) return parsed.status();
    const std::size_t cost = bytes.size() + approx_bytes(*parsed);
    auto shared = std::make_shared<const nlohmann::json>(std::move(*parsed));
    if (cost <= max_bytes_) keep(bytes, shared, cost);
    return shared;
  }

  /// Bytes held now (keys and parsed pods, as counted against the budget).
  [[nodiscard]] std::size_t bytes() const {
    std::lock_guard lock(mu_);
    return bytes_;
  }
  /// Pods held now.
  [[nodiscard]] std::size_t size() const {
    std::lock_guard lock(mu_);
    return by_bytes_.size();
  }

 private:
  using Order = std::list<const std::string*>;  ///< keys of by_bytes_, most recent first
  struct Entry {
    std::shared_ptr<const nlohmann::json> pod;
    Order::iterator place;
    std::size_t cost = 0;
  };

  std::shared_ptr<const nlohmann::json> find(const std::string& bytes) {
    std::lock_guard lock(mu_);
    auto it = by_bytes_.find(bytes);
    if (it == by_bytes_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second.place);
    return it->second.pod;
  }

  void keep(const std::string& bytes, const std::shared_ptr<const nlohmann::json>& pod, std::size_t cost) {
    std::lock_guard lock(mu_);
    auto [it, fresh] = by_bytes_.try_emplace(bytes, Entry{pod, order_.end(), cost});
    if (!fresh) return;  // another call parsed the same bytes meanwhile
    order_.push_front(&it->first);  // the map's own key: node-based, so its address is stable
    it->second.place = order_.begin();
    bytes_ += cost;
    while (bytes_ > max_bytes_) {
      auto oldest = by_bytes_.find(*order_.back());  // by iterator: the key lives in the node
      bytes_ -= oldest->second.cost;
      by_bytes_.erase(oldest);
      order_.pop_back();
    }
  }

  std::size_t max_bytes_;
  mutable std::mutex mu_;
  std::size_t bytes_ = 0;
  Order order_;
  std::unordered_map<std::string, Entry> by_bytes_;
};

}  // namespace fracpack::api
