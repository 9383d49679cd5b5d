// Choosing the GPUs inside one node. Internal to src/binpack/.
#pragma once

#include <optional>
#include <vector>

#include "fracpack/binpack/cluster_state.hpp"
#include "fracpack/binpack/policy.hpp"

namespace fracpack::binpack {

/// The policy's preferred GPUs for the pod on node `n`: the `devices` fitting GPUs of lowest
/// gpu_rank (ties by index), distinct for fractions and whole GPUs; a slot pod may take several
/// slots of one GPU. nullopt when fewer than `devices` fit. CPU-only pods get an empty choice.
std::optional<GpuChoice> choose_gpus(const ClusterState& state, std::size_t n, const PodRequest& pod,
                                     const PodTraits& traits, const Policy& policy);

/// The full choice for given device indices: memory and compute held on each, shared_before and
/// free_after, computed from the current state. Does not check fit.
GpuChoice make_choice(const ClusterState& state, std::size_t n, const PodRequest& pod, const PodTraits& traits,
                      std::vector<int> gpus);

/// policy.evaluate() with NodeKey::position set to `n` (before any random tie-break).
std::optional<Policy::Evaluated> evaluate_node(const ClusterState& state, std::size_t n, const PodRequest& pod,
                                               const PodTraits& traits, const Policy& policy);

/// Sets key.value2 to the tie-breaking draw of the pod on `node` as the policy's ties() asks.
void break_tie(const Policy& policy, const PodRequest& pod, const NodeSpec& node, NodeKey& key);

}  // namespace fracpack::binpack
