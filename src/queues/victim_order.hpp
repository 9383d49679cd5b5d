// KAI's victim order (actions/utils/job_order_by_queue.go with VictimQueue set): candidates are
// handed out one at a time. From the top of the queue tree down, at each level the queue KAI's
// queue order would serve last gives first, each queue judged on its own figures with the victims
// of its subtree's chosen leaf (those already given and the next); in the leaf, the job KAI would
// run last. Internal to the reclaim search (reclaim.hpp states the order).
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "fracpack/binpack/cluster_state.hpp"
#include "fracpack/queues/queue_book.hpp"

namespace fracpack::queues {

/// What may be evicted at once: one running pod, or a gang's core (its members up to its minimum).
struct Candidate {
  std::vector<Allocation> pods;
  std::optional<std::size_t> queue;  ///< its leaf queue; nullopt: a queue the tree does not know
  Amounts give_back;                 ///< what its queue is charged for its pods
  std::int32_t priority = 0;
  std::string job;                   ///< its gang's key, or its pod's
  std::optional<std::int64_t> job_started;  ///< the earliest start of its job's running pods
  std::optional<std::int64_t> started;      ///< the latest start of its own pods
  bool core = true;                  ///< false: a gang member above the minimum
  /// A member above the minimum of a gang with sub-groups: its leaf (VictimJob::sub_group), that
  /// leaf's minMember and running pods; -1 otherwise.
  int sub_group = -1;
  int sub_group_min = 0;
  int sub_group_running = 0;
};

class VictimOrder {
 public:
  /// `candidates` are kept; `book` must outlive the order. Candidates of an unknown queue are one
  /// more group, handed out after every known one.
  VictimOrder(const QueueBook& book, std::vector<Candidate> candidates);

  [[nodiscard]] bool empty() const { return left_ == 0; }
  /// The next candidate (its position in candidates()). O(queues with candidates · depth).
  std::size_t pop();
  [[nodiscard]] const std::vector<Candidate>& candidates() const { return candidates_; }

 private:
  struct Leaf {
    std::vector<std::size_t> members;  ///< candidate positions, the first to go first
    std::size_t next = 0;
    Amounts given;                     ///< what its popped members give back
  };
  /// The leaf the order descends to under `q` (q itself for a leaf); memo_ holds this pop's answers.
  std::size_t chosen_leaf(std::size_t q);
  /// True when queue `a` gives before its sibling `b` (KAI's queue order, reversed).
  bool gives_first(std::size_t a, std::size_t b);
  /// Allocated less the victims of `leaf` (given and the next), as queue `q` counts them.
  [[nodiscard]] Amounts after_victims(std::size_t q, std::size_t leaf) const;
  [[nodiscard]] std::vector<std::size_t> active_among(const std::vector<std::size_t>& queues) const;

  const QueueBook& book_;
  std::vector<Candidate> candidates_;
  std::vector<std::optional<Leaf>> leaves_;  ///< per queue of the tree
  std::vector<std::size_t> waiting_;         ///< per queue: candidates left in its subtree
  Leaf unknown_;                             ///< candidates of queues the tree does not know
  std::vector<std::optional<std::size_t>> memo_;
  std::size_t left_ = 0;
};

}  // namespace fracpack::queues
