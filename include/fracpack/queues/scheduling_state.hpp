// One scheduling state: the nodes and their GPUs, every pod the cluster runs or waits on, the KAI
// Queues, PodGroups and priority classes, and each queue's usage and fair share. It is the only
// way `fracpack place`, `fracpack serve` (both fronts, the Kubernetes watch) change or read them,
// so a rule about pods, PodGroups or queues lives in one place (docs/architecture.md).
//
// Every change costs what it touches: a node added, changed or removed is O(log nodes + its pods);
// a pod observed, bound or forgotten is O(log nodes + queue depth); a Queue edit rebuilds the
// queue book from per-queue totals, O(queues), never from every pod. Fair shares are recomputed
// lazily, before the next read that needs them (book()), from what each queue holds plus what its
// pending pods ask for (docs/queues.md rule 9: fair share counts pending demand, as KAI's does).
//
// Not thread-safe, except that const reads may run concurrently with each other (the lazy fair
// share and the pending-charge cache have their own lock). The extender core holds it behind a
// reader-writer lock.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "fracpack/binpack/cluster_state.hpp"
#include "fracpack/core/config.hpp"
#include "fracpack/binpack/ledger.hpp"
#include "fracpack/binpack/policy.hpp"
#include "fracpack/k8s/priority.hpp"
#include "fracpack/queues/consolidation.hpp"
#include "fracpack/queues/decode_queue.hpp"
#include "fracpack/queues/min_runtime.hpp"
#include "fracpack/queues/queue_book.hpp"
#include "fracpack/queues/queue_tree.hpp"
#include "fracpack/queues/reclaim.hpp"
#include "fracpack/queues/session.hpp"
#include "fracpack/core/request.hpp"

namespace fracpack {

/// A batch of cluster objects, applied all or nothing (SchedulingState::validate, then apply).
struct ObjectChange {
  std::vector<NodeSpec> nodes;                ///< added, or replaced by name
  std::vector<std::string> removed_nodes;
  std::vector<queues::QueueSpec> queues;      ///< added, or replaced by name
  std::vector<std::string> removed_queues;
  std::vector<queues::PodGroupSpec> groups;   ///< added, or replaced by "namespace/name"
  std::vector<std::string> removed_groups;    ///< "namespace/name"
  std::vector<std::pair<std::string, std::int32_t>> priority_classes;  ///< added or replaced
};

/// What the state holds for one pod.
enum class PodStanding : std::uint8_t {
  kPending,         ///< waiting, ours: its request counts in its queue's demand
  kBound,           ///< holds its node's resources and GPUs
  kConflict,        ///< runs, but breaks a GPU rule as it claims: node resources held, GPUs fenced
  kWaitingForNode,  ///< bound to a node the state does not know (yet): adopted when it appears
  kIgnored,         ///< pending and another scheduler's: nothing to hold or ask
};
std::string_view standing_name(PodStanding standing);

/// One pod as the state holds it.
struct PodRecord {
  PodRequest raw;  ///< as decoded from the pod
  PodRequest pod;  ///< with its PodGroup's queue, priority and preemptibility (effective())
  PodStanding standing = PodStanding::kPending;
  bool ours = true;          ///< spec.schedulerName is one of ours (DecodeConfig::scheduler_names)
  queues::Amounts charge;    ///< what it counts in its queue: held (bound) or asked (pending)
  std::string note;          ///< why it is a conflict or waiting
  /// Planned with its gang (plan_gang): held where the plan puts it, not bound in the cluster yet;
  /// the plan lapses at this time unless the pod is bound (bind).
  std::optional<std::chrono::steady_clock::time_point> planned_until;
  bool unreadable = false;   ///< a running pod that does not decode: raw.bound is all that is known
  std::string unreadable_reason;  ///< why it does not decode
  /// GPUs a later edit of this running pod's GPU claim names (fence_claim): fenced while the edit
  /// stands, beside what the pod holds as first recorded. Empty: no edit stands.
  std::vector<int> claim_fence;
};

class SchedulingState {
 public:
  struct Options {
    PlacementConfig placement;
    DecodeConfig decode;
    /// Off: queue refusals carry their reason and queue but not the arithmetic behind them
    /// (QueueBook::set_refusal_messages), for a replay that counts refusals and never shows them.
    bool refusal_messages = true;
    /// Min-runtime protection's defaults (queues/min_runtime.hpp).
    queues::MinRuntimeDefaults min_runtime{};
    /// Now, in seconds since the epoch: what a pod placed or bound records as its start, and what
    /// min-runtime protection compares with. Empty: the system clock. A replay gives its own.
    std::function<std::int64_t()> clock{};
  };
  explicit SchedulingState(Options options);

  // ---- Cluster objects -------------------------------------------------------------------------
  /// What apply(change) would refuse, with the object and field named; OK otherwise. A node named
  /// twice in the change, a Queue whose
  /// parentQueue does not exist (after the change), a parentQueue cycle, a removed Queue that is
  /// still a parent, a node validate_node() refuses, removing what is not there (kNotFound).
  /// `warnings`: what KAI allows but is suspicious (a child quota above its parent's).
  Status validate(const ObjectChange& change, std::vector<std::string>* warnings = nullptr) const;
  /// Applies a validated change (precondition: validate() is OK). Pods whose GPUs a node change
  /// took away become conflicts; their descriptions are returned.
  std::vector<std::string> apply(const ObjectChange& change);

  /// Replaces the known priority classes (KAI's built-ins plus the cluster's PriorityClass
  /// objects). Pods already held keep the priority they were decoded with, as in Kubernetes,
  /// where a pod's priority is fixed when it is created.
  void set_classes(PriorityClasses classes) { classes_ = std::move(classes); }
  /// Queues the cluster has that wait out of the tree for their parentQueue (queue → parent): a
  /// pod of one is refused saying so (queue_problem), not as of an unknown queue.
  void set_waiting_queues(std::map<std::string, std::string> waiting) { waiting_queues_ = std::move(waiting); }
  /// PodGroups the API server has that cannot be honoured (they do not decode: a minMember above
  /// 2^20, a sub-group cycle), by "namespace/name", with why. A member of one the state holds no
  /// valid version of is refused, unresolvable, with that reason: never placed one by one (a
  /// gang that fails open). docs/placement.md rule 18.
  void set_invalid_groups(std::map<std::string, std::string> invalid) { invalid_groups_ = std::move(invalid); }

  // ---- Pods ------------------------------------------------------------------------------------
  /// Decodes a v1 Pod with the state's priority classes and applies its PodGroup (effective()).
  Result<PodRequest> decode_pod(const nlohmann::json& object) const;
  /// `raw` with its PodGroup's queue, priority class and preemptibility (the one place PodGroup
  /// terms are applied). kInvalidArgument when the PodGroup names an unknown priority class.
  Result<PodRequest> effective(PodRequest raw) const;
  /// The pod as the cluster shows it now, replacing what was held for it: pending (ours: demand),
  /// or bound (`raw.bound`: adopted from its device annotation, or the lowest GPUs that can take
  /// it; a pod the ledger cannot hold as it claims is a conflict). O(log nodes + queue depth).
  PodStanding observe(const PodRequest& raw);
  /// A bound pod (kBound) whose GPU claim was edited after it was recorded: it keeps holding what
  /// it holds, and `gpus` (ledger indices of its node that the edit names and the pod does not
  /// hold; others are ignored) are fenced until the next call; empty lifts the fence. False when
  /// the pod is not bound. docs/security.md, "What fracpack believes".
  bool fence_claim(const std::string& pod_key, const std::vector<int>& gpus);
  /// A running pod that cannot be decoded: it holds `devices` (all of the node's GPUs when empty)
  /// as fenced GPUs, and nothing else the state knows.
  PodStanding observe_unreadable(const std::string& pod_key, const std::string& node, const std::vector<int>& devices,
                                 const std::string& reason);
  /// The pod is gone (deleted, or finished): what it held or asked for is released. False when
  /// the state held nothing for it.
  bool forget(const std::string& pod_key);
  /// Binds a pending pod to `node` (kube-scheduler's Bind): queue admission (pods of ours), the
  /// fit on that node under `policy`'s GPU choice, the reservation, the charge. kNotFound (node),
  /// kResourceExhausted (its queue refuses: the message is the queue's), kUnschedulable (no longer
  /// fits), kAlreadyExists (it holds resources already). Nothing changes on an error. `pod` may be
  /// raw or effective(): its PodGroup's terms are applied either way.
  Result<Allocation> bind(const PodRequest& pod, std::size_t node, const Policy& policy);
  /// A gang through a scheduler that binds one pod at a time (kube-scheduler). A PodGroup with
  /// sub-groups or a topology constraint is planned by its tree (plan_structured: its minimum,
  /// then each member's own step, every one held as planned; docs/placement.md rules 18, 19).
  /// For a pending member of a PodGroup with minMember > 1 that its running members do not
  /// already satisfy:
  /// while fewer members than it still needs are pending, kWaiting; once they are, the first of
  /// them (by creation time) are placed all or nothing (docs/placement.md rule 7, the gang's queue
  /// admitting their sum) and held where placed until `now + hold` (kPlanned: each member's
  /// Filter then gets its planned node, and its Bind confirms the plan); a gang that does not fit,
  /// or that its queue refuses, is kRefused with why. Other pods are kNotAGang.
  struct GangDecision {
    enum class Kind { kNotAGang, kPlanned, kWaiting, kRefused };
    Kind kind = Kind::kNotAGang;
    std::string node;    ///< kPlanned: where the plan puts this pod
    std::string reason;  ///< kWaiting, kRefused
    std::vector<std::string> others;  ///< kPlanned just now: the gang's other members planned with it
    /// kRefused for good, whatever the cluster frees (a sub-group label naming no leaf):
    /// kube-scheduler's UnschedulableAndUnresolvable, so it does not preempt for it.
    bool unresolvable = false;
  };
  GangDecision plan_gang(const PodRequest& pod, const Policy& policy, std::chrono::steady_clock::time_point now,
                         std::chrono::seconds hold);
  /// What plan_gang would answer for `pod` now, with nothing held: the ledger is left as it was
  /// (Explain asks this; kPlanned names the node the plan would give it, `others` stays empty).
  GangDecision gang_outlook(const PodRequest& pod, const Policy& policy);
  /// A pending member of a PodGroup the API server has that cannot be honoured, and of which no
  /// valid version is held (set_invalid_groups): kRefused, unresolvable, saying why. nullopt for
  /// any other pod. What plan_gang and gang_outlook answer for it; a read.
  [[nodiscard]] std::optional<GangDecision> invalid_group_refusal(const PodRequest& pod) const;
  /// Whether plan_gang would change anything for `pod` (a pending gang member not planned yet:
  /// held pending, or not held and not bound; a running or planned member is not).
  [[nodiscard]] bool gang_needs_planning(const PodRequest& pod) const;
  /// The members of `pod`'s gang whose plan_gang would place the gang now (the earliest-created
  /// pending ones, as many as it still needs, earliest first); empty while the gang waits for
  /// members, or when it needs no planning. A scheduler that set members aside while they waited
  /// retries one of these. A structured PodGroup (sub-groups, topology): every pending member,
  /// once its members can satisfy it (any of them plans it).
  [[nodiscard]] std::vector<std::string> gang_planners(const PodRequest& pod) const;
  /// Members planned and not bound by `now` go back to pending; their holds are released.
  /// Returns how many lapsed.
  std::size_t expire_plans(std::chrono::steady_clock::time_point now);
  /// The earliest time a plan lapses (nullopt: none is held).
  [[nodiscard]] std::optional<std::chrono::steady_clock::time_point> next_plan_expiry() const;

  /// One scheduling session over `jobs` (queues::run_session, or input order without queues):
  /// placed pods are recorded as bound. Members must carry their PodGroup's terms (effective(), as
  /// jobs::build_jobs makes them): the book is charged on them. A pod of another scheduler is
  /// placed too, and then counts as that scheduler's (in no queue), as a watch would read it.
  std::vector<queues::JobOutcome> run_session(const Policy& policy, const std::vector<queues::Job>& jobs,
                                              const queues::SessionOptions& options = {});
  /// The same over jobs kept elsewhere (a replay keeps one Job per waiting pod across sessions).
  std::vector<queues::JobOutcome> run_session(const Policy& policy, const std::vector<const queues::Job*>& jobs,
                                              const queues::SessionOptions& options = {});
  /// The same over runs of alike jobs of one leaf queue (queues::AlikeRuns): a replay's session
  /// without explanations visits a few dozen runs instead of every waiting pod. Without queues,
  /// run after run (queues::jobs_of), as the overloads above take jobs in input order.
  std::vector<queues::JobOutcome> run_session(const Policy& policy, const queues::AlikeRuns& runs,
                                              const queues::SessionOptions& options = {});

  // ---- Consolidation (docs/queues.md rule 14) --------------------------------------------------
  /// Room for pending pods of ours that go together (one pod, or the members of a gang placed all
  /// or nothing) that fit nowhere as the cluster stands, made by moving running pods
  /// (queues::find_consolidation). With KAI's rules around it:
  ///   - the job is preemptible (KAI consolidates for preemptible jobs only) and its queue admits
  ///     the sum of its pods (rules 6–8);
  ///   - a pod may move when it is bound, ours, preemptible, not held for a gang's plan and not a
  ///     member of a gang with minMember > 1 (a gang moves whole or not at all: left alone);
  ///   - a pod of another queue moves only while the job's queue and every ancestor stay within
  ///     their deserved quota holding the job, in each resource it asks for (KAI PR 1565: an
  ///     over-quota queue's 48 GPUs of requests moved 376 GPUs of an under-quota queue's pods);
  ///   - a moved pod whose charge grows at its new place (a smaller GPU) must fit its queue's limits.
  /// nullopt when any of it fails or no plan exists. The state is unchanged.
  /// `pass`: a caller planning for many jobs in a row keeps one (what nodes hold is read once per
  /// node change; its verdict cache places); null: one for this call.
  std::optional<queues::ConsolidationPlan> plan_consolidation(const std::vector<PodRequest>& pods, const Policy& policy,
                                                              const queues::ConsolidationLimits& limits = {},
                                                              queues::ConsolidationPass* pass = nullptr);
  /// Applies a plan plan_consolidation() just returned for `pods` on this state, unchanged since:
  /// each moved pod is bound where the plan puts it (a new run: its start is now), then the job's
  /// pods where it places them, each charged to its queue. kInternal, with nothing changed, when
  /// the plan no longer fits the ledger.
  Status apply_consolidation(const std::vector<PodRequest>& pods, const queues::ConsolidationPlan& plan);

  // ---- Stale gangs (docs/queues.md rule 15) ---------------------------------------------------
  /// The pod finished with phase Succeeded and is still in the API: what it held is released (as
  /// by forget()), and its PodGroup (`group_key`, "namespace/name"; "" for none) has a Succeeded
  /// member until the pod is deleted (forget()). KAI never counts such a gang stale: its members
  /// are completing, not lost.
  void observe_succeeded(const std::string& pod_key, const std::string& group_key);
  /// A gang running fewer members than its minMember.
  struct StaleGang {
    std::string group;              ///< its PodGroup, "namespace/name"
    int min_member = 0;             ///< the PodGroup's minMember
    int active = 0;                 ///< members on a node (bound, running, adopted, planned)
    std::int64_t stale_since = 0;   ///< seconds since the epoch (Options::clock)
    std::vector<std::string> evict; ///< the members to evict: every one bound to a node, by key (a planned one holds nothing)
  };
  /// KAI's stale gang eviction (pkg/scheduler/actions/stalegangeviction/stalegangeviction.go;
  /// PodGroupInfo.IsStale in pkg/scheduler/api/podgroup_info): a PodGroup with minMember > 1, no
  /// member Succeeded, and more than 0 but fewer than minMember members on a node is stale (with
  /// sub-groups or a topology constraint: members on nodes that do not satisfy its tree,
  /// gang_satisfied()). The
  /// first call that finds it stale records now as its stale_since; a call that finds it whole
  /// again, or without members on nodes, forgets that. Returns the gangs stale for at least
  /// `grace` (KAI's stalenessGracePeriod, 60 s by default; negative: never; never early: the
  /// clock counts whole seconds, so a grace above 0 waits up to a second more) that have members
  /// bound to evict, PodGroup order. Only pods of ours count and are evicted (another
  /// scheduler's are its own). The state evicts nothing itself: the caller deletes those pods,
  /// and forgets each as its deletion is observed. O(PodGroups + their members).
  std::vector<StaleGang> stale_gangs(std::chrono::seconds grace);

  // ---- Reads -----------------------------------------------------------------------------------
  [[nodiscard]] const ClusterState& cluster() const { return cluster_; }
  [[nodiscard]] const PriorityClasses& classes() const { return classes_; }
  [[nodiscard]] const PodRecord* pod(const std::string& key) const;
  /// Whether `pod` is this scheduler's: its spec.schedulerName is one of DecodeConfig's
  /// scheduler_names, or empty. Only ours are charged to queues and admitted by them; another
  /// scheduler's bound pods hold their resources and are taken out of what queues divide (KAI).
  [[nodiscard]] bool is_ours(const PodRequest& pod) const;
  [[nodiscard]] std::size_t pod_count() const { return pods_.size(); }
  /// Pending pods of ours (their asks count in their queues' demand). O(pods).
  [[nodiscard]] std::size_t pending_count() const;
  /// Keys of the pending pods of ours, sorted, at most `most` of them. O(pods).
  [[nodiscard]] std::vector<std::string> pending_keys(std::size_t most) const;
  /// Keys of every pod the state holds a record of, and of the Succeeded pods it remembers
  /// (observe_succeeded), in no particular order.
  [[nodiscard]] std::vector<std::string> pod_keys() const;
  /// The queue tree and book (null without Queues), fair shares current.
  [[nodiscard]] const queues::QueueTree* tree() const { return tree_.get(); }
  [[nodiscard]] const queues::QueueBook* book() const;
  /// The leaf queue `pod` is charged to (nullopt: no queues, or its queue is no leaf of them).
  [[nodiscard]] std::optional<std::size_t> leaf_queue(const PodRequest& pod) const;
  /// Why `pod`'s queue cannot hold jobs (no such Queue, or one with child queues); nullopt when it
  /// can, or when there are no queues.
  [[nodiscard]] std::optional<std::string> queue_problem(const PodRequest& pod) const;
  /// Queue admission of `pod` (docs/queues.md rules 6–8); nullopt = admitted, or no queues. A pod whose
  /// queue is missing or not a leaf is refused ("Invalid", with queue_problem()).
  [[nodiscard]] std::optional<queues::Refusal> admit(const PodRequest& pod) const;
  /// What `pod` counts in its queue while pending (queues::charge_pending), cached per pod shape.
  [[nodiscard]] queues::Amounts pending_charge(const PodRequest& pod) const;
  /// What every queue divides: schedulable capacity less what other schedulers' pods hold.
  [[nodiscard]] queues::Amounts total() const;
  /// Reclaim and preemption candidates for `pod` (queues::find_victims) on `nodes` (all: null),
  /// without pods min-runtime protection shields now. The ledger is changed for a moment and
  /// restored.
  /// `lapse`, when not null: lowered to the earliest moment a candidate it shields stops being
  /// shielded (queues::VictimShield::lapse).
  std::optional<queues::Victims> find_victims(const PodRequest& pod, const Policy& policy, const NodeMask* nodes,
                                              std::optional<std::int64_t>* lapse = nullptr);
  /// The same for a whole job as KAI's reclaim and preempt actions take it (the passes asked):
  /// a single pod as above, over every node; a gang's minimum, all or nothing, charged
  /// Job::charge (queues::VictimTarget).
  std::optional<queues::Victims> find_victims(const queues::Job& job, const Policy& policy, queues::VictimPass passes,
                                              std::optional<std::int64_t>* lapse = nullptr);
  /// The job `pod`'s gang is, as KAI's reclaim and preempt take it: its members plan_gang would
  /// place next (the earliest pending, as many as its minimum still needs; a structured PodGroup:
  /// every pending member, with its rule), its queue, priority and charge (its minimum's).
  /// nullopt when `pod` needs no gang planning (gang_needs_planning) or too few members wait.
  /// The rule points into the state: valid until the PodGroup changes.
  [[nodiscard]] std::optional<queues::Job> gang_job(const PodRequest& pod) const;
  /// The state's clock (Options::clock, else the system's), seconds since the epoch.
  [[nodiscard]] std::int64_t now() const;
  /// Whether `pod`'s PodGroup's preemptionDelay has not passed yet (PodGroupSpec::evicts_from; its
  /// creation, else the pod's, as the anchor): its job may not evict others yet.
  [[nodiscard]] bool within_preemption_delay(const PodRequest& pod) const;
  /// Running gang members as victims go (queues::VictimJobs): each PodGroup's earliest-started
  /// minMember members (at least one) its core, the rest alone; members held for a plan are
  /// marked planned (never victims). O(gang members).
  [[nodiscard]] queues::VictimJobs victim_jobs() const;
  /// Every invariant of the ledger, plus the queue figures recounted from the pods: empty when
  /// all hold, else the first violation. O(everything): for tests, debug builds and /debug/verify.
  [[nodiscard]] std::string check_invariants() const;
  /// check_invariants(), then a state built from scratch from the same objects, with the pods
  /// replayed in the order the ledger took them, compared pod by pod (standing and GPUs), total
  /// and fair share by fair share (kube-scheduler's cache comparer). Empty when they agree, else
  /// the first difference. O(everything).
  [[nodiscard]] std::string verify() const;

 private:
  /// victim_jobs() for a PodGroup with sub-groups: each leaf's earliest minMember running pods are
  /// the core (KAI's PodSets), the rest its members above the minimum, by leaf. `running`: the
  /// group's running members, earliest first.
  void mark_sub_group_cores(const std::string& key, const GangRule& rule,
                            const std::vector<std::pair<std::optional<std::int64_t>, std::string>>& running,
                            queues::VictimJobs& out) const;
  friend class Statement;  // statement.hpp: tentative evictions and placements, undone exactly
  struct QueueTotals {
    queues::Amounts allocated;
    queues::Amounts non_preemptible;
  };
  /// In debug builds, checks every invariant when a public change returns (abort with the
  /// violation); nothing in release builds.
  class DebugCheck {
   public:
    explicit DebugCheck(const SchedulingState& s) : s_(s) {}
    ~DebugCheck();
    DebugCheck(const DebugCheck&) = delete;
    DebugCheck& operator=(const DebugCheck&) = delete;

   private:
    const SchedulingState& s_;
  };
  /// Releases (or un-asks) what `record` holds, and takes it out of the totals.
  /// `readopt`: conflicts on the pod's node retried once it has gone (a Statement retries them
  /// at commit, so a rollback finds the GPUs as they were).
  void withdraw(const std::string& key, PodRecord& record, bool readopt = true);
  /// Adopts again every conflict on `node` (a pod there left: one may fit now).
  void readopt_conflicts(std::size_t node);
  /// Holds (or asks) `record`, into the totals.
  void place_record(const std::string& key, PodRecord& record);
  /// Adopts a bound record on its node: bound, conflict or waiting.
  void adopt(const std::string& key, PodRecord& record);
  /// A bound record of ours into (sign 1) or out of (-1) its queue's totals and the book; another
  /// scheduler's into or out of foreign_.
  void charge(const PodRecord& record, int sign);
  /// A pending record's ask into or out of its queue's demand.
  void add_pending(const PodRequest& pod, int sign);
  /// plan_gang's steps: the members to place together (the earliest-created pending ones, as many
  /// as the minimum still needs; empty with `d` set when the gang waits or needs nothing), the
  /// queue's admission of their sum (empty: admitted), and holding the plan's placements.
  std::vector<std::string> gang_members_to_plan(const PodRequest& pod, const std::string& key, GangDecision& d) const;
  /// The gang's next members to place together, whichever member asks (empty with `d` set).
  std::vector<std::string> gang_next_members(const std::string& key, GangDecision& d) const;
  std::optional<std::string> gang_refusal(const PodRequest& pod, const Gang& gang) const;
  /// A structured PodGroup (sub-groups, topology: docs/placement.md rules 18, 19) as it stands:
  /// its pending members (earliest created first, by key) and its members on nodes.
  struct StructuredGang {
    Gang gang;                      ///< rule points into groups_
    std::vector<std::string> keys;  ///< gang.members[i]'s pod key
  };
  [[nodiscard]] StructuredGang structured_gang(const std::string& key) const;
  static std::vector<std::size_t> placed_members(const GangPlacer& placer);
  std::optional<std::string> structured_refusal(const PodRequest& pod, const StructuredGang& gang,
                                                const std::vector<std::size_t>& members) const;
  /// plan_gang for a structured PodGroup: its minimum (when its members on nodes do not satisfy
  /// it), then this member's own step; every member placed is held as planned until `until`
  /// (nullopt: released again, an outlook).
  void plan_structured(const PodRequest& pod, const std::string& key, const Policy& policy,
                       std::optional<std::chrono::steady_clock::time_point> until, GangDecision& d);
  /// plan_gang's decision; `until` nullopt: an outlook, nothing held.
  GangDecision decide_gang(const PodRequest& pod, const Policy& policy, std::optional<std::chrono::steady_clock::time_point> until);
  void hold_gang_plan(const PodRequest& pod, const std::vector<std::string>& members,
                      const std::vector<PlaceOutcome>& outcomes, std::chrono::steady_clock::time_point until,
                      GangDecision& d);
  /// `raw` with its PodGroup's terms (effective()), or its own when the PodGroup names an unknown
  /// priority class.
  [[nodiscard]] PodRequest terms_of(const PodRequest& raw) const;
  /// The pod as last observed when the state holds it pending or ignored with the same uid (as
  /// decoded: `pod` may carry an earlier PodGroup's terms), else `pod`.
  [[nodiscard]] const PodRequest& last_observed(const PodRequest& pod) const;
  /// Records `pod`, just reserved in the ledger, as bound there, as a watch reading it back would:
  /// the pod as last observed with its PodGroup's terms, ours by its scheduler name, its start now
  /// (unless it has one), its charge into its queue's totals and book; `session_charged`: a
  /// session charged the book already (taken back for a pod of another scheduler).
  void record_bound(const PodRequest& pod, bool session_charged);
  /// Every pod a session placed, recorded as bound.
  void record_session(const std::vector<queues::JobOutcome>& outcomes);
  /// plan_consolidation's rules: the pod behind `a` when it may move for some job (the queue rule
  /// aside), else null.
  /// The running pod of ours behind an allocation (bound, readable, not held for a plan), else nullptr.
  [[nodiscard]] const PodRequest* running_pod(const Allocation& a) const;
  [[nodiscard]] const PodRequest* movable(const Allocation& a) const;
  /// Whether the job's queue and every ancestor stay within deserved quota holding `charge`.
  [[nodiscard]] bool within_deserved(const PodRequest& pod, const queues::Amounts& charge) const;
  /// Whether every moved pod's queue admits what its charge grows by at its new place, and the
  /// job's queue then still admits `job_charge`.
  [[nodiscard]] bool moves_admitted(const queues::ConsolidationPlan& plan, const PodRequest& job,
                                    const queues::Amounts& job_charge) const;
  /// Records that `key` (held by `record`) starts running now, unless it has a start already.
  void mark_started(const std::string& key, PodRecord& record);
  /// queues::find_victims on this state's ledger and book, with its min-runtime shield.
  std::optional<queues::Victims> search_victims(const queues::VictimTarget& target, const queues::Amounts& charge,
                                                const Policy& policy, const NodeMask* nodes, queues::VictimPass passes,
                                                std::optional<std::int64_t>* lapse);
  void mark_fair_dirty();
  void rebuild_book();
  void readopt(std::size_t node, std::vector<Allocation> taken, std::vector<std::string>* conflicts);
  void rederive(const std::string& group_key);
  void nodes_changed();
  void ensure_fair_shares() const;

  Options options_;
  ClusterState cluster_;
  std::map<std::string, queues::QueueSpec> queue_specs_;
  std::unique_ptr<queues::QueueTree> tree_;  // stable address: the book points into it
  std::unique_ptr<queues::QueueBook> book_;
  std::map<std::string, queues::PodGroupSpec> groups_;
  PriorityClasses classes_;
  std::unordered_map<std::string, PodRecord> pods_;
  std::unordered_map<std::string, std::set<std::string>> group_members_;  ///< PodGroup key → pod keys
  std::unordered_map<std::string, std::set<std::string>> waiting_;        ///< node name → pods bound to it, unknown node
  std::unordered_map<std::string, QueueTotals> totals_;                   ///< by queue name (ours only)
  std::set<std::string> planned_;                                         ///< pods held by a gang plan
  std::unordered_map<std::string, std::string> succeeded_;                ///< Succeeded pod → its PodGroup key
  std::map<std::string, std::int64_t> stale_since_;                       ///< PodGroup key → when first found stale
  std::map<std::string, std::string> waiting_queues_;                     ///< set_waiting_queues()
  std::map<std::string, std::string> invalid_groups_;                     ///< set_invalid_groups()
  queues::Amounts foreign_;  ///< what other schedulers' pods hold
  queues::Amounts capacity_;  ///< what ready, schedulable nodes have (queues::cluster_total), as of the last node change
  std::uint64_t nodes_version_ = 0;

  mutable std::mutex fair_mu_;  // held while fair shares are recomputed
  mutable std::mutex lazy_mu_;  // the flags and caches below
  mutable bool fair_dirty_ = true;
  mutable bool pending_stale_ = false;  ///< pending_sum_ predates a node change: sum again
  mutable std::unordered_map<std::string, queues::Amounts> pending_sum_;  ///< queue name → pending pods' charges
  mutable std::unordered_map<std::string, std::pair<std::uint64_t, queues::Amounts>> pending_charges_;  ///< shape → (nodes_version_ + 1, charge)
};

}  // namespace fracpack
