// docs/placement.md rules 18 and 19: KAI's sub-groups (minMember per leaf, minSubGroup per level)
// and topology constraints (required and preferred node-label levels), with hand-computed answers.
#include <doctest/doctest.h>

#include "support/builders.hpp"

namespace fracpack::test {
namespace {

/// A node with one 80 GB GPU, labelled with its zone and rack.
NodeBuilder node(const std::string& name, const std::string& zone = "z1", const std::string& rack = "r1") {
  NodeBuilder b(name);
  b.gpus(1, 81920).label("zone", zone).label("rack", rack);
  return b;
}

/// `count` one-GPU pods of PodGroup g in sub-group `sub` ("" for none).
void add(Gang& g, const std::string& sub, int count, int gpus = 1) {
  for (int i = 0; i < count; ++i) {
    PodBuilder b((sub.empty() ? "p" : sub) + "-" + std::to_string(g.members.size()));
    b.whole(gpus).gang("g");
    if (!sub.empty()) b.label("kai.scheduler/subgroup-name", sub);
    g.members.push_back(b.spec());
  }
}

SubGroupSpec leaf(const std::string& name, int min_member, const std::string& parent = "") {
  SubGroupSpec s;
  s.name = name;
  s.min_member = min_member;
  s.parent = parent;
  return s;
}

int placed(const std::vector<PlaceOutcome>& outcomes) {
  return static_cast<int>(std::count_if(outcomes.begin(), outcomes.end(), [](const PlaceOutcome& o) { return o.placement.has_value(); }));
}

TEST_CASE("sub-groups: each leaf's minMember is placed together, then the rest of its pods") {
  GangRule rule;
  rule.sub_groups = {leaf("a", 2), leaf("b", 1)};
  REQUIRE_FALSE(check_gang_rule(rule));
  Gang g{"default/g", {}, 0, &rule, {}};
  add(g, "a", 3);
  add(g, "b", 1);
  CHECK(gang_minimum_by_count(g) == std::vector<std::size_t>{0, 1, 3});  // a's first two and b's one

  ClusterState four = cluster({node("n1"), node("n2"), node("n3"), node("n4")});
  auto all = place_gang(four, g, *policy("pack"));
  CHECK(placed(all) == 4);

  ClusterState two = cluster({node("n1"), node("n2")});  // the minimum is three pods: nothing is placed
  auto none = place_gang(two, g, *policy("pack"));
  CHECK(placed(none) == 0);
  CHECK(two.allocation_count() == 0);
  CHECK(none[3].why.summary.find("gang default/g needs 3 pods placed together; once its first 2 are placed") != std::string::npos);
  CHECK(none[3].why.summary.find("this member (of sub-group b) fits nowhere") != std::string::npos);
  CHECK(none[0].why.summary.find("member default/b-3 fits nowhere, so none is placed") != std::string::npos);

  ClusterState three = cluster({node("n1"), node("n2"), node("n3")});  // the minimum fits; a's third does not
  auto most = place_gang(three, g, *policy("pack"));
  CHECK(placed(most) == 3);
  CHECK_FALSE(most[2].placement);
}

TEST_CASE("minSubGroup: the gang needs that many children satisfied, and takes the ones that fit") {
  GangRule rule;  // KAI's example: 3 of 4 prefill replicas, each a gang of 2
  rule.min_sub_group = 3;
  rule.sub_groups = {leaf("r0", 2), leaf("r1", 2), leaf("r2", 2), leaf("r3", 2)};
  REQUIRE_FALSE(check_gang_rule(rule));
  Gang g{"default/g", {}, 0, &rule, {}};
  for (const char* r : {"r0", "r1", "r2", "r3"}) add(g, r, 2);
  CHECK(gang_minimum_by_count(g).size() == 6);

  // Seven GPUs: three replicas (6 pods); the fourth replica needs 2 together and 1 GPU is left:
  // none of it is placed (never a part below its minimum).
  std::vector<NodeBuilder> seven;
  for (int i = 0; i < 7; ++i) seven.push_back(node("n" + std::to_string(i)));
  ClusterState s = cluster(seven);
  auto out = place_gang(s, g, *policy("pack"));
  CHECK(placed(out) == 6);
  CHECK_FALSE(out[6].placement);
  CHECK_FALSE(out[7].placement);
  CHECK(out[6].why.summary.find("sub-group r3") != std::string::npos);

  // r0 asks for 2 GPUs a pod, which no node has: r1, r2 and r3 are the three replicas placed.
  Gang big{"default/g", {}, 0, &rule, {}};
  add(big, "r0", 2, 2);
  for (const char* r : {"r1", "r2", "r3"}) add(big, r, 2);
  ClusterState t = cluster(seven);
  auto chosen = place_gang(t, big, *policy("pack"));
  CHECK_FALSE(chosen[0].placement);
  CHECK_FALSE(chosen[1].placement);
  for (std::size_t i = 2; i < 8; ++i) CHECK(chosen[i].placement);

  // Only two replicas fit (five GPUs): the gang is not placed at all.
  ClusterState five = cluster({node("n1"), node("n2"), node("n3"), node("n4"), node("n5")});
  CHECK(placed(place_gang(five, g, *policy("pack"))) == 0);
  CHECK(five.allocation_count() == 0);
}

TEST_CASE("nested sub-groups: a parent's minSubGroup counts its children, leaves count pods") {
  GangRule rule;  // KAI's leader-worker example: decode and prefill, each a leader and workers
  SubGroupSpec decode = leaf("decode", 0);
  SubGroupSpec prefill = leaf("prefill", 0);
  rule.sub_groups = {decode, leaf("decode-leader", 1, "decode"), leaf("decode-workers", 2, "decode"), prefill,
                     leaf("prefill-leader", 1, "prefill"), leaf("prefill-workers", 2, "prefill")};
  REQUIRE_FALSE(check_gang_rule(rule));
  Gang g{"default/g", {}, 0, &rule, {}};
  add(g, "decode-leader", 1);
  add(g, "decode-workers", 2);
  add(g, "prefill-leader", 1);
  add(g, "prefill-workers", 1);  // one worker short: the gang waits
  CHECK(gang_minimum_by_count(g).empty());
  std::string why;
  CHECK_FALSE(gang_has_enough_members(g, &why));
  CHECK(why.find("sub-group prefill-workers has 1 of the 2 members it still needs pending") != std::string::npos);
  ClusterState s = cluster({node("n1"), node("n2"), node("n3"), node("n4"), node("n5"), node("n6")});
  auto out = place_gang(s, g, *policy("pack"));
  CHECK(placed(out) == 0);
  CHECK(out[0].why.summary.find("it waits for the rest") != std::string::npos);
  add(g, "prefill-workers", 1);
  CHECK(placed(place_gang(s, g, *policy("pack"))) == 6);
}

TEST_CASE("a leaf with minMember 0 needs one pod, as in KAI: it cannot satisfy a level with none placed") {
  // The PodGroup needs one of a (no pods) and x (two pods, one zone); x's zones hold one GPU each.
  GangRule rule;
  rule.topology.required_level = "zone";
  rule.min_sub_group = 1;
  rule.sub_groups = {leaf("a", 0), leaf("x", 2)};
  Gang g{"default/g", {}, 0, &rule, {}};
  add(g, "x", 2);
  ClusterState s = cluster({node("n1", "z1"), node("n2", "z2")});
  auto out = place_gang(s, g, *policy("pack"));
  CHECK(placed(out) == 0);  // never one pod in each zone
  CHECK(s.allocation_count() == 0);
}

TEST_CASE("a pod without a sub-group label joins the sub-group named default, as in KAI") {
  GangRule rule;
  rule.sub_groups = {leaf("default", 1), leaf("b", 1)};
  Gang g{"default/g", {}, 0, &rule, {}};
  add(g, "", 1);
  add(g, "b", 1);
  ClusterState s = cluster({node("n1"), node("n2")});
  CHECK(placed(place_gang(s, g, *policy("pack"))) == 2);
  GangRule no_default;
  no_default.sub_groups = {leaf("b", 1)};
  Gang h{"default/h", {}, 0, &no_default, {}};
  add(h, "", 1);
  ClusterState t = cluster({node("n1")});
  auto out = place_gang(t, h, *policy("pack"));
  CHECK(out[0].why.summary.find("it has no label kai.scheduler/subgroup-name, so its sub-group is \"default\"") != std::string::npos);
  // A running member outside the tree counts for nothing.
  CHECK(gang_running_in_tree(Gang{"default/h", {}, 0, &no_default, {{"", 0}, {"b", 0}}}) == 1);
}

TEST_CASE("a pod whose sub-group label names no leaf is refused, and the gang goes on without it") {
  GangRule rule;
  rule.sub_groups = {leaf("a", 1)};
  Gang g{"default/g", {}, 0, &rule, {}};
  add(g, "a", 1);
  add(g, "zzz", 1);
  ClusterState s = cluster({node("n1"), node("n2")});
  auto out = place_gang(s, g, *policy("pack"));
  CHECK(out[0].placement);
  CHECK_FALSE(out[1].placement);
  CHECK(out[1].why.code == Code::kUnschedulableAndUnresolvable);
  CHECK(out[1].why.summary.find("kai.scheduler/subgroup-name = \"zzz\" names no leaf sub-group of PodGroup default/g (its leaves: a)") !=
        std::string::npos);
}

TEST_CASE("required topology: every pod under one value of the level, the tightest that holds them") {
  // rack r1 has two nodes, rack r2 three: three pods go to r2, two to r1 (the tighter that holds them).
  auto nodes = [] {
    return cluster({node("a1", "z1", "r1"), node("a2", "z1", "r1"), node("b1", "z1", "r2"), node("b2", "z1", "r2"),
                    node("b3", "z1", "r2")});
  };
  GangRule rule;
  rule.topology.required_level = "rack";
  Gang three{"default/g", {}, 0, &rule, {}};
  add(three, "", 3);
  ClusterState s = nodes();
  auto out = place_gang(s, three, *policy("pack"));
  REQUIRE(placed(out) == 3);
  for (const auto& o : out) CHECK(o.placement->node.starts_with("b"));
  Gang two{"default/h", {}, 0, &rule, {}};
  add(two, "", 2);
  ClusterState t = nodes();
  auto pair = place_gang(t, two, *policy("spread"));  // even a spreading policy stays within one rack
  REQUIRE(placed(pair) == 2);
  CHECK(pair[0].placement->node.starts_with("a"));
  CHECK(pair[1].placement->node.starts_with("a"));

  Gang four{"default/g", {}, 0, &rule, {}};  // five free nodes, but no rack holds four
  add(four, "", 4);
  ClusterState u = nodes();
  auto refused = place_gang(u, four, *policy("pack"));
  CHECK(placed(refused) == 0);
  CHECK(u.allocation_count() == 0);
  CHECK(refused[3].why.summary.find("within one value of node label rack") != std::string::npos);

  GangRule preferred;  // preferred only: tried first, and given up when no rack holds them
  preferred.topology.preferred_level = "rack";
  Gang spread{"default/g", {}, 0, &preferred, {}};
  add(spread, "", 4);
  ClusterState v = nodes();
  CHECK(placed(place_gang(v, spread, *policy("pack"))) == 4);

  GangRule missing;  // a level no node carries places nothing
  missing.topology.required_level = "no-such-label";
  Gang lost{"default/g", {}, 0, &missing, {}};
  add(lost, "", 1);
  ClusterState w = nodes();
  auto nowhere = place_gang(w, lost, *policy("pack"));
  CHECK_FALSE(nowhere[0].placement);
  CHECK(nowhere[0].why.summary.find("no node it may use has one") != std::string::npos);
}

TEST_CASE("topology per sub-group inside the PodGroup's: each part in its own rack, all in one zone") {
  // Zone z2 has one rack of two nodes; z1 two racks of two. Sub-groups a and b each need a rack,
  // the PodGroup a zone: z2 is tighter and tried first, but holds only one part; z1 holds both.
  ClusterState s = cluster({node("a1", "z1", "r1"), node("a2", "z1", "r1"), node("b1", "z1", "r2"), node("b2", "z1", "r2"),
                            node("c1", "z2", "r3"), node("c2", "z2", "r3")});
  GangRule rule;
  rule.topology.required_level = "zone";
  rule.sub_groups = {leaf("a", 2), leaf("b", 2)};
  rule.sub_groups[0].topology.required_level = "rack";
  rule.sub_groups[1].topology.required_level = "rack";
  Gang g{"default/g", {}, 0, &rule, {}};
  add(g, "a", 2);
  add(g, "b", 2);
  auto out = place_gang(s, g, *policy("pack"));
  REQUIRE(placed(out) == 4);
  CHECK(out[0].placement->node.starts_with("a"));
  CHECK(out[1].placement->node.starts_with("a"));
  CHECK(out[2].placement->node.starts_with("b"));
  CHECK(out[3].placement->node.starts_with("b"));
}

TEST_CASE("a refused sub-group member's reason names the PodGroup's topology as well as its own sub-group") {
  // Two racks of two one-GPU nodes; the PodGroup needs one rack for 1 + 2 pods: no rack holds them.
  ClusterState s = cluster({node("a1", "z1", "r1"), node("a2", "z1", "r1"), node("b1", "z1", "r2"), node("b2", "z1", "r2")});
  GangRule rule;
  rule.topology.required_level = "rack";
  rule.sub_groups = {leaf("leader", 1), leaf("workers", 2)};
  Gang g{"default/g", {}, 0, &rule, {}};
  add(g, "leader", 1);
  add(g, "workers", 2);
  auto out = place_gang(s, g, *policy("pack"));
  CHECK(placed(out) == 0);
  CHECK(s.allocation_count() == 0);
  CAPTURE(out[2].why.summary);
  CHECK(out[2].why.summary.find("this member (of sub-group workers, within one value of node label rack; the counts are those of "
                                "the value that came closest) fits nowhere") != std::string::npos);

  rule.sub_groups[1].topology.required_level = "zone";  // the sub-group's own level first, then the PodGroup's
  ClusterState t = cluster({node("a1", "z1", "r1"), node("a2", "z1", "r1"), node("b1", "z1", "r2"), node("b2", "z1", "r2")});
  auto again = place_gang(t, g, *policy("pack"));
  CHECK(placed(again) == 0);
  CAPTURE(again[2].why.summary);
  CHECK(again[2].why.summary.find("(of sub-group workers, within one value of node label zone, within one value of node label rack;") !=
        std::string::npos);
}

TEST_CASE("members already running anchor the topology and count toward the minimum") {
  ClusterState s = cluster({node("a1", "z1", "r1"), node("a2", "z1", "r1"), node("b1", "z1", "r2"), node("b2", "z1", "r2"),
                            node("b3", "z1", "r2")});
  const std::size_t a1 = *s.find_node("a1");
  NodeMask only_a1(s.node_count(), false);
  only_a1[a1] = true;
  PodBuilder runner("runs");
  runner.whole(1).gang("g");
  REQUIRE(place_pod(s, runner.spec(), *policy("pack"), &only_a1).placement);  // one member runs on a1 (rack r1)
  GangRule rule;
  rule.min_member = 2;
  rule.topology.required_level = "rack";
  Gang g{"default/g", {}, 0, &rule, {{"", a1}}};
  add(g, "", 2);
  CHECK(gang_minimum_by_count(g).size() == 1);  // one more makes two
  auto out = place_gang(s, g, *policy("pack"));
  REQUIRE(out[0].placement);
  CHECK(out[0].placement->node == "a2");  // r1, though r2 is emptier
  CHECK_FALSE(out[1].placement);          // r1 is full: the third may not leave it
  CHECK(out[1].why.summary.find("rack") != std::string::npos);

  GangRule subs;
  subs.sub_groups = {leaf("a", 2), leaf("b", 1)};
  Gang running{"default/g", {}, 0, &subs, {{"a", 0}, {"a", 1}, {"b", 2}}};
  CHECK(gang_satisfied(running));
  running.running.pop_back();  // b lost its member: stale, in KAI's terms
  CHECK_FALSE(gang_satisfied(running));
}

}  // namespace
}  // namespace fracpack::test
