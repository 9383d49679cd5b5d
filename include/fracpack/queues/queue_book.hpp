// Per-queue accounting: what each queue holds, what it deserves, its fair share, and admission.
//
// Every amount is an `Amounts` (milli-GPU, milli-CPU, bytes). A leaf's usage counts in every
// ancestor. Admission follows KAI's capacity policy
// (pkg/scheduler/plugins/proportion/capacity_policy/): first the limits of the job's queue and
// every ancestor, then (non-preemptible jobs only) their quotas,
//   OverLimit                 allocated + request > limit            (limit -1: no check)
//   NonPreemptibleOverQuota   non-preemptible allocated + request > deserved  (quota -1: no check)
// each checked only for resources the job asks for, so the reason names the first change that
// would really let the job in.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "fracpack/queues/queue_tree.hpp"

namespace fracpack::queues {

/// Why a job is refused before placement.
struct Refusal {
  std::string reason;   ///< "OverLimit" or "NonPreemptibleOverQuota" (KAI's v2alpha2 reasons)
  std::string queue;    ///< the queue whose term is exceeded (the job's queue or an ancestor)
  std::string message;  ///< names the queue, the resource, the numbers and what to change
};

class QueueBook {
 public:
  explicit QueueBook(const QueueTree& tree);

  [[nodiscard]] const QueueTree& tree() const { return *tree_; }
  [[nodiscard]] const Amounts& allocated(std::size_t q) const { return allocated_[q]; }
  [[nodiscard]] const Amounts& allocated_non_preemptible(std::size_t q) const { return non_preemptible_[q]; }
  [[nodiscard]] const Amounts& fair_share(std::size_t q) const { return fair_share_[q]; }
  /// What the last compute_fair_shares() divided (the cluster's allocatable).
  [[nodiscard]] const Amounts& total() const { return total_; }
  /// The quota per resource, kUnlimited for -1.
  [[nodiscard]] Amounts deserved(std::size_t q) const;

  /// Adds (or, with `sign` -1, removes) a job's charge to leaf `q` and every ancestor.
  void charge(std::size_t q, const Amounts& amount, bool preemptible, int sign = 1);

  /// Sets one queue's figures as given, without summing leaves into ancestors: for checking rules
  /// on figures written out by hand, as KAI's unit tests do (tests/queues/kai_reclaimable_test.cpp).
  void set_figures(std::size_t q, const Amounts& allocated, const Amounts& non_preemptible, const Amounts& fair_share);

  /// Recomputes every queue's fair share for `total` (the cluster's allocatable) given what each
  /// leaf requests (held plus pending), top-down: top-level queues divide `total`, each parent's
  /// fair share is divided among its children (fair_share.hpp). O(queues · log).
  void compute_fair_shares(const Amounts& total, const std::vector<Amounts>& leaf_requests);

  /// Admission of a job asking `request` in leaf queue `q`. O(depth), no allocation when admitted.
  [[nodiscard]] std::optional<Refusal> admit(std::size_t q, const Amounts& request, bool preemptible) const;
  /// admit() without building the refusal: true when the job would be admitted.
  [[nodiscard]] bool admits(std::size_t q, const Amounts& request, bool preemptible) const {
    return !first_exceeded(q, request, preemptible);
  }
  /// True when admit() refuses no job of leaf `q` (of that preemptibility), however much the queues
  /// hold: no limit on `q` or an ancestor, and for a non-preemptible job no quota either (the two
  /// terms of KAI's capacity policy above).
  [[nodiscard]] bool never_refuses(std::size_t q, bool preemptible) const;
  /// Whether a non-preemptible job asking `request` stays within the quota of `q` and every
  /// ancestor (the NonPreemptibleOverQuota half of admit()). Evicting preemptible pods never
  /// changes this answer.
  [[nodiscard]] bool non_preemptible_fits(std::size_t q, const Amounts& request) const;
  /// Off: refusals carry reason and queue but an empty message (replays that never show them skip
  /// formatting thousands of messages per cycle). On by default.
  void set_refusal_messages(bool on) { refusal_messages_ = on; }

  /// True when `q` holds more than its fair share of every resource (KAI's
  /// FairShareLessThanAllocated: the strict all-resource comparison its queue order uses).
  [[nodiscard]] bool over_fair_share(std::size_t q) const;
  /// True when allocated + `extra` ≤ fair share for every resource (KAI's LessEqual on shares).
  [[nodiscard]] bool within_fair_share(std::size_t q, const Amounts& extra) const;
  /// True when allocated + `extra` ≤ deserved for every resource (quota -1: always).
  [[nodiscard]] bool within_quota(std::size_t q, const Amounts& extra) const;
  /// What the queue may hold without reclaim (KAI GetAllocatableShare): max(deserved, fair share)
  /// capped by the limit; the limit itself for an unlimited quota (kUnlimited for none).
  [[nodiscard]] std::int64_t allocatable(std::size_t q, Resource r) const;

 private:
  struct Exceeded {
    std::size_t queue;  ///< where the term is exceeded: q or an ancestor
    Resource resource;
    bool limit;         ///< true: the limit; false: the quota (non-preemptible jobs)
  };
  [[nodiscard]] std::optional<Exceeded> first_exceeded(std::size_t q, const Amounts& request, bool preemptible) const;

  const QueueTree* tree_;
  std::vector<std::optional<std::size_t>> parent_;  ///< cached from the tree: admission walks it
  std::vector<Amounts> allocated_;
  std::vector<Amounts> non_preemptible_;
  std::vector<Amounts> fair_share_;
  Amounts total_;
  bool refusal_messages_ = true;
};

}  // namespace fracpack::queues
