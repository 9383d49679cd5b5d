// The inputs of `fracpack quota replay` and `quota tune`, read and checked once for both.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "fracpack/sim/quota_job.hpp"

namespace fracpack {

struct QuotaInputs {
  std::vector<NodeSpec> nodes;                  ///< after --node-fraction
  std::vector<queues::QueueSpec> queues;
  std::vector<nlohmann::json> queue_objects;    ///< the Queue objects as read, same order as `queues`
  quota::TimedWorkload workload;
  std::vector<std::string> warnings;            ///< the workload's and quota_warnings(), for stderr
};

/// Reads nodes (CSV or Node objects), Queue objects and the workload (CSV with a rule file, or Pod
/// objects). kInvalidArgument naming the flag and file for anything unusable.
Result<QuotaInputs> read_quota_inputs(const QuotaInputFiles& files);

/// Every node i with ⌊(i+1)·f⌋ > ⌊i·f⌋: round(n·f) nodes spread evenly over the list, so a
/// fraction of the cluster keeps its mix of GPU models. kInvalidArgument when f ∉ (0, 1] or no
/// node is left.
Result<std::vector<NodeSpec>> sample_nodes(std::vector<NodeSpec> nodes, double fraction);

}  // namespace fracpack
