// Filter verdicts and Prioritize keys remembered per pod shape and node, so that an extender asked
// about every node for every pod re-evaluates only the nodes whose usage changed since.
//
// kube-scheduler sends the extender every candidate node (5,000 names at percentageOfNodesToScore
// 100) for every pod, twice (Filter, then Prioritize). Between two pods of one shape (pod_shape():
// same request, resources and selector) only the nodes their binds and releases touched differ,
// so a verdict is reused while ClusterState::node_stamp() of its node is unchanged. The answers are
// filter_nodes()'s codes and categories and rank_nodes()'s order and scores, exactly
// (tests/binpack/verdict_cache_test.cpp checks that).
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fracpack/binpack/cluster_state.hpp"
#include "fracpack/binpack/node_ranking.hpp"
#include "fracpack/binpack/policy.hpp"
#include "fracpack/binpack/scheduler.hpp"

namespace fracpack {

class VerdictCache {
 public:
  /// One node's answer for one pod shape.
  struct Entry {
    std::uint64_t stamp = 0;    ///< node_stamp() it was computed at; 0 = never
    Code code = Code::kOk;      ///< filter_nodes()'s verdict code (its reasons are `categories`;
                                ///< formatting each node's numbers was most of a refresh; explain() has them)
    /// The reasons' categories, "; "-separated (kube-scheduler's FailedNodes); entries with the
    /// same categories share one string (Filter answers copy it to thousands of nodes).
    std::shared_ptr<const std::string> categories;
    std::optional<NodeKey> key; ///< rank_nodes()'s key before normalisation; nullopt = not ranked
    [[nodiscard]] bool fits() const { return code == Code::kOk; }
  };

  /// What the shapes may hold at most by default (their keys and entries, bytes()).
  static constexpr std::size_t kDefaultBytes = std::size_t{128} << 20;

  /// `shapes`: how many pod shapes to keep, and `max_bytes` how much they may hold (least recently
  /// used go first when either is reached). An entry is ~80 bytes per node: 128 shapes of 5,000
  /// nodes hold ~50 MiB; a shape that select() ranked over every node holds ~350 bytes per node
  /// more (its NodeRanking and the GPU choices of its keys, counted without their few indices). A shape's key holds the pod's selector and resource names, which a client
  /// can make megabytes long: the byte bound keeps a few of those, not 128. A workload with more
  /// shapes than this evaluates every node again for a shape it evicted (milliseconds at 5,000 nodes).
  explicit VerdictCache(std::size_t shapes = 128, std::size_t max_bytes = kDefaultBytes)
      : capacity_(shapes), max_bytes_(max_bytes) {}

  /// Calls `visit(node, entry)` for each of `nodes` in order, with entries refreshed where the
  /// node changed. The caller keeps `state` unchanged during the call (a shared lock on the
  /// ledger); concurrent calls serialise on the cache's own mutex. A template: it runs once per
  /// node of every Filter.
  template <class Visit>
  void visit(const ClusterState& state, const PodRequest& pod, const Policy& policy, const std::vector<std::size_t>& nodes,
             Visit&& visit) {
    std::optional<PodTraits> traits;  // computed on the first stale entry only
    visit_with(state, pod, policy, nodes, traits, std::forward<Visit>(visit));
  }

  /// rank_nodes(state, pod, policy, nodes) from the cached keys: normalised scores, best first.
  /// The GpuChoice of each RankedNode is left empty (Bind chooses the GPUs under its own lock).
  std::vector<RankedNode> rank(const ClusterState& state, const PodRequest& pod, const Policy& policy,
                               const std::vector<std::size_t>& nodes);

  /// The best of `nodes` for `pod` from the cached keys, with its GPUs chosen now: the smallest
  /// (tier, value), ties broken by the policy (Policy::break_tie, drawn only among the tied nodes,
  /// so a seeded policy draws the same numbers every run). nullopt when none fits; kInternal when
  /// a cached key's node yields no GPU choice (the cache and `state` disagree: a bug, never a
  /// "does not fit"). What an offline run (bench density) places with; select() without a cache
  /// gives the same node.
  Result<std::optional<RankedNode>> select(const ClusterState& state, const PodRequest& pod, const Policy& policy,
                                           const std::vector<std::size_t>& nodes);
  /// The same over every node, from the shape's NodeRanking: only the nodes whose stamp moved
  /// since the shape's last select are looked at (and of those, only the ones whose summary could
  /// fit the pod are evaluated); the best is read at the ranking's root, and its GPU choice is the
  /// one its evaluation made. What the queue replay and `bench density --dynamic` place with.
  /// `shape`: pod_shape(pod) when the caller keeps it (null: worked out here).
  Result<std::optional<RankedNode>> select(const ClusterState& state, const PodRequest& pod, const Policy& policy,
                                           const std::string* shape = nullptr);

  /// Evaluations done (entries computed) since construction: what the tests and benchmark watch.
  [[nodiscard]] std::uint64_t evaluations() const { return evaluations_; }
  /// The shapes' keys and entries, in bytes: at most max_bytes unless one shape alone is larger.
  [[nodiscard]] std::size_t bytes() const {
    std::lock_guard lock(mu_);
    return bytes_;
  }

 private:
  /// visit() with the pod's traits from the caller when known (else worked out on the first
  /// stale entry, and left in `traits`).
  template <class Visit>
  void visit_with(const ClusterState& state, const PodRequest& pod, const Policy& policy,
                  const std::vector<std::size_t>& nodes, std::optional<PodTraits>& traits, Visit&& visit) {
    std::lock_guard lock(mu_);
    Shape& shape = shape_for(state, pod, policy);
    for (std::size_t n : nodes) {
      Entry& e = shape.entries[n];
      if (e.stamp != state.node_stamp(n)) refresh(e, state, n, pod, policy, traits);
      visit(n, static_cast<const Entry&>(e));
    }
  }
  /// select()'s work over `nodes`, with the pod's traits (worked out here when not given).
  Result<std::optional<RankedNode>> select_among(const ClusterState& state, const PodRequest& pod, const Policy& policy,
                                                 const std::vector<std::size_t>& nodes, std::optional<PodTraits>& traits);

  /// select()'s over every node: the fitting nodes by key, and the GPU choice each key's
  /// evaluation made (empty when the entry was refreshed by visit(), which keeps none).
  struct Ranked {
    /// A node's GPU choice for the shape, valid while the node's stamp is `stamp` (0: none).
    struct Choice {
      std::uint64_t stamp = 0;
      GpuChoice choice;
    };
    NodeRanking ranking;
    std::vector<Choice> choices;  ///< by node position
  };
  struct Shape {
    const Policy* policy = nullptr;
    std::uint64_t traits_epoch = 0;  ///< ClusterState::traits_epoch() the entries were computed at
    std::vector<Entry> entries;      ///< by node position (a moved or added node has a new stamp)
    std::unique_ptr<Ranked> ranked;  ///< built by the first select() over every node
    std::size_t cost = 0;            ///< what it counts in bytes_
  };
  /// The shape's entries for `policy` at the state's traits epoch and node count; `key` is
  /// pod_shape(pod) when the caller has it.
  Shape& shape_for(const ClusterState& state, const PodRequest& pod, const Policy& policy, const std::string* key = nullptr);
  /// The shape's Ranked at the state's node count, brought up to its stamps.
  Ranked& ranked_for(Shape& shape, const ClusterState& state, const PodRequest& pod, const Policy& policy,
                     std::optional<PodTraits>& traits);
  /// The tied node a per-pod draw picks (Policy::Ties::kPerPod), with its drawn key.
  static std::pair<std::size_t, NodeKey> draw_among_ties(const Ranked& ranked, const ClusterState& state,
                                                         const PodRequest& pod, const Policy& policy);
  /// Counts `shape` (under `key`, the most recent) at its size now, and evicts the least recently
  /// used others while over either bound.
  void account(const std::string& key, Shape& shape);
  /// Recomputes one node's entry (verdict, categories, key) at its current stamp; the GPU choice
  /// of its key goes to `choice` when given.
  void refresh(Entry& e, const ClusterState& state, std::size_t n, const PodRequest& pod, const Policy& policy,
               std::optional<PodTraits>& traits, GpuChoice* choice = nullptr);

  std::size_t capacity_;
  std::size_t max_bytes_;
  std::size_t bytes_ = 0;
  mutable std::mutex mu_;
  std::list<std::string> lru_;  ///< most recent first
  std::unordered_map<std::string, std::pair<Shape, std::list<std::string>::iterator>> shapes_;
  std::uint64_t evaluations_ = 0;
  /// Each distinct categories text once (a few dozen combinations of a fixed set of categories).
  std::unordered_map<std::string, std::shared_ptr<const std::string>> categories_;
};

}  // namespace fracpack
