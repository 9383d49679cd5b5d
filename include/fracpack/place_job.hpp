// `fracpack place`: read Kubernetes objects, load bound pods, place the rest in order, report.
//
// Input objects (any order, any mix of files): Node, Pod, PriorityClass, PodGroup
// (scheduling.run.ai/v2alpha2: spec.minMember). Other kinds are ignored with a warning.
// Pods with spec.nodeName are loaded into the ledger first from their allocation annotations
// (`nvidia.com/container.<ctr>.gpus.devices`; a bound pod without it takes the lowest-index GPUs
// that fit on its node). Pods in phase Succeeded or Failed hold nothing and are skipped. The rest
// are placed in input order; the pending members of a PodGroup are placed together, all-or-nothing
// for the first minMember of them, when the first member is reached.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "fracpack/config.hpp"
#include "fracpack/k8s/object_stream.hpp"
#include "fracpack/placement.hpp"
#include "fracpack/status.hpp"

namespace fracpack {

struct PlaceOptions {
  std::string policy = "pack";
  /// How many nodes get their own reasons for each pod that fits nowhere (every node is still
  /// counted in the summary line).
  std::size_t explain_nodes = 100;
  DecodeConfig decode;
  PlacementConfig placement;
};

struct NotPlaced {
  std::string pod;
  std::string status;  ///< "Unschedulable", "UnschedulableAndUnresolvable" or "Invalid"
  std::string reason;
  std::vector<std::pair<std::string, std::string>> nodes;  ///< node → why, in name order
  std::size_t nodes_omitted = 0;  ///< nodes past PlaceOptions::explain_nodes
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

/// The report as aligned text tables.
std::string report_table(const PlaceReport& report);

}  // namespace fracpack
