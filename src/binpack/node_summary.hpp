// Computing a node's summary from its spec and usage. Internal to src/binpack/.
#pragma once

#include "fracpack/binpack/cluster_state.hpp"

namespace fracpack::binpack {

/// Whether fractional pods may use node `n` at all under the configured sharing mode.
bool takes_fractions(const ClusterState& state, std::size_t n);

/// The summary of node `n`, from scratch (O(GPUs of the node)).
NodeSummary summarize(const ClusterState& state, std::size_t n);

}  // namespace fracpack::binpack
