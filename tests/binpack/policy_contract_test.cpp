// One contract over every policy: the indexed select() gives exactly the best node of the full
// scan (rank_nodes), decisions are deterministic, and scores are normalised.
#include <doctest/doctest.h>

#include "support/builders.hpp"
#include "support/random_cluster.hpp"

namespace fracpack::test {
namespace {

TEST_CASE("select() agrees with the full scan on random clusters, for every policy") {
  for (const std::string& name : all_policy_names()) {
    CAPTURE(name);
    auto pol = policy(name);
    RandomWorld world(4242);
    ClusterState s = world.cluster(60);
    int compared = 0;
    for (int i = 0; i < 600; ++i) {
      PodRequest p = world.pod(fmt::format("p{}", i));
      auto fast = select(s, p, *pol);
      auto ranked = rank_nodes(s, p, *pol);
      REQUIRE(fast.has_value() == !ranked.empty());
      if (!fast) continue;
      ++compared;
      CHECK(fast->node == ranked.front().node);
      CHECK(fast->choice == ranked.front().choice);
      CHECK(ranked.front().score == doctest::Approx(10.0));
      for (const auto& r : ranked) {
        CHECK(r.score >= 0.0);
        CHECK(r.score <= 10.0);
      }
      REQUIRE(s.reserve(p, fast->node, fast->choice).is_ok());
    }
    CHECK(compared > 200);
  }
}

TEST_CASE("filter_nodes() and select() agree on feasibility") {
  RandomWorld world(99);
  ClusterState s = world.cluster(30);
  auto pol = policy("pack");
  for (int i = 0; i < 300; ++i) {
    PodRequest p = world.pod(fmt::format("p{}", i));
    auto verdicts = filter_nodes(s, p);
    auto ranked = rank_nodes(s, p, *pol);
    std::size_t fits = 0;
    for (const auto& [n, v] : verdicts) fits += v.fits() ? 1 : 0;
    CHECK(fits == ranked.size());
    for (const auto& [n, v] : verdicts) {
      if (!v.fits()) {
        CHECK_FALSE(v.reasons.empty());
      }
    }
    if (auto best = select(s, p, *pol)) REQUIRE(s.reserve(p, best->node, best->choice).is_ok());
  }
}

TEST_CASE("unknown policy names are refused with the list") {
  auto p = make_policy("tetris");
  REQUIRE_FALSE(p.is_ok());
  CHECK(p.status().message() == "unknown policy \"tetris\" (known: pack, spread, best-fit, first-fit, random, dot-product, gpu-clustering, "
                                     "gpu-packing, study-best-fit, fgd, fgd-cpu, fgd-lp)");
}

TEST_CASE("pack: the fullest shared GPU that fits, then idle; nodes with a fitting shared GPU first") {
  ClusterState s = cluster({nvf("a", 4, 10000), nvf("b", 4, 10000)});
  REQUIRE(s.reserve(PodBuilder("x").gpu_memory("2000Mi").spec(), 1, [] { GpuChoice c; c.gpus = {2}; return c; }()).is_ok());
  REQUIRE(s.reserve(PodBuilder("y").gpu_memory("6000Mi").spec(), 1, [] { GpuChoice c; c.gpus = {3}; return c; }()).is_ok());
  auto o = place(s, PodBuilder("p").gpu_memory("3000Mi").spec(), "pack");
  REQUIRE(o.placement);
  CHECK(o.placement->node == "b");
  CHECK(o.placement->choice.gpus == std::vector<int>{3});  // 60 % used beats 20 % used
  auto big = place(s, PodBuilder("q").gpu_memory("9000Mi").spec(), "pack");
  REQUIRE(big.placement);
  CHECK(big.placement->node == "b");  // no shared GPU fits it anywhere: least free node, idle GPU
  CHECK(big.placement->choice.gpus == std::vector<int>{0});
  // An sm-sharing pod does not count b's time-slicing GPUs as shared: least free node wins.
  auto sm = place(s, PodBuilder("sm").gpu_memory("1000Mi").sm_sharing().spec(), "pack");
  REQUIRE(sm.placement);
  CHECK(sm.placement->node == "b");
  CHECK(sm.placement->choice.gpus == std::vector<int>{1});
}

TEST_CASE("pack counts fractional free memory where KAI counts only idle GPUs") {
  // Both nodes have 3 idle GPUs; a is 90 % full on its fourth, b 10 %. KAI ties them; pack picks a.
  ClusterState s = cluster({nvf("a", 4, 10000), nvf("b", 4, 10000)});
  auto on = [](int g) { GpuChoice c; c.gpus = {g}; return c; };
  REQUIRE(s.reserve(PodBuilder("x").gpu_memory("9000Mi").spec(), 0, on(0)).is_ok());
  REQUIRE(s.reserve(PodBuilder("y").gpu_memory("1000Mi").spec(), 1, on(0)).is_ok());
  auto o = place(s, PodBuilder("w").whole(1).spec(), "pack");
  REQUIRE(o.placement);
  CHECK(o.placement->node == "a");
}

TEST_CASE("spread: an idle GPU first, then the emptiest shared; the emptiest node") {
  ClusterState s = cluster({nvf("a", 2, 10000), nvf("b", 2, 10000)});
  auto first = place(s, PodBuilder("p1").gpu_memory("1000Mi").spec(), "spread");
  auto second = place(s, PodBuilder("p2").gpu_memory("1000Mi").spec(), "spread");
  auto third = place(s, PodBuilder("p3").gpu_memory("1000Mi").spec(), "spread");
  REQUIRE((first.placement && second.placement && third.placement));
  CHECK(first.placement->node == "a");
  CHECK(second.placement->node == "b");
  CHECK(third.placement->node == "a");
  CHECK(third.placement->choice.gpus == std::vector<int>{1});  // idle before shared
}

TEST_CASE("best-fit: the tightest GPU anywhere") {
  ClusterState s = cluster({nvf("a", 1, 10000), nvf("b", 1, 10000), nvf("c", 1, 10000)});
  auto on0 = [] { GpuChoice c; c.gpus = {0}; return c; };
  REQUIRE(s.reserve(PodBuilder("x").gpu_memory("5000Mi").spec(), 0, on0()).is_ok());
  REQUIRE(s.reserve(PodBuilder("y").gpu_memory("7000Mi").spec(), 1, on0()).is_ok());
  auto o = place(s, PodBuilder("p").gpu_memory("2500Mi").spec(), "best-fit");
  REQUIRE(o.placement);
  CHECK(o.placement->node == "b");  // leaves 500 MiB, a would leave 2500, c 7500
}

TEST_CASE("first-fit: the first node by name that fits") {
  ClusterState s = cluster({nvf("b", 1, 10000), nvf("a", 1, 4000)});
  auto o = place(s, PodBuilder("p").gpu_memory("5000Mi").spec(), "first-fit");
  REQUIRE(o.placement);
  CHECK(o.placement->node == "b");
  auto small = place(s, PodBuilder("q").gpu_memory("1000Mi").spec(), "first-fit");
  CHECK(small.placement->node == "a");
}

TEST_CASE("scores: tiers split the range, values are linear inside a tier") {
  ClusterState s = cluster({nvf("a", 4, 10000), nvf("b", 4, 10000), nvf("c", 4, 10000)});
  auto on = [](int g) { GpuChoice c; c.gpus = {g}; return c; };
  REQUIRE(s.reserve(PodBuilder("x").whole(2).spec(), 2, [] { GpuChoice c; c.gpus = {0, 1}; return c; }()).is_ok());
  REQUIRE(s.reserve(PodBuilder("y").gpu_memory("5000Mi").spec(), 1, on(0)).is_ok());
  auto ranked = rank_nodes(s, PodBuilder("p").gpu_memory("1000Mi").spec(), *policy("pack"));
  REQUIRE(ranked.size() == 3);
  CHECK(s.node(ranked[0].node).name == "b");  // the only node with a shared GPU that fits
  CHECK(ranked[0].score == doctest::Approx(10.0));
  CHECK(s.node(ranked[1].node).name == "c");  // 2 idle GPUs left
  CHECK(ranked[1].score == doctest::Approx(5.0));
  CHECK(s.node(ranked[2].node).name == "a");
  CHECK(ranked[2].score == doctest::Approx(0.0));
}

}  // namespace
}  // namespace fracpack::test
