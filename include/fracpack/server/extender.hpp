// The scheduler extender's core: what both fronts (kube-scheduler HTTP/JSON, gRPC) call.
//
// It owns the cluster ledger, the queues and the durable store. Filter, Prioritize, Explain and
// Snapshot share a read lock; Bind, Release, Apply, Remove and Sync take the write lock, and Bind
// re-checks every rule under it, so two scheduler threads racing Filter → Bind never overcommit a
// GPU (the loser gets a clean kUnschedulable). Every acknowledged Bind is committed to the store
// first (plugin_api/store.hpp); opening the same state again rebuilds exactly those bindings.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <stdexcept>
#include <string_view>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fracpack/binpack/cluster_state.hpp"
#include "fracpack/core/config.hpp"
#include "fracpack/binpack/fragmentation.hpp"
#include "fracpack/queues/min_runtime.hpp"
#include "fracpack/server/gpu_reservations.hpp"
#include "fracpack/core/placement.hpp"
#include "fracpack/binpack/scheduler.hpp"
#include "fracpack/core/status.hpp"

namespace fracpack {

struct ExtenderOptions {
  std::string state_path = ":memory:";  ///< SQLite file, or ":memory:"
  /// The Kubernetes API server is the truth (serve --kube-api): nodes, pods, Queues, PodGroups
  /// and priority classes come from its watch (watch_listed, watch_changed); the state file keeps
  /// only binds not yet seen in the API (written before their Binding, so a restart's first pod
  /// list settles those whose Binding was never made); Apply, Remove and Sync are refused; and
  /// Filter answers every node "fracpack is syncing with the API server" until set_synced(true).
  bool watching = false;
  /// How long a bind may stay unseen in the API server before the server asks for the pod
  /// (assumed_binds(), settle()); kube-scheduler's assumed pods likewise expire.
  std::chrono::seconds assume_ttl{30};
  bool fsync_every_bind = false;        ///< synchronous=FULL: also survive power loss (slower)
  std::string policy = "pack";
  /// The target workload of `fgd` / `fgd-cpu` / `fgd-lp` (read_workload(); required for those policies).
  std::shared_ptr<const std::vector<TypicalPod>> workload;
  PlacementConfig placement;
  DecodeConfig decode;
  /// Min-runtime protection's defaults: Preempt never names a pod it shields (the system clock;
  /// a pod's start is its status.startTime, else the moment this server bound it).
  queues::MinRuntimeDefaults min_runtime{};
  /// Now, in seconds since the epoch: what a pod this server binds records as its start, and what
  /// min-runtime protection compares with. Empty: the system clock (SchedulingState::Options).
  std::function<std::int64_t()> clock{};
  std::size_t explain_nodes = 100;      ///< per-node reasons in Explain
  /// Filter passes at most this many nodes for a pod of ours, the policy's best first (0: every
  /// node that fits). kube-scheduler then scores and picks among them only: with 1, the node it
  /// binds is fracpack's choice (what `fracpack place` picks), and it scores one node, not
  /// thousands. Another scheduler's pods get every node that fits.
  std::size_t filter_best = 0;
  /// How long a gang's placement is held for its members' Binds (SchedulingState::plan_gang):
  /// kube-scheduler binds one pod at a time, so the gang is placed whole at its first member's
  /// Filter and each member then gets its planned node. Unbound members go back to pending after it.
  std::chrono::seconds gang_hold{30};
  /// With `watching`: when the watch frees room (a pod released, a node added or changed, the
  /// first full list), pods whose Filter found no node within this time before are asked for
  /// again (on_retry_wanted). kube-scheduler may have retried them on the same change before
  /// fracpack's watch applied it; without this they would wait up to 60 s. After a Queue edit
  /// (kube-scheduler does not watch Queues), pods refused within the last 60 s. 0: off.
  std::chrono::milliseconds retry_refused_within{5000};
  /// Pods seen by Filter and not yet bound that are kept for Bind (oldest dropped first; also
  /// bounded to ~512 MiB of their JSON). A pod dropped must go through Filter again.
  std::size_t pods_remembered = 100'000;
  /// Reservation pods per shared GPU (gpu_reservations.hpp); only while `watching`.
  GpuReservationOptions reservation;
  /// With `watching`: KAI's stalenessGracePeriod. A gang running fewer members than its
  /// PodGroup's minMember this long has its members bound to nodes deleted by the leader's watch
  /// (evictions(); docs/queues.md rule 15). 0: at once; negative: never.
  std::chrono::seconds staleness_grace{60};
};

/// A pod the leader deletes itself (Extender::evictions).
struct PodEviction {
  enum class Why : std::uint8_t {
    kStaleGang,  ///< its gang ran below minMember for the staleness grace (docs/queues.md rule 15)
    kVictim,     ///< a victim of a reclaim or preemption that kube-scheduler's own did not delete: a
                 ///< member of a victim job on another node, or one it did not offer (rule 12)
  };
  std::string pod;     ///< "namespace/name"
  std::string uid;     ///< the pod's uid as the state holds it ("" when unknown): a precondition of the delete
  std::string reason;  ///< for the log: why it goes
  Why why = Why::kStaleGang;
};

/// A reason many nodes share: Filter answers thousands of nodes with a handful of reasons, so
/// each distinct reason is one allocation, held by every node that fails for it.
class SharedReason {
 public:
  SharedReason() = default;
  SharedReason(std::string text) : text_(std::make_shared<const std::string>(std::move(text))) {}  // NOLINT: a reason is its text
  SharedReason(std::shared_ptr<const std::string> text) : text_(std::move(text)) {}                 // NOLINT
  [[nodiscard]] const std::string& str() const {
    static const std::string kEmpty;
    return text_ ? *text_ : kEmpty;
  }
  friend bool operator==(const SharedReason& a, const SharedReason& b) { return a.str() == b.str(); }

 private:
  std::shared_ptr<const std::string> text_;
};

/// kube-scheduler's ExtenderFilterResult, in fracpack's types.
/// node → reason, in the order the nodes were sent: a flat list, as answers name thousands of nodes.
struct NodeReasons : std::vector<std::pair<std::string, SharedReason>> {
  /// The reason of `node`; std::out_of_range when it is not listed.
  [[nodiscard]] const std::string& at(std::string_view node) const {
    for (const auto& [n, why] : *this) {
      if (n == node) return why.str();
    }
    throw std::out_of_range("no reason listed for node " + std::string(node));
  }
  [[nodiscard]] std::size_t count(std::string_view node) const {
    return static_cast<std::size_t>(std::count_if(begin(), end(), [&](const auto& e) { return e.first == node; }));
  }
};

/// Filter's answer. A failing node's reason is its reasons' categories ("node(s) had GPUs smaller
/// than the memory request"), not its numbers: kube-scheduler counts identical reasons into the
/// pod's "0/N nodes are available: 3000 Insufficient GPU memory, ..." message, which per-node
/// numbers would turn into thousands of one-node entries. explain() gives each node's numbers.
struct FilterAnswer {
  std::vector<std::string> passed;  ///< node names that fit, in the order sent
  NodeReasons failed;               ///< Unschedulable: node → reason
  NodeReasons unresolvable;         ///< UnschedulableAndUnresolvable: node → reason
  /// What refused every node, when one check did (before any node was looked at); kNodes when
  /// each node was refused by its own verdict (its reason says which resource).
  enum class RefusedBy { kNothing, kSyncing, kBinding, kGangWaiting, kGang, kQueue, kNodes };
  RefusedBy refused_by = RefusedBy::kNothing;
};

/// snake_case name of `r` (the reason label of fracpack_unschedulable_total): "syncing",
/// "bound_elsewhere", "gang_waiting", "gang", "queue", "nodes"; "" for kNothing.
std::string_view refused_by_name(FilterAnswer::RefusedBy r);

/// Candidate node names as the caller sent them (kube-scheduler's NodeNames, gRPC node_names):
/// views, valid for the call.
using NodeNames = std::span<const std::string_view>;
/// Views of `names`, for callers that hold strings.
inline std::vector<std::string_view> views(const std::vector<std::string>& names) { return {names.begin(), names.end()}; }

struct HostScore {
  std::string host;
  std::int64_t score = 0;  ///< 0..10 (kube-scheduler's MaxExtenderPriority)
};

/// What Bind decided, and the annotations a binder writes on the pod.
struct BindAnswer {
  std::string pod;
  std::string node;
  GpuChoice choice;
  std::map<std::string, std::string> annotations;  ///< nvidia.com/container.<ctr>.gpus.devices, .gpu-compute.portion
  /// A fraction that joins a GPU whose fractions run without a reservation pod (bound before
  /// reservations were on, or by a binder without them): bound as they are, by the ledger's
  /// index, with no reservation pod (one would get whichever GPU the device plugin has free).
  bool joins_unreserved = false;
  /// A fraction's reservation pods, one per GPU (gpu_reservations.hpp), claimed with the ledger's
  /// bind so that concurrent Binds of one GPU share one; empty without reservations, for other
  /// pods, and when joins_unreserved.
  std::vector<ReservationClaim> reservations;
  /// Per group joined (not created): the members its reservation pod names whose pods are gone
  /// (uids), dropped from it when this pod is recorded a member (kReservationMemberPrefix).
  std::map<std::string, std::vector<std::string>> stale_members;
};

/// The ledger as it stands: every node's GPUs, every binding, every queue's usage.
struct LedgerSnapshot {
  struct Gpu {
    int index = 0;
    GpuState state = GpuState::kIdle;
    MiB memory{0};                     ///< the device's usable memory
    MiB used{0};                       ///< held by fractions, or all of it when whole
    bool fenced = false;               ///< claimed by a running pod the ledger could not adopt
    std::vector<std::string> holders;  ///< pod keys ("namespace/name") in arrival order
    std::string reservation;           ///< its reservation pod ("namespace/name"; gpu_reservations.hpp), "" when none
    std::string device;                ///< the physical GPU that reservation pod reported, "" until reported
  };
  struct Node {
    std::string name;
    std::vector<Gpu> gpus;
  };
  struct Binding {
    std::string pod;  ///< "namespace/name"
    std::string uid;
    std::string node;
    std::vector<int> gpus;     ///< device indices
    std::string standing;      ///< "bound", or "conflict" (runs, GPUs fenced: `note` says why)
    std::string note;
    bool ours = true;          ///< one of our schedulers' (counted in its queue), else another's
    bool gpus_guessed = false; ///< it names no devices: the ledger holds the lowest GPUs that could take it
    bool assumed = false;      ///< acknowledged, not yet seen bound in the API server
  };
  struct Queue {
    std::string name;
    double gpu_allocated = 0;                 ///< GPUs
    double gpu_allocated_non_preemptible = 0; ///< GPUs
    double gpu_fair_share = 0;                ///< GPUs
  };
  std::vector<Node> nodes;        ///< in name order
  std::vector<Binding> bindings;  ///< every pod holding resources, in the order the ledger took them
  std::vector<Queue> queues;      ///< top-down
};

/// The snapshot as the HTTP front's GET /snapshot serves it: {"nodes": [{"name", "gpus": [{"index",
/// "state", "memoryMiB", "usedMiB", "fenced", "holders"}]}], "bindings": [{"pod", "uid", "node",
/// "gpus", "standing", "note", "ours", "gpusGuessed", "assumed"}], "queues": [{"name", "gpuAllocated",
/// "gpuAllocatedNonPreemptible", "gpuFairShare"}]}.
nlohmann::json to_json(const LedgerSnapshot& snapshot);

/// One change the API server reports in a watch (kube API WatchEvent).
struct ApiEvent {
  enum class Type { kAdded, kModified, kDeleted };
  Type type = Type::kAdded;
  nlohmann::json object;  ///< the object, with its kind set
};

/// A bind acknowledged and not yet seen in the API server's pods: the server asks for the pod
/// once its time is up (Extender::assumed_binds).
struct AssumedBind {
  std::string pod;  ///< "namespace/name"
  std::string uid;
  std::string node;
};

/// Counts for /metrics.
struct LedgerGauges {
  std::map<std::string, std::int64_t> gpus_by_state;  ///< "idle", "whole", ... → GPUs
  struct Queue {
    std::string name;
    double gpu_allocated = 0;   ///< GPUs
    double gpu_fair_share = 0;  ///< GPUs
  };
  std::vector<Queue> queues;
  std::size_t pods_bound = 0;
  std::size_t pods_pending = 0;      ///< ours, waiting: their requests count in their queues' demand
  std::size_t pods_conflicting = 0;  ///< running pods the ledger cannot hold as they claim (GPUs fenced)
  std::size_t binds_assumed = 0;     ///< acknowledged, not yet seen in the API server
  /// Running pods whose GPU claim was edited after it was recorded: held as recorded, the edit's GPUs fenced.
  std::size_t pods_claim_edited = 0;
  /// Such edits refused since start, by who wrote them (the pod's managedFields manager).
  std::map<std::string, std::uint64_t> claim_edits_by_writer;
  bool synced = true;                ///< the first full list of every watched kind is applied
};

class Extender {
 public:
  /// Opens (or creates) the state at options.state_path and rebuilds the ledger from it.
  static Result<std::unique_ptr<Extender>> open(const ExtenderOptions& options);
  virtual ~Extender() = default;

  /// Adds or replaces Node, Queue, PodGroup and PriorityClass objects (other kinds: a warning).
  /// All or nothing, in memory and on disk: bad objects (kInvalidArgument naming the index, the
  /// object and the field), or objects that would make no valid cluster (a Queue whose parentQueue
  /// does not exist, a cycle of parentQueue links), change nothing.
  virtual Status apply(const std::vector<nlohmann::json>& objects, std::vector<std::string>* warnings) = 0;
  /// Of the v1 Nodes a scheduler sent (`objects`, named `names`: kube-scheduler without
  /// nodeCacheCapable sends every candidate's Node with every call), the positions of those to
  /// apply: nodes the extender does not know, and known nodes whose object changed in a way the
  /// scheduler sees (labels, allocatable, cordon, conditions: NodeSpec). A Node sent again with
  /// the same resourceVersion, or the same contents, costs a lookup; a changed one that decodes
  /// to the same NodeSpec (a status heartbeat) is remembered, not applied, so it is decoded once.
  virtual std::vector<std::size_t> nodes_to_apply(NodeNames names, const std::vector<const nlohmann::json*>& objects) = 0;
  /// Removes a Node (its bindings with it), Queue or PodGroup. kNotFound when absent; a Queue that
  /// is another queue's parentQueue is kInvalidArgument (nothing changes).
  virtual Status remove(const std::string& kind, const std::string& name) = 0;

  /// Filter over every node the ledger knows: `passed` best first (the policy's order), at most
  /// `max_nodes` of them (0: all). The failing nodes are listed only when no node passes. With
  /// max_nodes 1 the node index answers in O(log nodes); otherwise every node is ranked.
  virtual Result<FilterAnswer> filter_all(const nlohmann::json& pod, std::size_t max_nodes) = 0;
  /// Filter: which of `nodes` (names) the pod fits. Unknown names are unresolvable; a node listed
  /// more than once is answered once (its first place). A pod its queue refuses fails on every
  /// node with the queue's reason. An infeasible pod is an answer, not an error; a pod that cannot
  /// be decoded is kInvalidArgument naming the field.
  virtual Result<FilterAnswer> filter(const nlohmann::json& pod, NodeNames nodes) = 0;
  /// filter() over names held in a vector.
  Result<FilterAnswer> filter(const nlohmann::json& pod, const std::vector<std::string>& nodes) {
    return filter(pod, NodeNames(views(nodes)));
  }
  /// Prioritize: one score 0..10 per entry of `nodes`, in the order sent; 0 where the pod does
  /// not fit or the node is unknown (kube-scheduler's HostPriorityList).
  virtual Result<std::vector<HostScore>> prioritize(const nlohmann::json& pod, NodeNames nodes) = 0;
  /// prioritize() over names held in a vector.
  Result<std::vector<HostScore>> prioritize(const nlohmann::json& pod, const std::vector<std::string>& nodes) {
    return prioritize(pod, NodeNames(views(nodes)));
  }
  /// Bind a pod seen by Filter or Prioritize to `node`. kNotFound for an unknown pod or node,
  /// kUnschedulable when it no longer fits (a lost race: retry from Filter),
  /// kUnschedulableAndUnresolvable when it can never fit that node (subject "node:<name>"),
  /// kResourceExhausted when its queue refuses, kAlreadyExists when it is bound elsewhere.
  /// Idempotent for the same node.
  virtual Result<BindAnswer> bind(const std::string& namespace_name, const std::string& name, const std::string& uid,
                                  const std::string& node) = 0;
  /// Preempt: of kube-scheduler's candidate victims (node → pod UIDs), the nodes where fracpack's
  /// own victims (docs/queues.md rule 12) are a subset of those offered, with fracpack's victims.
  /// Where reclaim and preemption find none, the pods consolidation (rule 14) would move off the
  /// node its plan lands the pod on are the victims, when kube-scheduler offered them all (it
  /// offers only pods of lower priority than the pod).
  virtual Result<std::map<std::string, std::vector<std::string>>> preempt(
      const nlohmann::json& pod, const std::map<std::string, std::vector<std::string>>& candidates) = 0;
  /// Releases a bound pod ("namespace/name"). Idempotent: OK again for a pod this server released
  /// (or dropped with its node, or by a Sync) since it started, among its last 16,384 such, until
  /// it is bound again. kNotFound for a pod it holds no binding of and did not release (never
  /// bound here, only pending, or a wrong name): a caller that expected a binding learns there
  /// was none. A restart forgets the releases: a retry across one may then be kNotFound.
  virtual Status release(const std::string& pod_key) = 0;
  /// Replaces every binding with `bound_pods` (Pod objects with spec.nodeName): the recovery path
  /// after a restart or a leader change. Pods the ledger cannot hold are returned as conflicts.
  /// An empty list is refused (kInvalidArgument) unless `cluster_empty` says the cluster really
  /// runs no pods: a caller that lost its list must not wipe every binding. A pod that does not
  /// decode, is not bound or is listed twice is kInvalidArgument naming its index; nothing changes.
  virtual Status sync(const std::vector<nlohmann::json>& bound_pods, bool cluster_empty, std::vector<std::string>* conflicts) = 0;
  /// The watch: a complete list of `kind` (Node, Pod, Queue, PodGroup, PriorityClass) replaces
  /// what the state holds of it; what cannot be read is reported in `notes` and left out (a Node
  /// that does not decode is not placed on; a Queue whose parentQueue is missing waits for it).
  /// Pods: every pod the list does not name is forgotten; a bind acknowledged and not yet visible
  /// is kept until its pod is seen bound or its time is up.
  virtual void watch_listed(const std::string& kind, const std::vector<nlohmann::json>& objects, std::vector<std::string>* notes) = 0;
  /// The watch: changes in the order the API server made them. Pods: deleted, Succeeded or
  /// Failed ones are released; one bound by anyone is adopted from its annotations; a pending one
  /// of ours counts in its queue's demand.
  virtual void watch_changed(const std::string& kind, const std::vector<ApiEvent>& events, std::vector<std::string>* notes) = 0;
  /// Called (outside the core's lock) with pods kube-scheduler has put in its unschedulable queue
  /// and should try again now: the other members of a gang planned at a member's Filter (their
  /// Filter said "waiting for the gang"), and a pod whose Bind lost a race for its node (another
  /// Bind took the room after its Filter). kube-scheduler retries those only on a cluster event or
  /// after 60 s; the watch nudges them (ClusterWatch::nudge).
  virtual void on_retry_wanted(std::function<void(const std::vector<std::string>& pods)> hook) = 0;
  /// Leader election (serve --leader-elect): whether this replica may act: Bind, and the watch's
  /// own writes (deleting reservation pods, nudging pods). Set once, before serving; `gate`
  /// answers OK or why not (a follower: kFailedPrecondition naming the leader). No gate: OK.
  virtual void set_act_gate(std::function<Status()> gate) = 0;
  [[nodiscard]] virtual Status may_act() const = 0;
  /// Readiness: set once the first list of every watched kind is applied.
  virtual void set_synced(bool synced) = 0;
  /// This process may act anew (it started, or took the lead): the pending pods of ours (at most
  /// 1,024, by key) are taken as refused just now, and those that would be admitted and fit are
  /// handed to on_retry_wanted (at most 64 at once; the rest at the next change that frees room, or
  /// at kube-scheduler's own retry). kube-scheduler may hold pods whose Filter or Bind failed
  /// while no replica could act in its unschedulable queue (60 s in v1.20) until an event moves them.
  virtual void retry_pending() {}
  /// ExtenderOptions::watching: the watch, not the callers, tells the server the cluster.
  [[nodiscard]] virtual bool follows_api_server() const = 0;
  [[nodiscard]] virtual bool synced() const = 0;
  /// Binds whose time to be seen in the API server is up (ExtenderOptions::assume_ttl).
  [[nodiscard]] virtual std::vector<AssumedBind> assumed_binds() const = 0;
  /// What the API server says of an assumed bind's pod: the pod (bound there: the bind is done;
  /// bound elsewhere or unbound: it did not happen), or null (the pod is gone).
  virtual void settle(const AssumedBind& bind, const nlohmann::json& pod) = 0;
  /// Compares the ledger with one rebuilt from scratch from the same objects and pods, and checks
  /// every invariant (kube-scheduler's cache comparer). Empty when they agree, else what differs.
  [[nodiscard]] virtual std::string verify() const = 0;
  /// Compares the ledger with the API server's pods (a complete list, as listed now): every pod
  /// bound there is held on its node as the same pod, on the GPUs its fracpack.io/gpus names;
  /// nothing is held that is not bound there (binds acknowledged and not yet visible aside); each
  /// reservation pod of this deployment is its group's, on the ledger GPU it names; every running
  /// fraction's GPU groups have their reservation pod on its node. Empty when they agree, else one
  /// line per difference. A difference the watch has not delivered yet shows too: ask again.
  [[nodiscard]] virtual std::vector<std::string> verify_against(const std::vector<nlohmann::json>& pods) const { (void)pods; return {}; }
  /// The reservation pods of shared GPUs (null unless watching with reservations enabled): the
  /// binder claims them before it binds a fraction.
  [[nodiscard]] virtual GpuReservations* reservations() { return nullptr; }
  /// The leader's sweep, from the watch's timer (every second, and when the watch shows a GPU
  /// idle): reservation pods fracpack did not create get a ledger GPU, and those whose GPU is idle
  /// are retired when they served, or were made by another process of this deployment and left
  /// unclaimed (GpuReservationOptions::predecessor_grace), or by KAI's binder and left unclaimed
  /// twice the reservation timeout; GpuReservations::take_deletions() then has them. Decided from
  /// the ledger as it is now: a follower never calls it. Takes the write lock.
  virtual void sweep_reservations() {}
  /// The pods the leader deletes itself; empty unless watching. KAI's stale gang eviction
  /// (SchedulingState::stale_gangs with ExtenderOptions::staleness_grace): the members of gangs
  /// stale that long. And the rest of the victims Preempt decided (docs/queues.md rule 12): where
  /// kube-scheduler's preemption deletes only what it offered on one node, the other pods of
  /// those victims' jobs (and victims it did not offer there) go too, whole jobs as KAI evicts
  /// them; each listed while it still runs. From the watch's timer, on every replica (so each
  /// keeps when the gangs went stale); only the leader deletes them. Takes the write lock.
  virtual std::vector<PodEviction> evictions() { return {}; }
  /// This replica took or lost the lead: the victims an earlier term decided are dropped (a new
  /// leader decides again from the ledger; docs/ha.md).
  virtual void new_term() {}

  /// Why the pod fits no node, node by node.
  virtual Result<Explanation> explain(const nlohmann::json& pod) = 0;
  /// The ledger and queue usage.
  [[nodiscard]] virtual LedgerSnapshot snapshot() const = 0;
  [[nodiscard]] virtual LedgerGauges gauges() const = 0;
};

}  // namespace fracpack
