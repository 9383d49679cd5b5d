// Fit: the rules of docs/placement.md, in one place, for every policy and every caller (select,
// filter, reserve). Internal to src/binpack/.
#pragma once

#include <cstddef>
#include <vector>

#include "fracpack/binpack/cluster_state.hpp"
#include "fracpack/binpack/policy.hpp"

namespace fracpack::binpack {

/// The pod's hold kind, device count and the least memory it could take on one GPU.
PodTraits traits_of(const PodRequest& pod, const ClusterState& state);

/// Memory the pod's fraction takes on GPU `g` of node `n`: the request, or the portion of that
/// GPU's usable memory (labelled memory minus the reserve, so `gpu-fraction: 1` still fits).
MiB fraction_need(const GpuFraction& f, const ClusterState& state, std::size_t n, std::size_t g);
/// Compute portion in hundredths for `need` on a GPU with `usable` memory:
/// ceil(need × 100 / usable) (docs/placement.md rule 5).
int compute_portion(MiB need, MiB usable);

/// Slot size on a replica node: MPS slots get memory ÷ N and 100 ÷ N compute; time-slicing slots
/// get no isolation and account nothing.
MiB slot_memory(const NodeSpec& node, const GpuDevice& gpu);
int slot_compute(const NodeSpec& node);

/// How many more device shares of the pod GPU `g` of node `n` can take right now (0 when it
/// cannot take one). Fractions and whole GPUs: 0 or 1; replica slots: free slots.
int gpu_capacity_for(const ClusterState& state, std::size_t n, std::size_t g, const PodRequest& pod,
                     const PodTraits& traits);

/// How much of a verdict to write: nothing (the fast path of select()), the categories only
/// (enough to count reasons), or categories with this node's numbers.
enum class Detail { kNone, kCategory, kFull };

/// Whether the pod fits node `n` now, with reasons in kube-scheduler's words as `detail` asks.
Verdict check_node(const ClusterState& state, std::size_t n, const PodRequest& pod, const PodTraits& traits,
                   Detail detail);

/// Whether the pod could ever fit node `n`: the rules that waiting or preemption cannot change
/// (readiness, cordon, selector, GPU kind and size, allocatable).
bool fits_ever(const ClusterState& state, std::size_t n, const PodRequest& pod, const PodTraits& traits);

/// Whether the pod could fit a node whose summary is at most `hi` (a necessary condition).
bool could_fit(const PodRequest& pod, const PodTraits& traits, const NodeSummary& hi);

}  // namespace fracpack::binpack
