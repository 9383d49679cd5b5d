// The allocation ceiling with CPU (docs/density.md "The ceiling with CPU"): the most GPU any
// placement of the pods a run placed, plus any of the whole-GPU pods that failed, could allocate
// when every node's CPU, memory, GPU count and GPU model bind as well as the packing of GPU
// shares. It refines the share-only LP ceiling (packing_bound.hpp: the same placed shares, every
// other GPU full of whole-GPU demand, CPU ignored), which says little on the CPU-heavy pod lists
// (cpu200–cpu300), where CPU-only pods take the CPU that GPU pods need: with the same share
// prices, this one is never higher.
//
// The LP, a relaxation of placing pods on nodes (every real placement is one of its points):
// nodes are grouped into shapes (GPUs, GPU model, CPU, memory; n nodes each), pods into classes
// (placed or failed, GPUs, milli-GPU per GPU, CPU, memory, allowed models; a copies each).
// y[p][t] ≥ 0 pods of class p go on shape t, only where one fits an empty node of t. Maximise
// Σ GPUs(p)·y subject to
//   Σ_t y[p][t] = a_p for a placed class, ≤ a_p for a failed one
//   per shape t: Σ_p cpu(p)·y ≤ n·cpu(t), Σ_p memory(p)·y ≤ n·memory(t), Σ_p GPUs(p)·y ≤ n·GPUs(t)
//   per shape t: Σ_whole GPUs(p)·y + Σ_share price(p)·y ≤ n·GPUs(t)
// where price is the cutting-stock dual of the placed shares (binpack::share_prices: the shares one GPU
// holds are worth at most 1, and a GPU with a share takes no whole-GPU pod: docs/placement.md
// rule 2). COIN-OR CLP solves it; the bound reported is the weak-duality bound of CLP's duals
// made feasible, so it holds even if the solver stopped early or erred.
#pragma once

#include <vector>

#include "fracpack/core/node.hpp"
#include "fracpack/sim/alibaba.hpp"

namespace fracpack::density {

/// The ceiling, and the CPU the LP's best placement uses.
struct CapacityCeiling {
  double allocation_pct = 0;  ///< % of the nodes' GPU capacity (certified by weak duality)
  double gpus = 0;            ///< the same in GPUs
  /// % of the nodes' CPU the LP's optimal placement uses (not a bound; NaN when CLP did not prove
  /// it optimal, or there was nothing to place).
  double cpu_used_pct = 0;
};

/// The ceiling of `placed` (all of them, CPU-only pods included: they hold CPU) and any of the
/// whole-GPU pods in `failed` (its shares and CPU-only pods are left out) on `nodes` (the GPU model is
/// NodeSpec::gpu_product, as trace::to_node_spec sets it). A pod is counted once per entry (a
/// clone appears again). Nodes without GPUs: 0 %.
CapacityCeiling capacity_ceiling(const std::vector<NodeSpec>& nodes, const std::vector<const trace::TracePod*>& placed,
                                 const std::vector<const trace::TracePod*>& failed);

}  // namespace fracpack::density
