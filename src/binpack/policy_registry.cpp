// Policies by name. Adding a policy: one file pair, one line here.
#include <array>
#include <utility>

#include <fmt/format.h>

#include "binpack/policy_best_fit.hpp"
#include "binpack/policy_first_fit.hpp"
#include "binpack/policy_pack.hpp"
#include "binpack/policy_spread.hpp"
#include "fracpack/policy.hpp"

namespace fracpack {
namespace {

using Factory = std::shared_ptr<const Policy> (*)();
constexpr std::array<std::pair<std::string_view, Factory>, 4> kPolicies{{
    {"pack", &binpack::make_pack_policy},
    {"spread", &binpack::make_spread_policy},
    {"best-fit", &binpack::make_best_fit_policy},
    {"first-fit", &binpack::make_first_fit_policy},
}};

}  // namespace

std::vector<std::string_view> policy_names() {
  std::vector<std::string_view> out;
  for (const auto& [name, _] : kPolicies) out.push_back(name);
  return out;
}

Result<std::shared_ptr<const Policy>> make_policy(std::string_view name) {
  for (const auto& [known, factory] : kPolicies) {
    if (known == name) return factory();
  }
  return invalid_argument("unknown policy \"{}\" (known: {})", name, fmt::join(policy_names(), ", "));
}

}  // namespace fracpack
