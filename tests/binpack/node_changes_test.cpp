// Nodes added, changed and removed while pods come and go: after every step every invariant
// holds, and every decision (the best node, each node's verdict, the cached verdicts and ranks)
// equals the one a ledger built from scratch on the same nodes and pods gives.
#include <map>

#include <doctest/doctest.h>

#include "fracpack/binpack/verdict_cache.hpp"
#include "support/builders.hpp"
#include "support/random_cluster.hpp"

namespace fracpack::test {
namespace {

struct Live {
  PodRequest pod;
  std::uint64_t seq = 0;
};

/// A ledger built from scratch: `s`'s nodes, then every allocation re-adopted in record order.
ClusterState rebuilt(const ClusterState& s, const std::map<std::string, Live>& live) {
  std::vector<NodeSpec> nodes;
  for (std::size_t n = 0; n < s.node_count(); ++n) nodes.push_back(s.node(n));
  auto created = ClusterState::create(std::move(nodes), s.config());
  REQUIRE(created.is_ok());
  std::vector<const Allocation*> order;
  for (const auto& [key, _] : live) order.push_back(s.allocation(key));
  std::sort(order.begin(), order.end(), [](const Allocation* a, const Allocation* b) { return a->seq < b->seq; });
  for (const Allocation* a : order) {
    Status st = created->adopt(live.at(a->pod).pod, *created->find_node(s.node(a->node).name), a->choice.gpus);
    REQUIRE_MESSAGE(st.is_ok(), st.message());
  }
  return std::move(*created);
}

/// Same decisions for `probe` on both ledgers, compared by node name.
void same_decisions(const ClusterState& live, const ClusterState& fresh, const PodRequest& probe, const Policy& pol,
                    VerdictCache& cache) {
  auto a = select(live, probe, pol);
  auto b = select(fresh, probe, pol);
  REQUIRE(a.has_value() == b.has_value());
  if (a) {
    CHECK(live.node(a->node).name == fresh.node(b->node).name);
    CHECK(a->choice == b->choice);
  }
  std::vector<std::size_t> all(live.node_count());
  for (std::size_t n = 0; n < all.size(); ++n) all[n] = n;
  std::map<std::string, Code> expected;
  for (auto& [n, verdict] : filter_nodes(fresh, probe)) expected[fresh.node(n).name] = verdict.code;
  cache.visit(live, probe, pol, all, [&](std::size_t n, const VerdictCache::Entry& e) { CHECK(e.code == expected.at(live.node(n).name)); });
  auto ranked_fresh = rank_nodes(fresh, probe, pol);
  auto ranked_live = cache.rank(live, probe, pol, all);
  REQUIRE(ranked_live.size() == ranked_fresh.size());
  for (std::size_t r = 0; r < ranked_live.size(); ++r) CHECK(live.node(ranked_live[r].node).name == fresh.node(ranked_fresh[r].node).name);
}

TEST_CASE("nodes added, changed and removed under random placements: the ledger equals one built from scratch") {
  int node_changes = 0;
  int readopted = 0;
  for (const std::string& name : all_policy_names()) {
    CAPTURE(name);
    auto pol = policy(name);
    for (std::uint32_t seed = 1; seed <= 3; ++seed) {
      CAPTURE(seed);
      RandomWorld world(seed * 104729u);
      ClusterState s = world.cluster(world.uniform(1, 12));
      std::map<std::string, Live> live;
      VerdictCache cache(8);
      std::vector<PodRequest> probes;
      for (int i = 0; i < 4; ++i) probes.push_back(world.pod(fmt::format("probe{}", i)));
      for (int step = 0; step < 150; ++step) {
        CAPTURE(step);
        const int op = world.uniform(0, 99);
        if (op < 45) {
          PodRequest p = world.pod(fmt::format("p{}", step));
          if (place_pod(s, p, *pol).placement) live[p.key()] = {p, s.allocation(p.key())->seq};
        } else if (op < 60 && !live.empty()) {
          auto it = std::next(live.begin(), world.uniform(0, static_cast<int>(live.size()) - 1));
          REQUIRE(s.release(it->first));
          live.erase(it);
        } else if (op < 72) {  // a new node, its name anywhere in the order
          NodeSpec n = world.node(fmt::format("node-{}{}", world.uniform(0, 20), static_cast<char>('a' + world.uniform(0, 25))));
          if (!s.find_node(n.name)) {
            REQUIRE(s.add_node(n).is_ok());
            ++node_changes;
          }
        } else if (op < 80 && s.node_count() > 1) {  // a node goes, its pods with it
          const auto n = static_cast<std::size_t>(world.uniform(0, static_cast<int>(s.node_count()) - 1));
          for (const Allocation& a : s.remove_node(n)) REQUIRE(live.erase(a.pod) == 1);
          ++node_changes;
        } else if (s.node_count() > 0) {  // a node changes: labels and cordon, or its GPUs
          const auto n = static_cast<std::size_t>(world.uniform(0, static_cast<int>(s.node_count()) - 1));
          NodeSpec next = world.chance(0.5) ? world.node(s.node(n).name) : s.node(n);
          next.schedulable = world.chance(0.8);
          next.labels["zone"] = world.chance(0.5) ? "a" : "b";
          auto taken = s.update_node(n, next);
          REQUIRE(taken.is_ok());
          for (const Allocation& a : *taken) {  // re-adopted on the new GPUs, or gone
            if (s.adopt(live.at(a.pod).pod, n, a.choice.gpus).is_ok()) {
              ++readopted;
            } else {
              live.erase(a.pod);
            }
          }
          ++node_changes;
        }
        const std::string broken = s.check_invariants();
        REQUIRE_MESSAGE(broken.empty(), broken);
        const ClusterState fresh = rebuilt(s, live);
        for (const auto& probe : probes) same_decisions(s, fresh, probe, *pol, cache);
      }
    }
  }
  MESSAGE(node_changes, " node changes, ", readopted, " pods re-adopted after a GPU change");
  CHECK(node_changes > 500);
  CHECK(readopted > 20);
}

TEST_CASE("order labels follow names through many insertions at one place") {
  auto created = ClusterState::create({}, PlacementConfig{});
  REQUIRE(created.is_ok());
  ClusterState s = std::move(*created);
  // Always between "a" and the last one added: halves the same gap until it must relabel.
  REQUIRE(s.add_node(nvf("a", 1, 80000).spec()).is_ok());
  REQUIRE(s.add_node(nvf("b", 1, 80000).spec()).is_ok());
  std::string name = "az";
  for (int i = 0; i < 60; ++i) {  // the first gap is used up after 32: one relabelling
    REQUIRE(s.add_node(nvf(name, 1, 80000).spec()).is_ok());
    name.insert(1, "-");  // "a-z" < "az": each new name sorts before the last
    const std::string broken = s.check_invariants();
    REQUIRE_MESSAGE(broken.empty(), broken);
  }
  CHECK(s.node_count() == 62);
  CHECK(s.add_node(nvf("a", 1, 80000).spec()).status().code() == Code::kAlreadyExists);
}

}  // namespace
}  // namespace fracpack::test
