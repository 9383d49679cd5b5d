// The core's bindings in bind order with O(1) lookup and removal by pod key: the order is what a
// restart replays and what a snapshot lists; the lookup is what Bind and Release need at 10^5 pods.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "plugin_api/store.hpp"

namespace fracpack::api {

class BindingLog {
 public:
  void add(StoredBinding b) {
    erase(b.pod_key);
    seq_of_[b.pod_key] = next_;
    by_seq_.emplace(next_++, std::move(b));
  }
  [[nodiscard]] const StoredBinding* find(const std::string& pod_key) const {
    auto it = seq_of_.find(pod_key);
    return it == seq_of_.end() ? nullptr : &by_seq_.at(it->second);
  }
  bool erase(const std::string& pod_key) {
    auto it = seq_of_.find(pod_key);
    if (it == seq_of_.end()) return false;
    by_seq_.erase(it->second);
    seq_of_.erase(it);
    return true;
  }
  void assign(std::vector<StoredBinding> bindings) {
    by_seq_.clear();
    seq_of_.clear();
    for (auto& b : bindings) add(std::move(b));
  }
  /// In bind order.
  [[nodiscard]] std::vector<StoredBinding> list() const {
    std::vector<StoredBinding> out;
    out.reserve(by_seq_.size());
    for (const auto& [seq, b] : by_seq_) out.push_back(b);
    return out;
  }
  [[nodiscard]] std::size_t size() const { return by_seq_.size(); }
  [[nodiscard]] auto begin() const { return by_seq_.begin(); }
  [[nodiscard]] auto end() const { return by_seq_.end(); }

 private:
  std::uint64_t next_ = 0;
  std::map<std::uint64_t, StoredBinding> by_seq_;
  std::unordered_map<std::string, std::uint64_t> seq_of_;
};

}  // namespace fracpack::api
