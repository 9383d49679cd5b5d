// NameResolver: candidate lists sent again, and Prioritize's subsequences of them, resolve to
// the same positions a lookup per name gives.
#include <doctest/doctest.h>

#include "plugin_api/name_resolver.hpp"
#include "support/builders.hpp"

namespace fracpack::test {
namespace {

ClusterState cluster(int nodes) {
  std::vector<NodeSpec> specs;
  for (int n = 0; n < nodes; ++n) specs.push_back(nvf(fmt::format("node-{}", n), 1, 81920).spec());
  auto created = ClusterState::create(specs, PlacementConfig{});
  REQUIRE(created.is_ok());
  return std::move(*created);
}

/// What the resolver must answer: one lookup per name.
api::NameResolver::Positions direct(const ClusterState& s, const std::vector<std::string_view>& names) {
  api::NameResolver::Positions out;
  for (auto n : names) out.push_back(s.find_node(n));
  return out;
}

TEST_CASE("NameResolver answers every list as a lookup per name would: repeats, subsequences, others") {
  const ClusterState s = cluster(8);
  api::NameResolver resolver;
  const std::vector<std::string_view> all{"node-0", "node-1", "ghost", "node-2", "node-3", "node-4", "node-5", "node-6", "node-7"};
  const std::vector<std::vector<std::string_view>> lists{
      all,
      all,                                    // the same list again
      {"node-1", "node-3", "node-7"},          // Prioritize: a subsequence
      {"ghost", "node-6"},                     // a subsequence with an unknown name
      {"node-7", "node-1"},                    // out of order: not a subsequence
      {"node-1", "node-1"},                    // a name twice
      {},
      {"node-0", "node-1", "ghost", "node-2"},
      {"node-9", "node-2"},                    // a name no list holds
      all,
  };
  // Twice over, so the second pass meets lists the resolver remembers in a different order.
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& names : lists) {
      CAPTURE(fmt::format("{}", fmt::join(names, ",")));
      const auto got = resolver.resolve(s, names);
      REQUIRE(got != nullptr);
      CHECK(*got == direct(s, names));
    }
  }
  // A new ledger (another node set) never reuses positions from the old one.
  const ClusterState other = cluster(3);
  const std::vector<std::string_view> some{"node-2", "node-5"};
  CHECK(*resolver.resolve(other, some) == direct(other, some));
  CHECK(!(*resolver.resolve(other, some))[1]);
}

}  // namespace
}  // namespace fracpack::test
