// `fracpack place`: read Kubernetes objects, load bound pods, place the rest in order, report.
//
// Input objects (any order, any mix of files): Node, Pod, PriorityClass, PodGroup
// (scheduling.run.ai/v2alpha2: minMember, queue, priorityClassName, preemptibility) and Queue
// (scheduling.run.ai/v2). Other kinds are ignored with a warning. With Queue objects, pending
// jobs go in queue order and are admitted by their queues first (queues/session.hpp); without,
// in input order with no admission.
// Pods with spec.nodeName are loaded into the ledger first from their allocation annotations
// (`nvidia.com/container.<ctr>.gpus.devices`; a bound pod without it takes the lowest-index GPUs
// that fit on its node). Pods in phase Succeeded or Failed hold nothing and are skipped. The rest
// are placed in input order; the pending members of a PodGroup are placed together, all-or-nothing
// for the first minMember of them, when the first member is reached. With Queue objects the run is
// KAI's cycle (queues/cycle.hpp, PlaceOptions::actions): what allocation leaves waiting may be
// placed by consolidation, reclaim or preempt, reported with the pods it evicts or moves.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "fracpack/core/config.hpp"
#include "fracpack/k8s/object_stream.hpp"
#include "fracpack/core/placement.hpp"
#include "fracpack/queues/cycle.hpp"
#include "fracpack/queues/min_runtime.hpp"
#include "fracpack/queues/queue.hpp"
#include "fracpack/core/status.hpp"

namespace fracpack {

struct PlaceOptions {
  std::string policy = "pack";
  /// How many nodes get their own reasons for each pod that fits nowhere (every node is still
  /// counted in the summary line).
  std::size_t explain_nodes = 100;
  DecodeConfig decode;
  PlacementConfig placement;
  /// Min-runtime protection's defaults: the reclaim candidates leave out pods it shields now
  /// (the system clock; a running pod's start is its status.startTime).
  queues::MinRuntimeDefaults min_runtime{};
  /// KAI's actions, in order (KAI's `actions` setting; queues/cycle.hpp): by default allocate,
  /// consolidation, reclaim, preempt, stalegangeviction. Without Queue objects, allocate alone.
  std::vector<cycle::ActionKind> actions = cycle::default_actions();
};

/// Where a pod that fits nowhere as the cluster stands goes once running pods make room, as one
/// of KAI's actions decided it (queues/cycle.hpp): reclaim (other queues' pods evicted), preempt
/// (lower-priority pods of its queue evicted) or consolidation (running pods moved).
struct Preemption {
  std::string node;
  std::vector<int> gpus;             ///< the GPUs it takes there (device indices)
  std::vector<std::string> victims;  ///< evicted for it
  std::string action;                ///< "reclaim", "preempt" or "consolidation"
  std::vector<Placement> moved;      ///< pods moved for it (consolidation, or victims that run on elsewhere): where they go
  std::size_t step = 0;              ///< its decision's place in the cycle (0: the first): what came before, it saw
};

struct NotPlaced {
  std::string pod;
  /// "Unschedulable", "UnschedulableAndUnresolvable", "Invalid", or a queue refusal:
  /// "OverLimit", "NonPreemptibleOverQuota" (KAI's reasons)
  std::string status;
  std::string reason;
  std::vector<std::pair<std::string, std::string>> nodes;  ///< node → why, in name order
  std::size_t nodes_omitted = 0;  ///< nodes past PlaceOptions::explain_nodes
  std::optional<Preemption> preemption;  ///< what a later action of the cycle placed it on

  /// A pod refused before placement, with no per-node reasons.
  static NotPlaced refused(std::string pod, std::string status, std::string reason) {
    NotPlaced np;
    np.pod = std::move(pod);
    np.status = std::move(status);
    np.reason = std::move(reason);
    return np;
  }
};

/// A queue's numbers after the run, per resource (queues::Amounts: milli-GPU, milli-CPU, bytes).
struct QueueTotals {
  std::string name;
  std::string parent;
  std::size_t depth = 0;      ///< 0 for a top-level queue
  queues::Amounts deserved;   ///< quota (queues::kUnlimited for -1)
  queues::Amounts fair_share;
  queues::Amounts allocated;
  queues::Amounts allocated_non_preemptible;
  queues::Amounts pending;    ///< charges of the jobs in its subtree that were not placed
  queues::Amounts limit;      ///< queues::kUnlimited for -1
};

struct BindingConflict {
  std::string pod;
  std::string node;
  std::string reason;
};

struct GpuStateCount {
  std::string state;
  std::int64_t gpus = 0;
};

struct PlaceReport {
  std::string policy;
  std::vector<Placement> bound;       ///< loaded from spec.nodeName, in input order
  std::vector<Placement> placements;  ///< newly placed, in decision order
  std::vector<NotPlaced> unschedulable;
  std::vector<BindingConflict> conflicts;  ///< bound pods the ledger could not hold (never double-allocated)
  std::vector<std::string> warnings;       ///< ignored objects, invalid nodes
  std::size_t nodes = 0;
  std::vector<GpuStateCount> gpu_states;   ///< GPUs per state after placement
  std::vector<QueueTotals> queues;         ///< pre-order (parents first, siblings oldest first); empty without queues
};

/// Runs the job over already-read objects (k8s::read_input_file). Errors only when the policy name
/// is unknown; bad objects are reported inside the report.
Result<PlaceReport> run_place(const std::vector<k8s::InputObject>& objects, const PlaceOptions& options);

/// The report as JSON: {"policy", "placements", "unschedulable", "bound", "conflicts", "warnings",
/// "summary"}; a placement is {"pod", "node", "gpus", "hold", "mode", "memoryMiB"}.
nlohmann::ordered_json report_json(const PlaceReport& report);

/// report_json() as indented text; bytes that are not UTF-8 (they can only come from the input)
/// are replaced, never an error.
std::string report_json_text(const PlaceReport& report);

/// report_json() as one YAML document (keys sorted, as `kubectl -o yaml` prints them).
std::string report_yaml_text(const PlaceReport& report);

/// The report as aligned text tables.
std::string report_table(const PlaceReport& report);

}  // namespace fracpack
