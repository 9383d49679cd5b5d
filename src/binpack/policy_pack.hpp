// `pack`: KAI's default placement (gpupack + gpusharingorder + nodeplacement binpack).
//
// GPUs: a fraction goes to the fullest shared GPU of its mode that still fits (KAI gpupack scores a
// shared GPU by its used portion, an idle GPU 0), idle GPUs last.
// Nodes: a fractional pod first prefers nodes with a fitting shared GPU (KAI gpusharingorder,
// score 10000), then the node with the least free GPU capacity (KAI nodeplacement pack:
// 9·(1 − (free − min)/(max − min))). KAI counts only whole idle GPUs as free, which ties every node
// with partly used GPUs; fracpack counts fractional free memory too (free_milli). CPU-only pods
// binpack on free CPU. Ties: node name.
// Sources: KAI pkg/scheduler/plugins/gpupack/gpupack.go, gpusharingorder/gpusharingorder.go,
// nodeplacement/pack.go.
#pragma once

#include <memory>

#include "fracpack/binpack/policy.hpp"

namespace fracpack::binpack {
std::shared_ptr<const Policy> make_pack_policy();
}
