// Factories of the FGD study's policies and of fgd-cpu and fgd-lp, ours (one file each: policy_<name>.cpp).
// Internal.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "fracpack/binpack/fragmentation.hpp"
#include "fracpack/binpack/policy.hpp"

namespace fracpack::binpack {

std::shared_ptr<const Policy> make_random_policy(std::uint64_t seed);
std::shared_ptr<const Policy> make_dot_product_policy(std::uint64_t seed);
std::shared_ptr<const Policy> make_gpu_clustering_policy(std::uint64_t seed);
std::shared_ptr<const Policy> make_gpu_packing_policy(std::uint64_t seed);
std::shared_ptr<const Policy> make_study_best_fit_policy(std::uint64_t seed);
std::shared_ptr<const Policy> make_fgd_policy(std::uint64_t seed, std::shared_ptr<const std::vector<TypicalPod>> workload);
std::shared_ptr<const Policy> make_fgd_cpu_policy(std::uint64_t seed, std::shared_ptr<const std::vector<TypicalPod>> workload);
std::shared_ptr<const Policy> make_fgd_lp_policy(std::uint64_t seed, std::shared_ptr<const std::vector<TypicalPod>> workload);

}  // namespace fracpack::binpack
