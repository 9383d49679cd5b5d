// Node names → ledger positions, remembering the last few candidate lists.
//
// kube-scheduler sends the same candidate list (often every node, in the same order) with every
// Filter, and Filter's answer with every Prioritize. At 5,000 nodes, hashing 5,000 names per call
// was the largest per-node cost left in the extender core. A list equal to a remembered one
// (compared name by name, which is cheaper than hashing and stops at the first difference) reuses
// its positions, and so does a list that is a subsequence of a remembered one (Prioritize's
// nodes are those Filter passed, in Filter's order). Thread-safe.
#pragma once

#include <cstdint>
#include <algorithm>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string_view>
#include <string>
#include <vector>

#include "fracpack/binpack/cluster_state.hpp"

namespace fracpack::api {

class NameResolver {
 public:
  using Positions = std::vector<std::optional<std::size_t>>;

  /// (*positions)[i]: the node named names[i] in `state`, or nullopt when `state` does not know
  /// it. Shared with the remembered list, not copied.
  std::shared_ptr<const Positions> resolve(const ClusterState& state, std::span<const std::string_view> names) {
    {
      std::lock_guard lock(mu_);
      for (auto it = lists_.begin(); it != lists_.end(); ++it) {
        if (it->generation != state.generation() || !std::equal(it->names.begin(), it->names.end(), names.begin(), names.end())) continue;
        auto positions = it->positions;
        if (it != lists_.begin()) lists_.splice(lists_.begin(), lists_, it);  // most recently used first
        return positions;
      }
      // Prioritize gets the nodes Filter passed: a subsequence of a list Filter resolved.
      for (const auto& list : lists_) {
        if (list.generation != state.generation()) continue;
        if (auto positions = subsequence(list, names)) return positions;
      }
    }
    auto positions = std::make_shared<Positions>(names.size());
    for (std::size_t i = 0; i < names.size(); ++i) (*positions)[i] = state.find_node(names[i]);
    std::lock_guard lock(mu_);
    lists_.push_front(List{state.generation(), {names.begin(), names.end()}, positions});
    if (lists_.size() > kLists) lists_.pop_back();
    return positions;
  }

 private:
  static constexpr std::size_t kLists = 4;
  struct List {
    std::uint64_t generation;
    std::vector<std::string> names;
    std::shared_ptr<const Positions> positions;
  };
  /// Positions of `names` when they appear in `list` in the same order (one pass of string
  /// compares, cheaper than hashing each name); nullptr otherwise.
  static std::shared_ptr<const Positions> subsequence(const List& list, std::span<const std::string_view> names) {
    auto positions = std::make_shared<Positions>(names.size());
    std::size_t j = 0;
    for (std::size_t i = 0; i < list.names.size() && j < names.size(); ++i) {
      if (list.names.size() - i < names.size() - j) return nullptr;
      if (list.names[i] == names[j]) (*positions)[j++] = (*list.positions)[i];
    }
    return j == names.size() ? positions : nullptr;
  }

  std::mutex mu_;
  std::list<List> lists_;  ///< most recently used first
};

}  // namespace fracpack::api
