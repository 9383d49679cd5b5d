// `first-fit`: the first node in name order that fits, and its lowest-index GPUs that fit.
// A baseline: no preference at all beyond order.
#pragma once

#include <memory>

#include "fracpack/binpack/policy.hpp"

namespace fracpack::binpack {
std::shared_ptr<const Policy> make_first_fit_policy();
}
