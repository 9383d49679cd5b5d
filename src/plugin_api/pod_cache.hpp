// Parsed pods by their exact bytes. A scheduler sends the same pod to Filter and then Prioritize
// (and Preempt); parsing a full v1 Pod of a few KB is most of what those calls cost the server
// when they carry no node names, so the second parse is skipped. Thread-safe, bounded (LRU).
#pragma once

#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "fracpack/status.hpp"
#include "plugin_api/grpc_convert.hpp"

namespace fracpack::api {

class PodCache {
 public:
  explicit PodCache(std::size_t capacity = 256) : capacity_(capacity) {}

  /// parse_object(bytes, field), remembered.
  Result<std::shared_ptr<const nlohmann::json>> parse(const std::string& bytes, const std::string& field) {
    {
      std::lock_guard lock(mu_);
      if (auto it = by_bytes_.find(bytes); it != by_bytes_.end()) {
        order_.splice(order_.begin(), order_, it->second.second);
        return it->second.first;
      }
    }
    auto parsed = parse_object(bytes, field);
    if (!parsed) return parsed.status();
    auto shared = std::make_shared<const nlohmann::json>(std::move(*parsed));
    std::lock_guard lock(mu_);
    auto [it, fresh] = by_bytes_.try_emplace(bytes, shared, order_.end());
    if (fresh) {
      order_.push_front(&it->first);  // the map's own key: node-based, so its address is stable
      it->second.second = order_.begin();
      if (by_bytes_.size() > capacity_) {
        by_bytes_.erase(by_bytes_.find(*order_.back()));  // by iterator: the key lives in the node
        order_.pop_back();
      }
    }
    return shared;
  }

 private:
  std::size_t capacity_;
  std::mutex mu_;
  std::list<const std::string*> order_;  ///< keys of by_bytes_, most recent first
  std::unordered_map<std::string, std::pair<std::shared_ptr<const nlohmann::json>, std::list<const std::string*>::iterator>>
      by_bytes_;
};

}  // namespace fracpack::api
