// The cluster ledger's data: every node, every GPU's state, every placed pod. Not thread-safe;
// Ledger (ledger.hpp) is the thread-safe owner.
//
// GPU states follow docs/placement.md rule 1: a GPU is idle, whole (one whole-GPU pod), shared
// time-slicing or shared sm-sharing; it returns to idle when its last holder leaves. reserve()
// re-checks every rule of docs/placement.md against the current state before it changes anything, so a
// caller holding a stale decision can never overcommit (KAI #2153, Volcano #3616).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "fracpack/core/config.hpp"
#include "fracpack/core/node.hpp"
#include "fracpack/binpack/node_index.hpp"
#include "fracpack/core/placement.hpp"
#include "fracpack/core/request.hpp"
#include "fracpack/core/status.hpp"

namespace fracpack {

/// What a GPU of a node without the `nvidia.com/gpu.memory` label counts as when a `gpu-fraction`
/// lands on it: KAI's DefaultGpuMemory (pkg/scheduler/api/node_info/node_info.go), 100 MiB, so
/// that portions in hundredths add up to exactly one device. Memory-sized requests never go there.
inline constexpr MiB kUnlabelledGpuMemory{100};

enum class GpuState : std::uint8_t { kIdle, kWhole, kSharedTimeSlicing, kSharedSmSharing };
std::string_view gpu_state_name(GpuState state);
/// The shared state that fractions (or replica slots) of `mode` put a GPU in.
GpuState shared_state(ComputeMode mode);

struct GpuUsage {
  GpuState state = GpuState::kIdle;
  MiB used{0};                       ///< memory held: fractions' sum, or the device's memory when whole
  int compute = 0;                   ///< compute held in hundredths (sm-sharing fractions, MPS slots)
  int slots = 0;                     ///< device-plugin replica slots held (kReplicas nodes)
  std::vector<std::string> holders;  ///< pod keys in arrival order (a slot pod may appear twice)
  /// Running pods the ledger could not adopt that claim this GPU (ClusterState::hold_conflict):
  /// while any does, the GPU is never offered to new placements, whatever else it holds.
  int fences = 0;
  [[nodiscard]] bool fenced() const { return fences > 0; }
  bool operator==(const GpuUsage&) const = default;
};

struct NodeUsage {
  MilliCpu cpu;
  Bytes memory;
  std::int64_t pods = 0;
  std::map<std::string, std::int64_t> extended;  ///< RDMA and other extended resources held
  std::vector<GpuUsage> gpus;                    ///< parallel to NodeSpec::gpus
  bool operator==(const NodeUsage&) const = default;
};

/// Who holds an allocation, which decides what queues and reclaim make of it.
enum class Holder : std::uint8_t {
  kScheduled,  ///< a pod of ours (placed, or adopted running): charged to its queue, a victim if preemptible
  kForeign,    ///< a running pod of another scheduler: holds its resources, in no queue, never a victim
  kConflict,   ///< a running pod the ledger cannot hold as it claims: node resources, fenced GPUs
};

/// What one placed pod holds; release() gives back exactly this.
struct Allocation {
  std::string pod;
  std::size_t node = 0;  ///< node position (see ClusterState: stable until a node is added or removed)
  GpuChoice choice;
  MilliCpu cpu;
  Bytes memory;
  std::map<std::string, std::int64_t> extended;
  bool infiniband = false;
  bool adopted = false;  ///< loaded from a running pod (adopt()), not placed by the ledger
  bool preemptible = true;
  std::int32_t priority = 0;
  std::string queue;
  Holder holder = Holder::kScheduled;
  /// GPUs fenced while it runs: a kConflict pod's claim; beside a held pod's GPUs, what an edit
  /// of its claim names (set_fences).
  std::vector<int> fenced;
  std::uint64_t seq = 0;    ///< when it was recorded: re-adoption after a node change goes in this order
  std::optional<std::int64_t> started;  ///< when it started running, seconds since the epoch (PodRequest::started)
};

/// Nodes have positions 0..node_count()-1. create() gives them in name order; add_node() appends
/// and remove_node() moves the last node into the freed position, so positions are dense but not
/// in name order once nodes come and go. Ties between nodes break by name all the same
/// (docs/placement.md rule 9): each node carries an order label (NodeSummary::position) that follows
/// its name.
class ClusterState {
 public:
  /// kInvalidArgument for duplicate names and for any node validate_node() refuses.
  static Result<ClusterState> create(std::vector<NodeSpec> nodes, PlacementConfig config);
  /// A node the ledger can hold: GPU indices 0..N-1 in order, replica sharing with ≥ 2 replicas.
  static Status validate_node(const NodeSpec& node);

  [[nodiscard]] std::size_t node_count() const { return nodes_.size(); }
  [[nodiscard]] const NodeSpec& node(std::size_t i) const { return nodes_[i]; }
  [[nodiscard]] const NodeUsage& usage(std::size_t i) const { return usage_[i]; }
  [[nodiscard]] const NodeSummary& summary(std::size_t i) const { return index_.leaf(i); }
  [[nodiscard]] std::optional<std::size_t> find_node(std::string_view name) const;
  [[nodiscard]] const PlacementConfig& config() const { return config_; }
  [[nodiscard]] const NodeIndex& index() const { return index_; }
  /// Smallest usable GPU memory (labelled minus the reserve) of any node that can take fractions
  /// (0 when none): a lower bound of what a `gpu-fraction` takes anywhere.
  [[nodiscard]] MiB min_usable_gpu_memory() const { return min_usable_gpu_memory_; }
  /// Allocatable milli-CPU of the largest node, and milli-GPU of the node with the most GPUs (≥ 1).
  [[nodiscard]] std::int64_t max_node_cpu() const { return max_node_cpu_; }
  [[nodiscard]] std::int64_t max_node_gpu_milli() const { return max_node_gpu_milli_; }
  /// Changes whenever one of the three cluster-wide figures above changes (a node added, changed or
  /// removed): a pod's PodTraits, and every verdict computed from them, hold while it is equal.
  [[nodiscard]] std::uint64_t traits_epoch() const { return traits_epoch_; }
  /// Node `n`'s order label: labels compare as the nodes' names do (NodeKey::position, the last
  /// tie-break). Not a position.
  [[nodiscard]] std::int64_t order_label(std::size_t n) const { return order_[n]; }
  /// Node positions in name order. O(nodes).
  [[nodiscard]] std::vector<std::size_t> nodes_in_name_order() const;
  /// Keys of the pods that hold something on node `n`, in no particular order.
  [[nodiscard]] const std::vector<std::string>& pods_on(std::size_t n) const { return pods_on_[n]; }

  /// Adds a node (validate_node(); kAlreadyExists for a known name) holding nothing, at position
  /// node_count(). O(log nodes), except when the order labels run out (then O(nodes)).
  Result<std::size_t> add_node(NodeSpec node);
  /// Replaces node `n`'s spec by `node` (the same name). When its GPUs (count, memory, sharing) are
  /// unchanged, every allocation stays; otherwise every allocation on the node is taken out and
  /// returned in record order, for the caller to re-adopt against the new GPUs. kInvalidArgument
  /// for a bad spec or another name (nothing changes then). O(log nodes + pods on the node), plus
  /// a pass over the nodes for the cluster-wide figures (traits_epoch()).
  Result<std::vector<Allocation>> update_node(std::size_t n, NodeSpec node);
  /// Removes node `n` and returns what its pods held, in record order. The last node takes
  /// position `n`. O(log nodes + pods on the node), plus a pass over the nodes for the
  /// cluster-wide figures.
  std::vector<Allocation> remove_node(std::size_t n);

  /// The memory fractions on GPU `g` of node `i` are measured against: its labelled memory, or on
  /// a GPU node without the label KAI's nominal kUnlabelledGpuMemory, so that `gpu-fraction`
  /// portions still add up to one device there (docs/placement.md rule 10).
  [[nodiscard]] MiB gpu_memory(std::size_t i, std::size_t g) const {
    return nodes_[i].gpu_memory_known ? nodes_[i].gpus[g].memory : kUnlabelledGpuMemory;
  }
  /// Memory of GPU `g` on node `i` that placement may use: labelled memory minus the reserved
  /// part; on a node without the memory label the whole nominal device (nothing is known to reserve).
  [[nodiscard]] MiB usable(std::size_t i, std::size_t g) const {
    if (!nodes_[i].gpu_memory_known) return kUnlabelledGpuMemory;
    const MiB m = nodes_[i].gpus[g].memory - config_.reserved_per_gpu;
    return m.count() > 0 ? m : MiB{0};
  }

  /// Changes on every reserve, release, adopt, restore or fence: equal versions, equal ledger.
  [[nodiscard]] std::uint64_t version() const { return version_; }
  /// When node `i`'s usage last changed, as a process-wide unique number: equal stamps (on this
  /// state or a copy of it) mean the node's usage is the same. What VerdictCache keys on.
  [[nodiscard]] std::uint64_t node_stamp(std::size_t i) const { return node_stamp_[i]; }
  /// Every node's node_stamp(), by position.
  [[nodiscard]] const std::vector<std::uint64_t>& node_stamps() const { return node_stamp_; }
  /// Names the node set: states (and their copies) with equal generations have the same nodes at
  /// the same positions (add_node and remove_node change it; update_node does not).
  [[nodiscard]] std::uint64_t generation() const { return generation_; }

  [[nodiscard]] const Allocation* allocation(const std::string& pod_key) const;
  [[nodiscard]] std::size_t allocation_count() const { return allocations_.size(); }
  /// Pod keys of every allocation, sorted.
  [[nodiscard]] std::vector<std::string> allocated_pods() const;

  /// Places `pod` on `node` with `choice` after re-checking every rule against the current state.
  /// Atomic: on any error nothing changes. Idempotent: the same pod with the same node and choice
  /// again is OK and changes nothing; with a different one it is kAlreadyExists.
  /// Errors: kNotFound (no such node), kUnschedulable / kUnschedulableAndUnresolvable with the
  /// verdict's text when the choice does not fit (any longer).
  Status reserve(const PodRequest& pod, std::size_t node, const GpuChoice& choice);

  /// Loads a pod that is already running on node `node` (spec.nodeName), holding `devices` (from
  /// its gpus.devices annotation) or, when absent, the lowest-index GPUs that can take it.
  /// A running pod is a fact: node-level admission (readiness, cordon, selector, CPU, memory,
  /// pods, gpu-fractioning readiness) is not re-checked and may leave the node overcommitted, so
  /// nothing new fits there. GPU-level rules hold strictly (one state per GPU, memory and compute
  /// within the GPU, whole GPUs exclusive): a pod that breaks them is refused (the caller then
  /// fences its devices). On a replica node an nvidia.com/gpu pod holds slots.
  Status adopt(const PodRequest& pod, std::size_t node, std::optional<std::vector<int>> devices);

  /// Records a running pod the ledger cannot hold as it claims (adopt() refused it, or it cannot
  /// be read): it keeps `pod`'s CPU, memory, extended resources and a pod slot on `node` (nothing
  /// when `pod` is null), and fences `gpus` (unknown indices ignored), which are never offered to
  /// a new placement until release(pod_key). kAlreadyExists when `pod_key` holds something.
  Status hold_conflict(const std::string& pod_key, std::size_t node, const PodRequest* pod, const std::vector<int>& gpus);
  /// Replaces what a held (not kConflict) allocation fences beside what it holds: `gpus` of its
  /// node, less unknown indices, duplicates and the GPUs it holds. False when `pod_key` holds
  /// nothing or is a kConflict (its fence is its claim). O(GPUs of the node).
  bool set_fences(const std::string& pod_key, const std::vector<int>& gpus);
  /// Marks an allocation's holder (a pod of another scheduler is kForeign). Nothing else changes.
  void set_holder(const std::string& pod_key, Holder holder);
  /// Re-labels an allocation's queue, priority and preemptibility (its PodGroup changed).
  void set_job_terms(const std::string& pod_key, const std::string& queue, std::int32_t priority, bool preemptible);
  /// When the pod started running (seconds since the epoch): min-runtime protection counts from it.
  void set_started(const std::string& pod_key, std::int64_t started);

  /// Gives back everything `pod_key` holds. Idempotent: an unknown pod is OK and changes nothing.
  /// Returns whether something was released.
  bool release(const std::string& pod_key);

  /// Removes `pod_key`'s allocation and returns it (nullopt when it holds nothing), for what-if
  /// questions ("would the pod fit without these victims?"); restore() puts it back exactly.
  std::optional<Allocation> take(const std::string& pod_key);
  /// Re-applies an allocation returned by take(), unchanged. The caller guarantees nothing took
  /// its room meanwhile (take, ask, restore, with nothing reserved in between).
  void restore(Allocation allocation);

  /// Checks every ledger invariant (docs/placement.md) from scratch; empty when all hold, else the
  /// first violation. For tests and debug builds; O(cluster).
  [[nodiscard]] std::string check_invariants() const;

 private:
  ClusterState() = default;
  void refresh(std::size_t node);
  /// Recomputes the cluster-wide maxima and minimum; bumps traits_epoch() when one moved. O(nodes).
  void refresh_extremes();
  /// An order label for `name` between its neighbours' (relabels every node when there is no room).
  void label(std::size_t n);
  /// Takes every allocation off node `n` (usage, holders, pods_on), in record order.
  std::vector<Allocation> take_all(std::size_t n);
  /// Removes an allocation's holdings from its node's usage.
  void remove_usage(const Allocation& a);
  /// OK when the pod holds nothing yet, or already holds exactly these GPUs on this node.
  Status check_held(const PodRequest& pod, std::size_t node, std::vector<int> gpus) const;
  /// GPU-level rules for exactly these device indices: count, range, distinct, room on each.
  Status check_gpus(const PodRequest& pod, std::size_t node, const std::vector<int>& gpus) const;
  /// Adds an allocation's holdings to its node's usage.
  /// (What does not fit in 64 bits is not added, and `a` keeps what was: release() is exact.)
  void add_usage(Allocation& a);
  /// Records the allocation; every check has passed.
  void apply(const PodRequest& pod, std::size_t node, const std::vector<int>& gpus, bool adopted);

  PlacementConfig config_;
  std::vector<NodeSpec> nodes_;
  std::vector<NodeUsage> usage_;
  /// Transparent hash: find_node(string_view) looks up without building a std::string.
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, std::size_t, NameHash, std::equal_to<>> by_name_;
  std::unordered_map<std::string, Allocation> allocations_;
  std::vector<std::vector<std::string>> pods_on_;  ///< per node: keys of the allocations there
  std::map<std::string, std::size_t, std::less<>> by_order_;  ///< name → position, in name order
  std::vector<std::int64_t> order_;                ///< per node: its order label (summary position)
  std::uint64_t next_seq_ = 0;
  std::uint64_t traits_epoch_ = 0;
  NodeIndex index_;
  MiB min_usable_gpu_memory_{0};
  std::uint64_t version_ = 0;
  std::vector<std::uint64_t> node_stamp_;
  std::uint64_t generation_ = 0;
  std::int64_t max_node_cpu_ = 1;
  std::int64_t max_node_gpu_milli_ = 1;
};

}  // namespace fracpack
