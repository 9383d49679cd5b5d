// Thousands of random valid pods on random clusters: after every step every invariant holds
// (no GPU over memory or 100 compute, no mode mix, no whole/shared mix, distinct devices), and
// release restores the exact prior state.
#include <doctest/doctest.h>

#include "support/builders.hpp"
#include "support/random_cluster.hpp"

namespace fracpack::test {
namespace {

TEST_CASE("random placements and releases keep every invariant, for every policy") {
  int placed_total = 0;
  int steps_total = 0;
  for (const std::string& name : all_policy_names()) {
    CAPTURE(name);
    auto pol = policy(name);
    for (std::uint32_t seed = 1; seed <= 6; ++seed) {
      CAPTURE(seed);
      RandomWorld world(seed * 7919u);
      PlacementConfig config;
      config.reserved_per_gpu = MiB(world.chance(0.5) ? 0 : 500);
      config.sharing_mode = world.chance(0.7) ? GpuSharingMode::kNvFractions : GpuSharingMode::kNonMemoryEnforced;
      ClusterState s = world.cluster(world.uniform(1, 24), config);
      std::vector<std::string> live;
      for (int step = 0; step < 400; ++step) {
        ++steps_total;
        if (!live.empty() && world.chance(0.3)) {
          const auto victim = static_cast<std::size_t>(world.uniform(0, static_cast<int>(live.size()) - 1));
          REQUIRE(s.release(live[victim]));
          live.erase(live.begin() + static_cast<std::ptrdiff_t>(victim));
        } else {
          PodRequest p = world.pod(fmt::format("p{}", step));
          auto before = usage_of(s);
          PlaceOutcome o = place_pod(s, p, *pol);
          if (o.placement) {
            ++placed_total;
            // Release restores the exact prior state; placing again gives the same answer.
            REQUIRE(s.release(p.key()));
            REQUIRE(usage_of(s) == before);
            PlaceOutcome again = place_pod(s, p, *pol);
            REQUIRE(again.placement);
            CHECK(again.placement->node == o.placement->node);
            CHECK(again.placement->choice == o.placement->choice);
            live.push_back(p.key());
          } else {
            CHECK(usage_of(s) == before);
            CHECK(o.why.code != Code::kInternal);
            CHECK_FALSE(o.why.summary.empty());
          }
        }
        const std::string broken = s.check_invariants();
        REQUIRE_MESSAGE(broken.empty(), broken);
      }
    }
  }
  MESSAGE("placed ", placed_total, " pods in ", steps_total, " steps");
  CHECK(placed_total > 3000);
}

}  // namespace
}  // namespace fracpack::test
