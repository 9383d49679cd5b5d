// Sorting and decoding the objects given to `fracpack place`. Internal to src/jobs/.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "fracpack/k8s/object_stream.hpp"
#include "fracpack/sim/place_job.hpp"
#include "fracpack/k8s/priority.hpp"
#include "fracpack/queues/decode_queue.hpp"
#include "fracpack/core/request.hpp"

namespace fracpack::jobs {

/// A decoded pod with its position in the input (not-placed pods are reported in input order).
struct InputPod {
  PodRequest pod;
  std::size_t order = 0;
};

/// A running pod (spec.nodeName set) that fails validation: it still holds what it holds.
struct UnreadablePod {
  std::string key;
  std::string node;
  std::string reason;
  std::vector<int> devices;  ///< from any gpus.devices annotation that parses; empty: unknown
};

struct PlaceInputs {
  std::vector<NodeSpec> nodes;
  std::vector<InputPod> bound;    ///< spec.nodeName set and not finished
  std::vector<InputPod> pending;  ///< everything else, in input order
  std::vector<UnreadablePod> unreadable_bound;
  PriorityClasses classes;
  std::map<std::string, queues::PodGroupSpec> groups;  ///< by "namespace/name"
  std::vector<queues::QueueSpec> queues;
  std::map<std::string, std::size_t> order;  ///< pod key → input position, for every pod seen
  std::map<std::string, std::string> rejected_nodes;  ///< node name → why it was left out
};

/// Decodes everything. Invalid pending pods go to report.unschedulable as "Invalid" (invalid running
/// pods to `unreadable_bound`: they are conflicts whose GPUs get fenced), invalid nodes,
/// duplicates and unused kinds to report.warnings. A malformed Queue is an error: without it no
/// job of its subtree could be admitted correctly.
Result<PlaceInputs> read_inputs(const std::vector<k8s::InputObject>& objects, const PlaceOptions& options,
                                PlaceReport& report);

}  // namespace fracpack::jobs
