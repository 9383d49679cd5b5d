// `spread`: KAI's spread placement (gpuspread + nodeplacement spread).
//
// GPUs: an idle GPU first (KAI gpuspread scores it 1), then the emptiest shared GPU of the pod's
// mode (score 1 − used portion).
// Nodes: the node with the largest free share of its GPUs (KAI nodeplacement spread:
// non-allocated ÷ count); fracpack counts fractional free memory too. CPU-only pods spread on free
// CPU share. Ties: node name.
// Sources: KAI pkg/scheduler/plugins/gpuspread/gpuspread.go, nodeplacement/spread.go.
#pragma once

#include <memory>

#include "fracpack/binpack/policy.hpp"

namespace fracpack::binpack {
std::shared_ptr<const Policy> make_spread_policy();
}
