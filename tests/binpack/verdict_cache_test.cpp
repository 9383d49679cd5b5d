// VerdictCache answers exactly what filter_nodes() and rank_nodes() answer, on every step of a
// random run of binds and releases, for every policy, and select() picks select()'s node with or
// without the node index pruning; and it re-evaluates only changed nodes.
#include <doctest/doctest.h>

#include "fracpack/binpack/verdict_cache.hpp"
#include "support/builders.hpp"
#include "support/random_cluster.hpp"

namespace fracpack::test {
namespace {

TEST_CASE("VerdictCache equals filter_nodes() and rank_nodes() through random binds and releases") {
  for (const std::string& name : all_policy_names()) {
    CAPTURE(name);
    auto pol = policy(name);
    RandomWorld world(777);
    ClusterState s = world.cluster(50);
    std::vector<PodRequest> shapes;
    for (int i = 0; i < 6; ++i) shapes.push_back(world.pod(fmt::format("shape{}", i)));
    std::vector<std::size_t> all(s.node_count());
    for (std::size_t n = 0; n < all.size(); ++n) all[n] = n;
    VerdictCache cache(4);  // fewer slots than shapes: evictions are exercised too
    std::vector<std::string> placed;
    int compared = 0;
    int selected = 0;  // select() found a node
    int nowhere = 0;   // it found none: the pruned walk must agree
    for (int step = 0; step < 400; ++step) {
      PodRequest p = shapes[static_cast<std::size_t>(world.uniform(0, 5))];
      p.name = fmt::format("p{}", step);
      // Filter: every node's verdict, code and text.
      auto direct = filter_nodes(s, p, all);
      std::size_t i = 0;
      cache.visit(s, p, *pol, all, [&](std::size_t n, const VerdictCache::Entry& e) {
        REQUIRE(direct[i].first == n);
        CHECK(e.code == direct[i].second.code);
        std::string categories;  // the direct verdict's categories, each once, in order
        for (const auto& r : direct[i].second.reasons) {
          if (categories.find(r.category) != std::string::npos) continue;
          categories += (categories.empty() ? "" : "; ") + r.category;
        }
        CHECK(*e.categories == categories);
        ++i;
      });
      CHECK(i == all.size());
      // Prioritize: the same nodes in the same order with the same scores.
      auto ranked = rank_nodes(s, p, *pol, all);
      auto cached = cache.rank(s, p, *pol, all);
      REQUIRE(cached.size() == ranked.size());
      for (std::size_t r = 0; r < ranked.size(); ++r) {
        CHECK(cached[r].node == ranked[r].node);
        CHECK(cached[r].score == doctest::Approx(ranked[r].score));
      }
      // Select over every node (pruned by the node index) and over the list: select()'s node.
      auto pruned = cache.select(s, p, *pol);
      auto listed = cache.select(s, p, *pol, all);
      auto plain = select(s, p, *pol);
      REQUIRE(pruned.is_ok());
      REQUIRE(listed.is_ok());
      REQUIRE(pruned->has_value() == plain.has_value());
      REQUIRE(listed->has_value() == plain.has_value());
      if (plain) {
        CHECK((*pruned)->node == plain->node);
        CHECK((*listed)->node == plain->node);
        CHECK((*pruned)->choice.gpus == plain->choice.gpus);
      }
      ++(plain ? selected : nowhere);
      ++compared;
      if (!ranked.empty() && world.chance(0.7)) {
        REQUIRE(s.reserve(p, ranked.front().node, ranked.front().choice).is_ok());
        placed.push_back(p.key());
      } else if (!placed.empty()) {
        const auto victim = static_cast<std::size_t>(world.uniform(0, static_cast<int>(placed.size()) - 1));
        CHECK(s.release(placed[victim]));
        placed.erase(placed.begin() + static_cast<std::ptrdiff_t>(victim));
      }
    }
    CHECK(compared == 400);
    CHECK(placed.size() > 20);
    CHECK(selected > 20);
    CHECK(nowhere > 20);
  }
}

TEST_CASE("VerdictCache::select over every node equals select() through binds, releases, node changes and copies") {
  for (const std::string& name : all_policy_names()) {
    CAPTURE(name);
    auto pol = policy(name);
    RandomWorld world(4242);
    ClusterState s = world.cluster(40);
    std::vector<PodRequest> shapes;
    for (int i = 0; i < 5; ++i) shapes.push_back(world.pod(fmt::format("shape{}", i)));
    VerdictCache cache(3);  // fewer slots than shapes: rankings are dropped and built again
    std::vector<std::string> placed;
    int selected = 0;
    for (int step = 0; step < 300; ++step) {
      CAPTURE(step);
      PodRequest p = shapes[static_cast<std::size_t>(world.uniform(0, 4))];
      p.name = fmt::format("p{}", step);
      // Only select(): the kept GPU choice of the ranked node is what a bind takes.
      auto cached = cache.select(s, p, *pol);
      REQUIRE(cached.is_ok());
      const auto plain = select(s, p, *pol);
      REQUIRE(cached->has_value() == plain.has_value());
      if (plain) {
        CHECK((*cached)->node == plain->node);
        CHECK((*cached)->choice == plain->choice);
        ++selected;
        if (world.chance(0.75)) {
          REQUIRE(s.reserve(p, (*cached)->node, (*cached)->choice).is_ok());
          placed.push_back(p.key());
        }
      }
      const int change = world.uniform(0, 19);
      if (change < 4 && !placed.empty()) {
        const auto victim = static_cast<std::size_t>(world.uniform(0, static_cast<int>(placed.size()) - 1));
        CHECK(s.release(placed[victim]));
        placed.erase(placed.begin() + static_cast<std::ptrdiff_t>(victim));
      } else if (change == 4) {  // a node joins (a new position)
        REQUIRE(s.add_node(world.node(fmt::format("added{}", step))).is_ok());
      } else if (change == 5 && s.node_count() > 10) {  // a node leaves: the last moves into its position
        for (const Allocation& a : s.remove_node(static_cast<std::size_t>(world.uniform(0, static_cast<int>(s.node_count()) - 1)))) {
          std::erase(placed, a.pod);
        }
      } else if (change == 6) {  // a node's spec changes
        const auto n = static_cast<std::size_t>(world.uniform(0, static_cast<int>(s.node_count()) - 1));
        NodeSpec spec = world.node(s.node(n).name);
        auto taken = s.update_node(n, spec);
        REQUIRE(taken.is_ok());
        for (const Allocation& a : *taken) std::erase(placed, a.pod);
      } else if (change == 7) {  // a copy of the state, changed apart from the original
        ClusterState copy = s;
        PodRequest q = shapes[static_cast<std::size_t>(world.uniform(0, 4))];
        q.name = fmt::format("copy{}", step);
        auto on_copy = cache.select(copy, q, *pol);
        REQUIRE(on_copy.is_ok());
        const auto plain_copy = select(copy, q, *pol);
        REQUIRE(on_copy->has_value() == plain_copy.has_value());
        if (plain_copy) {
          CHECK((*on_copy)->choice == plain_copy->choice);
          REQUIRE(copy.reserve(q, (*on_copy)->node, (*on_copy)->choice).is_ok());
        }
      }
    }
    CHECK(selected > 30);
  }
}

TEST_CASE("VerdictCache re-evaluates only the node a bind changed") {
  ClusterState s = cluster({nvf("a", 2, 80000), nvf("b", 2, 80000), nvf("c", 2, 80000)});
  auto pol = policy("pack");
  VerdictCache cache;
  PodRequest p = PodBuilder("p1").gpu_memory("10Gi").spec();
  const std::vector<std::size_t> all{0, 1, 2};
  auto first = cache.rank(s, p, *pol, all);
  CHECK(cache.evaluations() == 3);
  cache.rank(s, p, *pol, all);
  CHECK(cache.evaluations() == 3);  // nothing changed: nothing evaluated
  auto best = rank_nodes(s, p, *pol, {first.front().node});
  REQUIRE(s.reserve(p, best.front().node, best.front().choice).is_ok());
  PodRequest q = PodBuilder("p2").gpu_memory("10Gi").spec();  // same shape, another pod
  cache.rank(s, q, *pol, all);
  CHECK(cache.evaluations() == 4);  // only the node p1 went to
  PodRequest other = PodBuilder("p3").gpu_memory("20Gi").spec();  // another shape: its own entries
  cache.rank(s, other, *pol, all);
  CHECK(cache.evaluations() == 7);
}

TEST_CASE("VerdictCache::select over every node re-evaluates only the changed nodes and hands over the GPUs") {
  ClusterState s = cluster({nvf("a", 2, 80000), nvf("b", 2, 80000), nvf("c", 2, 80000)});
  auto pol = policy("fgd");
  VerdictCache cache;
  const PodRequest p = PodBuilder("p1").gpu_memory("10Gi").spec();
  auto first = cache.select(s, p, *pol);
  REQUIRE(first.is_ok());
  REQUIRE(first->has_value());
  CHECK(cache.evaluations() == 3);
  REQUIRE(s.reserve(p, (*first)->node, (*first)->choice).is_ok());
  const PodRequest q = PodBuilder("p2").gpu_memory("10Gi").spec();  // same shape, another pod
  auto second = cache.select(s, q, *pol);
  REQUIRE(second.is_ok());
  REQUIRE(second->has_value());
  CHECK(cache.evaluations() == 4);  // only the node p1 went to
  const auto plain = select(s, q, *pol);
  REQUIRE(plain.has_value());
  CHECK((*second)->node == plain->node);
  CHECK((*second)->choice.gpus == plain->choice.gpus);
  CHECK((*second)->choice.memory == plain->choice.memory);
  // Nothing changed: nothing is evaluated, and the GPUs handed over before are worked out again.
  auto third = cache.select(s, q, *pol);
  REQUIRE(third.is_ok());
  REQUIRE(third->has_value());
  CHECK(cache.evaluations() == 4);
  CHECK((*third)->node == plain->node);
  CHECK((*third)->choice.gpus == plain->choice.gpus);
  // A shape that fits nowhere: no node chosen, none of the others' entries touched.
  auto none = cache.select(s, PodBuilder("big").gpu_memory("100Gi").spec(), *pol);
  REQUIRE(none.is_ok());
  CHECK_FALSE(none->has_value());
  CHECK(cache.evaluations() == 4);  // no node's summary could take it: nothing evaluated
}

}  // namespace
}  // namespace fracpack::test
