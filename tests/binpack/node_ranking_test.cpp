// NodeRanking answers what a look at every node answers: the smallest key (lowest node among
// equal keys), the nodes tied with it on (tier, value), and which nodes changed since a sync.
#include <doctest/doctest.h>

#include <map>
#include <optional>
#include <random>
#include <vector>

#include "fracpack/binpack/node_ranking.hpp"

namespace fracpack::test {
namespace {

NodeKey key_of(std::int64_t tier, std::int64_t value, std::int64_t value2 = 0) {
  NodeKey k;
  k.tier = tier;
  k.value = value;
  k.value2 = value2;
  return k;
}

TEST_CASE("NodeRanking: the best node, its ties and the changed nodes, against a look at every node") {
  for (std::size_t nodes : {1u, 2u, 7u, 64u, 65u, 300u}) {
    CAPTURE(nodes);
    std::mt19937_64 rng(nodes);
    NodeRanking ranking;
    ranking.reset(nodes);
    std::vector<std::optional<NodeKey>> truth(nodes);
    std::vector<std::uint64_t> stamps(nodes, 1);
    std::uint64_t next_stamp = 2;
    // The first sync reports every node.
    std::vector<std::size_t> reported;
    ranking.sync(stamps, [&](std::size_t n) { reported.push_back(n); });
    CHECK(reported.size() == nodes);
    CHECK_FALSE(ranking.best().has_value());
    for (int step = 0; step < 2000; ++step) {
      // A few nodes change; the sync reports exactly those, in node order, and re-keys them.
      std::map<std::size_t, bool> changed;
      const int count = static_cast<int>(rng() % 4);
      for (int c = 0; c < count; ++c) {
        const std::size_t n = rng() % nodes;
        stamps[n] = next_stamp++;
        changed[n] = true;
      }
      reported.clear();
      ranking.sync(stamps, [&](std::size_t n) {
        reported.push_back(n);
        if (rng() % 3 == 0) {
          truth[n].reset();
          ranking.clear(n);
        } else {
          truth[n] = key_of(static_cast<std::int64_t>(rng() % 3), static_cast<std::int64_t>(rng() % 3),
                            static_cast<std::int64_t>(rng() % 2));
          ranking.set(n, *truth[n]);
        }
      });
      std::vector<std::size_t> expected;
      for (const auto& [n, _] : changed) expected.push_back(n);
      REQUIRE(reported == expected);
      // The best: the smallest key, the lowest node among equal keys.
      std::optional<std::size_t> best;
      for (std::size_t n = 0; n < nodes; ++n) {
        if (truth[n] && (!best || *truth[n] < *truth[*best])) best = n;
      }
      REQUIRE(ranking.best() == best);
      if (!best) continue;
      CHECK(ranking.key(*best) == *truth[*best]);
      std::vector<std::size_t> tied;
      for (std::size_t n = 0; n < nodes; ++n) {
        if (truth[n] && truth[n]->tier == truth[*best]->tier && truth[n]->value == truth[*best]->value) tied.push_back(n);
      }
      std::vector<std::size_t> listed;
      ranking.ties([&](std::size_t n, const NodeKey& k) {
        listed.push_back(n);
        CHECK(k == *truth[n]);
      });
      CHECK(listed == tied);
    }
  }
}

TEST_CASE("NodeRanking: reset forgets every key and reports every node again") {
  NodeRanking ranking;
  ranking.reset(3);
  std::vector<std::uint64_t> stamps{5, 6, 7};
  ranking.sync(stamps, [&](std::size_t n) { ranking.set(n, key_of(static_cast<std::int64_t>(3 - n), 0)); });
  CHECK(ranking.best() == std::optional<std::size_t>(2));
  int again = 0;
  ranking.sync(stamps, [&](std::size_t) { ++again; });
  CHECK(again == 0);  // nothing moved
  ranking.reset(3);
  CHECK_FALSE(ranking.best().has_value());
  ranking.sync(stamps, [&](std::size_t) { ++again; });
  CHECK(again == 3);
}

}  // namespace
}  // namespace fracpack::test
