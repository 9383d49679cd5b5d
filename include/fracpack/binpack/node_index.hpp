// A tournament tree over node summaries: finds the best node for a pod without visiting every
// node. Each tree node keeps the SummaryRange of its subtree; a search is best-first branch and
// bound: a subtree is skipped when the pod cannot fit its `hi`, or when the policy's lower bound for
// it is no better than the best node found so far. Updates are O(log n).
#pragma once

#include <cstdint>
#include <optional>
#include <queue>
#include <utility>
#include <vector>

#include "fracpack/binpack/node_summary.hpp"

namespace fracpack {

class NodeIndex {
 public:
  NodeIndex() = default;
  explicit NodeIndex(const std::vector<NodeSummary>& leaves);

  [[nodiscard]] std::size_t size() const { return size_; }
  [[nodiscard]] const NodeSummary& leaf(std::size_t i) const { return ranges_[base_ + i].lo; }
  void update(std::size_t i, const NodeSummary& summary);
  /// Appends leaf size(): O(log n), amortised (the tree doubles when full).
  void push_back(const NodeSummary& summary);
  /// Drops the last leaf: O(log n).
  void pop_back();

  /// Calls visit(i) for every leaf i, in order, whose ranges from the root down all pass
  /// open(const SummaryRange&) (a pruning test: false when no node of the range can qualify).
  template <class Open, class Visit>
  void visit_leaves(Open&& open, Visit&& visit) const {
    if (size_ == 0) return;
    std::vector<std::size_t> stack{1};
    while (!stack.empty()) {
      const std::size_t k = stack.back();
      stack.pop_back();
      if (count_[k] == 0 || !open(ranges_[k])) continue;
      if (k >= base_) {
        visit(k - base_);
        continue;
      }
      stack.push_back(2 * k + 1);
      stack.push_back(2 * k);
    }
  }

  /// Best-first search.
  ///   bound(const SummaryRange&) -> std::optional<NodeKey>: nullopt when no node of the range can
  ///     fit, else a key ≤ the exact key of every node in the range.
  ///   evaluate(std::size_t node) -> std::optional<NodeKey>: the node's exact key, nullopt when the
  ///     pod does not fit it.
  /// Returns the node with the smallest exact key, or nullopt.
  template <class Bound, class Evaluate>
  std::optional<std::pair<NodeKey, std::size_t>> search(Bound&& bound, Evaluate&& evaluate) const {
    std::optional<std::pair<NodeKey, std::size_t>> best;
    if (size_ == 0) return best;
    using Item = std::pair<NodeKey, std::size_t>;
    auto later = [](const Item& a, const Item& b) { return b.first < a.first; };
    std::vector<Item> storage;
    storage.reserve(64);
    std::priority_queue<Item, std::vector<Item>, decltype(later)> open(later, std::move(storage));
    if (auto lb = bound(ranges_[1])) open.emplace(*lb, 1);
    while (!open.empty()) {
      auto [lb, k] = open.top();
      open.pop();
      if (best && !(lb < best->first)) break;
      if (k >= base_) {
        if (auto key = evaluate(k - base_); key && (!best || *key < best->first)) best.emplace(*key, k - base_);
        continue;
      }
      for (std::size_t child : {2 * k, 2 * k + 1}) {
        if (count_[child] == 0) continue;
        if (auto clb = bound(ranges_[child]); clb && (!best || *clb < best->first)) open.emplace(*clb, child);
      }
    }
    return best;
  }

 private:
  std::size_t size_ = 0;
  std::size_t base_ = 1;  ///< first leaf's slot (a power of two)
  std::vector<SummaryRange> ranges_;
  std::vector<std::uint32_t> count_;  ///< real leaves under each slot
  /// Recomputes the ranges on the path from leaf slot `k` to the root.
  void update_path(std::size_t k);
};

}  // namespace fracpack
