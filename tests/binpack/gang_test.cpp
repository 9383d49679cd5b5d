// docs/placement.md rule 7: gangs are all-or-nothing; InfiniBand gangs prefer one network leaf.
#include <doctest/doctest.h>

#include "support/builders.hpp"

namespace fracpack::test {
namespace {

NodeBuilder ib_node(const std::string& name, const std::string& leaf) {
  NodeBuilder b(name);
  b.gpus(8, 143771).allocatable("rdma/ib", "8").label("network.topology.nvidia.com/leaf", leaf);
  return b;
}

Gang gang_of(const std::string& name, int members, int gpus, bool infiniband, int min_member = 0) {
  Gang g;
  g.name = name;
  g.min_member = min_member;
  for (int i = 0; i < members; ++i) {
    PodBuilder b(name + "-" + std::to_string(i));
    b.whole(gpus).gang(name);
    if (infiniband) b.infiniband(4);
    g.members.push_back(b.spec());
  }
  return g;
}

TEST_CASE("a gang that does not fit whole places nobody") {
  ClusterState s = cluster({ib_node("n1", "leaf-a"), ib_node("n2", "leaf-a")});
  auto outcomes = place_gang(s, gang_of("job", 3, 8, false), *policy("pack"));
  REQUIRE(outcomes.size() == 3);
  for (const auto& o : outcomes) CHECK_FALSE(o.placement);
  CHECK(s.allocation_count() == 0);
  CHECK(outcomes[2].why.summary.find("this member fits nowhere") != std::string::npos);
  CHECK(outcomes[0].why.summary.find("member default/job-2 fits nowhere, so none is placed") != std::string::npos);
  CHECK(s.check_invariants().empty());
}

TEST_CASE("minMember: the first min members are all-or-nothing, the rest are placed alone") {
  ClusterState s = cluster({ib_node("n1", "leaf-a"), ib_node("n2", "leaf-a")});
  auto outcomes = place_gang(s, gang_of("job", 3, 8, false, 2), *policy("pack"));
  REQUIRE(outcomes.size() == 3);
  CHECK(outcomes[0].placement);
  CHECK(outcomes[1].placement);
  CHECK_FALSE(outcomes[2].placement);
  CHECK(s.allocation_count() == 2);
}

TEST_CASE("an InfiniBand gang lands under one network leaf when one holds it") {
  // Name order alternates leaves, so plain packing would split the gang across leaves.
  ClusterState s = cluster({ib_node("n1", "leaf-a"), ib_node("n2", "leaf-b"), ib_node("n3", "leaf-b"),
                            ib_node("n4", "leaf-a")});
  auto outcomes = place_gang(s, gang_of("ib", 2, 8, true), *policy("pack"));
  REQUIRE((outcomes[0].placement && outcomes[1].placement));
  CHECK(outcomes[0].placement->node == "n1");
  CHECK(outcomes[1].placement->node == "n4");
  // The same pods without InfiniBand follow plain packing.
  ClusterState plain = cluster({ib_node("n1", "leaf-a"), ib_node("n2", "leaf-b"), ib_node("n3", "leaf-b"),
                                ib_node("n4", "leaf-a")});
  auto p = place_gang(plain, gang_of("job", 2, 8, false), *policy("pack"));
  CHECK(p[1].placement->node == "n2");
}

TEST_CASE("an InfiniBand gang takes the tightest leaf that holds it, and spans leaves when none does") {
  ClusterState s = cluster({ib_node("a1", "leaf-a"), ib_node("a2", "leaf-a"), ib_node("a3", "leaf-a"),
                            ib_node("b1", "leaf-b"), ib_node("b2", "leaf-b")});
  auto two = place_gang(s, gang_of("two", 2, 8, true), *policy("pack"));
  CHECK(two[0].placement->node == "b1");  // leaf-b is the smaller leaf that holds two nodes
  CHECK(two[1].placement->node == "b2");
  auto four = place_gang(s, gang_of("four", 4, 8, true), *policy("pack"));
  CHECK_FALSE(four[0].placement);  // only three nodes are left
  CHECK(s.allocation_count() == 2);
  ClusterState t = cluster({ib_node("a1", "leaf-a"), ib_node("b1", "leaf-b")});
  auto spans = place_gang(t, gang_of("span", 2, 8, true), *policy("pack"));
  REQUIRE((spans[0].placement && spans[1].placement));
  CHECK(spans[0].placement->node != spans[1].placement->node);
}

TEST_CASE("Ledger::place_gang is atomic for concurrent readers") {
  Ledger ledger(cluster({ib_node("n1", "leaf-a"), ib_node("n2", "leaf-a")}));
  auto outcomes = ledger.place_gang(gang_of("job", 3, 8, true), *policy("pack"));
  CHECK_FALSE(outcomes[0].placement);
  ledger.read([](const ClusterState& s) {
    CHECK(s.allocation_count() == 0);
    return 0;
  });
}

}  // namespace
}  // namespace fracpack::test
