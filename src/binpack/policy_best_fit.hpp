// `best-fit`: the node left with the least CPU and GPU, then the tightest GPU in it.
//
// Nodes: the reference study's BestFit (Weng et al., "Beware of Fragmentation", USENIX ATC '23;
// kubernetes-scheduler-simulator pkg/simulator/plugin/best_fit_score.go): Σ wᵢ·freeᵢ / maxᵢ over
// CPU and GPU with weights ½ and ½, normalised by the largest node; lower is better. fracpack
// compares free capacity before placement, which orders nodes exactly like free-after-placement
// whenever the pod takes the same capacity on every node (whole GPUs, portions, CPU).
// GPUs: the one the pod leaves with the least usable memory (classic best fit); it also breaks
// node ties. Then node name.
#pragma once

#include <memory>

#include "fracpack/binpack/policy.hpp"

namespace fracpack::binpack {
std::shared_ptr<const Policy> make_best_fit_policy();
}
