// Policies by name. Adding a policy: one file pair, one line here.
#include <algorithm>
#include <array>
#include <utility>

#include <fmt/format.h>

#include "binpack/policy_best_fit.hpp"
#include "binpack/policy_first_fit.hpp"
#include "binpack/policy_pack.hpp"
#include "binpack/policy_spread.hpp"
#include "binpack/study_policies.hpp"
#include "fracpack/binpack/policy.hpp"

namespace fracpack {
namespace {

using Factory = std::shared_ptr<const Policy> (*)();
constexpr std::array<std::pair<std::string_view, Factory>, 4> kPolicies{{
    {"pack", &binpack::make_pack_policy},
    {"spread", &binpack::make_spread_policy},
    {"best-fit", &binpack::make_best_fit_policy},
    {"first-fit", &binpack::make_first_fit_policy},
}};

using StudyFactory = std::shared_ptr<const Policy> (*)(std::uint64_t);
constexpr std::array<std::pair<std::string_view, StudyFactory>, 5> kStudyPolicies{{
    {"random", &binpack::make_random_policy},
    {"dot-product", &binpack::make_dot_product_policy},
    {"gpu-clustering", &binpack::make_gpu_clustering_policy},
    {"gpu-packing", &binpack::make_gpu_packing_policy},
    {"study-best-fit", &binpack::make_study_best_fit_policy},
}};

using WorkloadFactory = std::shared_ptr<const Policy> (*)(std::uint64_t, std::shared_ptr<const std::vector<TypicalPod>>);
constexpr std::array<std::pair<std::string_view, WorkloadFactory>, 3> kWorkloadPolicies{{
    {"fgd", &binpack::make_fgd_policy},
    {"fgd-cpu", &binpack::make_fgd_cpu_policy},
    {"fgd-lp", &binpack::make_fgd_lp_policy},
}};

}  // namespace

std::vector<std::string_view> policy_names() {
  std::vector<std::string_view> out;
  for (const auto& [name, _] : kPolicies) out.push_back(name);
  return out;
}

std::vector<std::string_view> study_policy_names() {
  std::vector<std::string_view> out;
  for (const auto& [name, _] : kStudyPolicies) out.push_back(name);
  for (const auto& [name, _] : kWorkloadPolicies) out.push_back(name);
  return out;
}

bool known_policy(std::string_view name) {
  const auto ours = policy_names();
  const auto study = study_policy_names();
  return std::find(ours.begin(), ours.end(), name) != ours.end() || std::find(study.begin(), study.end(), name) != study.end();
}

bool needs_workload(std::string_view name) {
  return std::any_of(kWorkloadPolicies.begin(), kWorkloadPolicies.end(), [&](const auto& p) { return p.first == name; });
}

Result<std::shared_ptr<const Policy>> make_policy(std::string_view name, const PolicyOptions& options) {
  for (const auto& [known, factory] : kPolicies) {
    if (known == name) return factory();
  }
  for (const auto& [known, factory] : kStudyPolicies) {
    if (known == name) return factory(options.seed);
  }
  for (const auto& [known, factory] : kWorkloadPolicies) {
    if (known != name) continue;
    if (!options.workload || options.workload->empty()) {
      return invalid_argument("policy {} needs a target workload, the typical pods of a pod list: give `fracpack serve` "
                              "--workload FILE (`fracpack place` and `fracpack bench density` take it from their pods)",
                              name);
    }
    return factory(options.seed, options.workload);
  }
  return invalid_argument("unknown policy \"{}\" (known: {}, {})", name, fmt::join(policy_names(), ", "),
                          fmt::join(study_policy_names(), ", "));
}

}  // namespace fracpack
