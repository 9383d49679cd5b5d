// One scheduling pass over pending jobs, queue by queue, the way KAI's allocate action walks them
// (pkg/scheduler/actions/allocate, ordered by the proportion plugin's queue order).
//
// Order (KAI pkg/scheduler/plugins/proportion/queue_order/queue_order.go): at every level of the
// queue tree, among the queues with pending jobs below them, each with the job it would run next,
//   1. a queue over its fair share in every resource goes after one that is not,
//   2. then a queue whose job still fits within its quota goes first,
//   3. then higher queue priority,
//   4. then a queue that would hold a resource it has no share of at all goes last,
//   5. then the smaller dominant share with the job (allocated ÷ cluster, the largest resource),
//   6. then the earlier creation time, then the name.
// Inside a leaf queue, jobs go by priority (highest first), then by where their gang stands
// against its minimum (below it, at it, above it: KAI's elastic plugin), then age (creation time,
// then input order). A job is one pod, or a gang: the pending pods of one PodGroup.
// Each job is admitted (QueueBook::admit, at its queue and every ancestor) before it is placed.
// A gang's first turn admits its first minMember pods and places them all-or-nothing; while
// members are left, it goes back in line, and each later turn admits and places one more step
// (a sub-group's minimum, or one member). A step that finds no node or is refused ends the
// gang's session (KAI's allocate action).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fracpack/binpack/cluster_state.hpp"
#include "fracpack/binpack/gang.hpp"
#include "fracpack/binpack/ledger.hpp"
#include "fracpack/binpack/policy.hpp"
#include "fracpack/binpack/verdict_cache.hpp"
#include "fracpack/queues/charge.hpp"
#include "fracpack/queues/failed_pods.hpp"
#include "fracpack/queues/queue_book.hpp"

namespace fracpack::queues {

struct Job {
  std::string name;                 ///< the pod key, or "namespace/podgroup"
  std::vector<PodRequest> members;  ///< pending pods, in input order
  int min_member = 0;               ///< gang minimum still to place (0: every member; 1 for a plain pod)
  /// Its PodGroup's rule when structured (sub-groups, topology: docs/placement.md rules 18, 19);
  /// null: min_member says it all.
  std::shared_ptr<const GangRule> rule;
  std::vector<GangRunning> running;  ///< with a rule: the members already on nodes
  std::size_t queue = 0;            ///< leaf queue index in the tree
  std::int32_t priority = 0;
  bool preemptible = true;
  std::int64_t created = 0;         ///< seconds since the epoch
  std::size_t input_order = 0;
  std::vector<Amounts> member_charges;  ///< each member's pending charge
  /// Where its PodGroup stands before the session (one pod of a gang whose minimum runs already:
  /// at or above it); a gang with a rule works it out from `running`.
  GangProgress progress = GangProgress::kBelowMinimum;
  Amounts charge;                       ///< what admission counts: the minimum's members (GangPlacer::minimum_by_count)
  /// FailedPods::ask_of() its pod, for a one-pod job asked about in many sessions (a replay's):
  /// computed once. Empty constraints: worked out when needed.
  FailedPods::Ask ask;
  /// pod_shape() of its pod (VerdictCache's key), likewise: empty means worked out when needed.
  std::string shape;

  /// One pod placed on its own: no gang minimum, no PodGroup rule.
  [[nodiscard]] bool single_pod() const { return members.size() == 1 && min_member <= 1 && !rule; }
};

struct JobOutcome {
  const Job* job = nullptr;
  std::optional<Refusal> refusal;   ///< the whole job refused by its queue before placement
  std::vector<PlaceOutcome> members; ///< one per member when admitted
  std::vector<std::optional<Refusal>> refused;  ///< per member of a job of several: an elastic member refused alone (empty for one pod)
  Amounts charged;                  ///< what the job was charged (or would have been)
};

/// How a session places its pods and explains the ones that fit nowhere.
struct SessionOptions {
  std::size_t detailed = SIZE_MAX;       ///< per-pod node detail limit of explanations
  ExplainCache* explain_cache = nullptr;  ///< explanations memoised per shape and ledger version
  /// Single pods placed through cached verdicts (VerdictCache::select: the node select() picks),
  /// for a caller that places many pods of few shapes on a ledger that changes a little at a time.
  VerdictCache* verdicts = nullptr;
  /// Off: a pod that fits nowhere gets no explanation, and a single pod asking no less than one
  /// that found no node in this session (FailedPods) is not searched for: a session only fills
  /// the ledger, so it finds none either, and its job gets no JobOutcome. The placements are the
  /// same.
  bool explain = true;
};

/// Runs every job in queue order against `state` and `book` (both updated). Fair shares must be
/// computed first, for the same `total` (the cluster's schedulable capacity, cluster_total()).
std::vector<JobOutcome> run_session(ClusterState& state, QueueBook& book, const Policy& policy,
                                    const std::vector<Job>& jobs, const Amounts& total, const SessionOptions& options = {});

/// The same over jobs held elsewhere (a replay keeps one Job per pod across sessions).
std::vector<JobOutcome> run_session(ClusterState& state, QueueBook& book, const Policy& policy,
                                    const std::vector<const Job*>& jobs, const Amounts& total,
                                    const SessionOptions& options = {});

/// Jobs of one leaf queue in runs of alike pods: a run's jobs are one pod each, with the same
/// Job::ask (Ask::alike set), priority and preemptibility, in job order (creation, then input
/// order); no two jobs share an input order. A replay groups its waiting pods so. Broken, the
/// outcomes are not run_session()'s (a debug build asserts the contract).
using AlikeRuns = std::vector<std::vector<const Job*>>;
/// Every job of `runs`, run after run.
std::vector<const Job*> jobs_of(const AlikeRuns& runs);

/// run_session() over the jobs of `runs`, visiting only the turns that can change something.
/// With SessionOptions::explain off, a run ends at its first pod that FailedPods covers once its
/// turn is over (no node found, or covered already): every later pod of the run asks the same, so
/// it is covered too (KAI's minimal job comparison, pkg/scheduler/actions/common/
/// minimal_job_comparison.go, on a ledger that only fills), and when admission cannot refuse it
/// (QueueBook::never_refuses) its turn changes nothing and yields no outcome. The runs merge in
/// job order (KAI's job order inside a queue, above): the same outcomes in the same order as
/// run_session() over every job, for a few dozen turns per session where a replay has thousands
/// of pods waiting. With explain on, or runs of several leaves, every job takes its turn.
std::vector<JobOutcome> run_session(ClusterState& state, QueueBook& book, const Policy& policy, const AlikeRuns& runs,
                                    const Amounts& total, const SessionOptions& options = {});

/// One pod of a session placed (or not) as SessionOptions say; `failed` collects the pods that
/// found no node, for SessionOptions::explain off. `ask`: the pod's FailedPods::ask_of() when
/// known, `shape` its pod_shape() (null: worked out).
PlaceOutcome place_in_session(ClusterState& state, const PodRequest& pod, const Policy& policy, const SessionOptions& options,
                              FailedPods& failed, const FailedPods::Ask* ask = nullptr, const std::string* shape = nullptr);

/// The dominant share of queue `q` holding `extra` more: max over resources of allocated ÷ `total`
/// (0 for a zero total), in parts per million.
std::int64_t dominant_share_ppm(const QueueBook& book, std::size_t q, const Amounts& total, const Amounts& extra = {});

}  // namespace fracpack::queues
