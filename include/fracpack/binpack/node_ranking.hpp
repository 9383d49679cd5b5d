// The nodes that fit one pod shape, ordered by their keys: what VerdictCache::select() picks from
// without looking at every candidate node.
//
// A min tree (a segment tree) over node positions: each leaf holds the node's NodeKey when the
// shape fits it, and the node stamp (ClusterState::node_stamp()) that key was worked out at. A
// select first re-keys the nodes whose stamp moved since (sync(): the stamps compared a block at a
// time, so a cluster of 5,000 nodes with a handful changed costs a few microseconds), then reads
// the best node at the root: O(changed · log nodes) instead of a visit to every node that could
// fit. Among equal keys the lowest position wins, as in a walk in node order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "fracpack/binpack/node_summary.hpp"

namespace fracpack {

class NodeRanking {
 public:
  /// `nodes` leaves, none fitting, none synced (the next sync() reports every node).
  void reset(std::size_t nodes);
  [[nodiscard]] std::size_t size() const { return synced_.size(); }

  /// Calls changed(n), in node order, for each node whose stamp in `stamps` differs from the one
  /// its leaf was last synced at, and records the new stamp once it returns (a call that throws
  /// leaves the node to the next sync). `stamps` has size() entries (ClusterState::node_stamps();
  /// anything else is a caller's bug and asks nothing). changed(n) calls set() or clear().
  template <class Changed>
  void sync(const std::vector<std::uint64_t>& stamps, Changed&& changed) {
    constexpr std::size_t kBlock = 64;
    const std::size_t n = synced_.size();
    if (stamps.size() != n) return;
    for (std::size_t b = 0; b < n; b += kBlock) {
      const std::size_t len = n - b < kBlock ? n - b : kBlock;
      if (std::memcmp(&synced_[b], &stamps[b], len * sizeof(std::uint64_t)) == 0) continue;
      for (std::size_t i = b; i < b + len; ++i) {
        if (synced_[i] == stamps[i]) continue;
        changed(i);
        synced_[i] = stamps[i];
      }
    }
  }

  /// Node `n` fits, with `key`.
  void set(std::size_t n, const NodeKey& key);
  /// Node `n` does not fit.
  void clear(std::size_t n);

  /// The fitting node with the smallest key (the lowest position among equal keys); nullopt when
  /// none fits.
  [[nodiscard]] std::optional<std::size_t> best() const;
  /// The key node `n` was set with (meaningful while it fits).
  [[nodiscard]] const NodeKey& key(std::size_t n) const { return slots_[base_ + n].key; }

  /// Calls visit(n, key) for each fitting node whose (tier, value) equals the best node's, in node
  /// order: the nodes a per-pod tie-break draws among (Policy::Ties::kPerPod).
  template <class Visit>
  void ties(Visit&& visit) const {
    if (slots_.size() < 2 || !slots_[1].fits) return;
    const NodeKey& best = slots_[1].key;
    std::vector<std::size_t> stack{1};
    while (!stack.empty()) {
      const std::size_t k = stack.back();
      stack.pop_back();
      const Slot& s = slots_[k];
      if (!s.fits || s.key.tier != best.tier || s.key.value != best.value) continue;  // the subtree's minimum is worse
      if (k >= base_) {
        visit(k - base_, s.key);
        continue;
      }
      stack.push_back(2 * k + 1);
      stack.push_back(2 * k);
    }
  }

  /// Heap bytes held (what VerdictCache counts against its bound).
  [[nodiscard]] std::size_t bytes() const {
    return synced_.capacity() * sizeof(std::uint64_t) + slots_.capacity() * sizeof(Slot) + fits_.capacity();
  }

 private:
  /// A tree node: the smallest fitting key of its subtree and the node it belongs to.
  struct Slot {
    NodeKey key;
    std::uint32_t node = 0;
    bool fits = false;
  };
  static bool before(const Slot& a, const Slot& b);
  void update_path(std::size_t leaf);

  std::vector<std::uint64_t> synced_;  ///< per node: the stamp its leaf was synced at
  std::vector<Slot> slots_;            ///< 1-based heap order; leaves at base_ + node
  std::vector<char> fits_;             ///< per node: its leaf fits (clear() reads one byte, not a slot)
  std::size_t base_ = 0;
};

}  // namespace fracpack
