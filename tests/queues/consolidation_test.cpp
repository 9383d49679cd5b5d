// Consolidation (docs/queues.md rule 14): room for a pending job made by moving running pods,
// every moved pod placed again. Scenarios from KAI's own consolidation tests
// (pkg/scheduler/actions/integration_tests/consolidation/consolidationFractional_test.go) and its
// field failure KAI PR 1565, each small enough to compute by hand.
#include <doctest/doctest.h>

#include "fracpack/queues/consolidation.hpp"
#include "fracpack/queues/failed_pods.hpp"
#include "fracpack/queues/scheduling_state.hpp"
#include "support/builders.hpp"

namespace fracpack::test {
namespace {

/// A scheduling state fed with nodes, Queues and pods, as place or serve would feed it.
struct Cluster {
  SchedulingState state;
  std::shared_ptr<const Policy> pack = *make_policy("pack");

  explicit Cluster(const std::vector<NodeBuilder>& nodes, const std::vector<json>& queue_objects = {},
                   SchedulingState::Options options = {})
      : state(std::move(options)) {
    ObjectChange c;
    for (const auto& n : nodes) c.nodes.push_back(n.spec());
    for (const auto& q : queue_objects) c.queues.push_back(*queues::decode_queue(q));
    REQUIRE(state.validate(c).is_ok());
    (void)state.apply(c);
  }
  /// A running pod on `node`, holding the GPUs listed ("0", "1,2"; "" for a CPU-only pod).
  void run(PodBuilder pod, const std::string& node, const std::string& gpus) {
    pod.bound_to(node);
    if (!gpus.empty()) pod.annotation("fracpack.io/gpus", gpus);
    REQUIRE(state.observe(pod.spec()) == PodStanding::kBound);
  }
  /// job0 and job1, a `portion` share each, on GPUs 0 and 1 of node0.
  void share_per_gpu(const std::string& portion) {
    run(PodBuilder("job0").fraction(portion), "node0", "0");
    run(PodBuilder("job1").fraction(portion), "node0", "1");
  }
  /// The ledger and the records agree, and every rule holds.
  void check_consistent() {
    CHECK(state.check_invariants().empty());
    CHECK(state.verify().empty());
  }
  /// A pending pod, observed; returned as the state holds it.
  PodRequest wait(const PodBuilder& pod) {
    const PodRequest p = pod.spec();
    REQUIRE(state.observe(p) == PodStanding::kPending);
    REQUIRE_FALSE(select(state.cluster(), p, *pack).has_value());  // it fits nowhere as things stand
    return state.pod(p.key())->pod;
  }
  std::optional<queues::ConsolidationPlan> plan(const PodRequest& pod, queues::ConsolidationLimits limits = {}) {
    return state.plan_consolidation({pod}, *pack, limits);
  }
  [[nodiscard]] std::vector<int> gpus_of(const std::string& key) const { return state.cluster().allocation(key)->choice.gpus; }
  [[nodiscard]] std::string node_of(const std::string& key) const {
    return state.cluster().node(state.cluster().allocation(key)->node).name;
  }
};

PodBuilder share(const std::string& name, const std::string& portion) { return PodBuilder(name).fraction(portion); }

std::vector<std::string> moved_pods(const queues::ConsolidationPlan& plan) {
  std::vector<std::string> out;
  for (const auto& m : plan.moves) out.push_back(m.pod);
  return out;
}

TEST_CASE("KAI: two halves on two GPUs, a whole-GPU job pending: one half moves beside the other") {
  // consolidationFractional_test "consolidate fractional GPUs and insert a whole train job".
  Cluster c({nvf("node0", 2, 40000)});
  c.share_per_gpu("0.5");
  const PodRequest pending = c.wait(PodBuilder("pending").whole(1));
  auto plan = c.plan(pending);
  REQUIRE(plan.has_value());
  // Both GPUs cost one move of 20000 MiB: the lower index is freed, so job0 goes to GPU 1.
  CHECK(moved_pods(*plan) == std::vector<std::string>{"default/job0"});
  CHECK(plan->moves[0].from_gpus == std::vector<int>{0});
  CHECK(plan->moves[0].to_node == "node0");
  CHECK(plan->moves[0].to.gpus == std::vector<int>{1});
  CHECK(plan->moved_memory == MiB{20000});
  REQUIRE(plan->placements.size() == 1);
  CHECK(plan->placements[0].choice.gpus == std::vector<int>{0});
  // Planning changed nothing.
  CHECK(c.gpus_of("default/job0") == std::vector<int>{0});
  CHECK(c.state.pod("default/pending")->standing == PodStanding::kPending);
  REQUIRE(c.state.apply_consolidation({pending}, *plan).is_ok());
  CHECK(c.gpus_of("default/job0") == std::vector<int>{1});
  CHECK(c.gpus_of("default/job1") == std::vector<int>{1});
  CHECK(c.gpus_of("default/pending") == std::vector<int>{0});
  CHECK(c.state.pod("default/pending")->standing == PodStanding::kBound);
  c.check_consistent();
}

TEST_CASE("a plan that moves one pod twice is refused with the ledger as it was") {
  Cluster c({nvf("node0", 2, 40000)});
  c.share_per_gpu("0.5");
  const PodRequest pending = c.wait(PodBuilder("pending").whole(1));
  auto plan = c.plan(pending);
  REQUIRE(plan.has_value());
  REQUIRE(plan->moves.size() == 1);
  plan->moves.push_back(plan->moves.front());  // stale or corrupt: the second take finds nothing
  const Status st = c.state.apply_consolidation({pending}, *plan);
  CHECK(st.code() == Code::kInternal);
  CHECK(c.gpus_of("default/job0") == std::vector<int>{0});
  CHECK(c.gpus_of("default/job1") == std::vector<int>{1});
  CHECK(c.state.pod("default/pending")->standing == PodStanding::kPending);
  c.check_consistent();
}

TEST_CASE("KAI: halves consolidated to make room for a 0.7 share and for a memory request") {
  // "consolidate fractional GPUs and insert a fractional train job", then its GPU-memory twin.
  Cluster c({nvf("node0", 2, 40000)});
  c.share_per_gpu("0.5");
  const PodRequest seventy = c.wait(share("pending", "0.7"));
  auto plan = c.plan(seventy);
  REQUIRE(plan.has_value());
  // A 0.7 share needs 28000 MiB where 20000 are free on each GPU: freeing 8000 takes one move.
  CHECK(plan->moves.size() == 1);
  REQUIRE(c.state.apply_consolidation({seventy}, *plan).is_ok());
  CHECK(c.gpus_of("default/job0") == c.gpus_of("default/job1"));
  CHECK(c.gpus_of("default/pending") != c.gpus_of("default/job0"));

  Cluster m({nvf("node0", 2, 40000)});
  m.run(PodBuilder("job0").gpu_memory("8000Mi"), "node0", "0");
  m.run(PodBuilder("job1").gpu_memory("8000Mi"), "node0", "1");
  const PodRequest big = m.wait(PodBuilder("pending").gpu_memory("36000Mi"));
  auto memory_plan = m.plan(big);
  REQUIRE(memory_plan.has_value());
  CHECK(memory_plan->moves.size() == 1);
  CHECK(memory_plan->moved_memory == MiB{8000});
}

TEST_CASE("an 8-GPU pod gets a node by moving the eight small shares spread over it") {
  // Node a: one 10000 MiB share on each of its 8 GPUs; node b: the same on GPUs 0-3 of 8, so it
  // has 4 idle GPUs and room beside every share. Clearing a takes 8 moves, clearing b 4 plus
  // room for them: b wins (fewer moves), its shares go beside a's on a.
  Cluster c({nvf("a", 8, 80000), nvf("b", 8, 80000)});
  for (int g = 0; g < 8; ++g) c.run(PodBuilder("a" + std::to_string(g)).gpu_memory("10000Mi"), "a", std::to_string(g));
  for (int g = 0; g < 4; ++g) c.run(PodBuilder("b" + std::to_string(g)).gpu_memory("10000Mi"), "b", std::to_string(g));
  const PodRequest eight = c.wait(PodBuilder("eight").whole(8));
  auto plan = c.plan(eight);
  REQUIRE(plan.has_value());
  CHECK(plan->placements[0].node == "b");
  CHECK(moved_pods(*plan) == std::vector<std::string>{"default/b0", "default/b1", "default/b2", "default/b3"});
  for (const auto& m : plan->moves) CHECK(m.to_node == "a");
  CHECK(plan->moved_memory == MiB{40000});
  // With at most 3 moves there is no plan; with 4 there is.
  CHECK_FALSE(c.plan(eight, {3, 64}).has_value());
  CHECK(c.plan(eight, {4, 64}).has_value());
  REQUIRE(c.state.apply_consolidation({eight}, *plan).is_ok());
  c.check_consistent();
}

TEST_CASE("nothing moves when a pod taken off could not land anywhere") {
  // Two GPUs, each with a 0.6 share: a whole-GPU job would need one of them beside the other,
  // and 0.6 + 0.6 does not fit one GPU.
  Cluster c({nvf("node0", 2, 40000)});
  c.share_per_gpu("0.6");
  const PodRequest pending = c.wait(PodBuilder("pending").whole(1));
  const NodeUsage before = c.state.cluster().usage(0);
  CHECK_FALSE(c.plan(pending).has_value());
  CHECK(c.state.cluster().usage(0) == before);
  CHECK(c.state.verify().empty());
}

TEST_CASE("non-preemptible pods never move, and a non-preemptible job never consolidates (KAI)") {
  Cluster c({nvf("node0", 2, 40000)});
  c.run(share("job0", "0.5").priority_class("inference"), "node0", "0");
  c.run(share("job1", "0.5").priority_class("inference"), "node0", "1");
  CHECK_FALSE(c.plan(c.wait(PodBuilder("pending").whole(1))).has_value());

  Cluster d({nvf("node0", 2, 40000)});
  d.run(share("job0", "0.5"), "node0", "0");
  d.run(share("job1", "0.5"), "node0", "1");
  const PodRequest inference = d.wait(PodBuilder("pending").whole(1).priority_class("inference"));
  CHECK_FALSE(inference.preemptible);
  CHECK_FALSE(d.plan(inference).has_value());
}

TEST_CASE("fewest moves first, then least GPU memory moved") {
  // n1: GPU 0 holds two 10000 MiB shares, GPU 1 one of 30000 MiB; n2: GPUs 0-1 each hold one
  // 20000 MiB share. A whole-GPU pod: n1 GPU 1 (1 move, 30000), n2 (1 move, 20000): n2 wins on
  // memory; with n2's shares doubled it takes n1's single move.
  Cluster c({nvf("n1", 2, 40000), nvf("n2", 2, 40000)});
  c.run(PodBuilder("x1").gpu_memory("10000Mi"), "n1", "0");
  c.run(PodBuilder("x2").gpu_memory("10000Mi"), "n1", "0");
  c.run(PodBuilder("y").gpu_memory("30000Mi"), "n1", "1");
  c.run(PodBuilder("z1").gpu_memory("20000Mi"), "n2", "0");
  c.run(PodBuilder("z2").gpu_memory("20000Mi"), "n2", "1");
  const PodRequest pending = c.wait(PodBuilder("pending").whole(1));
  auto plan = c.plan(pending);
  REQUIRE(plan.has_value());
  CHECK(plan->placements[0].node == "n2");
  CHECK(plan->moves.size() == 1);
  CHECK(plan->moved_memory == MiB{20000});
}

TEST_CASE("a pod taken off and then not needed is put back: the plan moves only what the fit needs") {
  // node0: GPU 0 holds a (0.25, 1 CPU), GPU 1 holds b (0.5, 40 CPUs), 64 CPUs. A whole-GPU pod
  // asking 30 CPUs: GPU 0 is the cheaper to free (10000 MiB), so a goes first; the CPUs are still
  // short (40 + 30 > 64), so b goes too. Now a is not needed: back on GPU 0, the pod takes GPU 1
  // with 1 + 30 CPUs. node1's one GPU holds a non-preemptible share: b moves there.
  Cluster c({nvf("node0", 2, 40000), nvf("node1", 1, 40000)});
  c.run(share("a", "0.25"), "node0", "0");
  c.run(share("b", "0.5").request("cpu", "40"), "node0", "1");
  c.run(share("c", "0.25").priority_class("inference"), "node1", "0");
  const PodRequest pending = c.wait(PodBuilder("pending").whole(1).request("cpu", "30"));
  auto plan = c.plan(pending);
  REQUIRE(plan.has_value());
  CHECK(moved_pods(*plan) == std::vector<std::string>{"default/b"});
  CHECK(plan->moves[0].to_node == "node1");
  CHECK(plan->moved_memory == MiB{20000});
  REQUIRE(c.state.apply_consolidation({pending}, *plan).is_ok());
  CHECK(c.node_of("default/pending") == "node0");
  CHECK(c.gpus_of("default/pending") == std::vector<int>{1});
  CHECK(c.gpus_of("default/a") == std::vector<int>{0});
  c.check_consistent();
}

TEST_CASE("members of a gang with minMember > 1 stay; a gang pending is placed all or nothing") {
  Cluster c({nvf("node0", 2, 40000)});
  ObjectChange groups;
  queues::PodGroupSpec g;
  g.name = "g";
  g.min_member = 2;
  groups.groups.push_back(g);
  queues::PodGroupSpec h = g;
  h.name = "h";
  groups.groups.push_back(h);
  REQUIRE(c.state.validate(groups).is_ok());
  (void)c.state.apply(groups);
  c.run(share("m0", "0.5").gang("g"), "node0", "0");
  c.run(share("m1", "0.5").gang("g"), "node0", "1");
  CHECK_FALSE(c.plan(c.wait(PodBuilder("pending").whole(1))).has_value());

  // A gang of two 0.3 shares (h) on a cluster whose two GPUs hold 0.5 and 0.6 of loners: both
  // members fit beside them as things stand, so there is nothing to consolidate; a whole-GPU
  // member needs one move.
  Cluster d({nvf("node0", 2, 40000)});
  REQUIRE(d.state.validate(groups).is_ok());
  (void)d.state.apply(groups);
  d.run(share("l0", "0.5"), "node0", "0");
  d.run(share("l1", "0.4"), "node0", "1");
  const PodRequest a = d.wait(PodBuilder("h-a").whole(1).gang("h"));
  PodRequest b = PodBuilder("h-b").fraction("0.1").gang("h").spec();
  REQUIRE(d.state.observe(b) == PodStanding::kPending);
  b = d.state.pod(b.key())->pod;
  auto plan = d.state.plan_consolidation({a, b}, *d.pack);
  REQUIRE(plan.has_value());
  CHECK(plan->placements.size() == 2);
  CHECK(plan->moves.size() == 1);
  REQUIRE(d.state.apply_consolidation({a, b}, *plan).is_ok());
  CHECK(d.state.verify().empty());
}

/// A KAI Queue with a GPU quota and limit; CPU and memory unlimited.
json queue(const std::string& name, double quota, double limit = -1) { return queue_object(name, "", quota, limit); }

TEST_CASE("when the pods left after the put-back cannot all land, the whole set taken is tried") {
  // node0: GPU 0 holds v (0.25, 10 CPUs), GPU 1 holds u (0.8, 1 CPU), and w runs there on 30 CPUs
  // alone. node1's one GPU holds a non-preemptible 0.2 share on 59 of its 64 CPUs; node2 has no
  // GPU. A whole-GPU pod asking 40 CPUs: v goes first (GPU 0 is the cheaper), then u, then w
  // before it fits. Put back, the last first: w is needed, u is not, v is. But v finds no place
  // then (u fills GPU 1; node1 has 5 CPUs free), so the three are tried: u lands beside node1's
  // share, v on node0's other GPU, w on node2.
  Cluster c({nvf("node0", 2, 40000), nvf("node1", 1, 40000), NodeBuilder("node2")});
  c.run(share("v", "0.25").request("cpu", "10"), "node0", "0");
  c.run(share("u", "0.8"), "node0", "1");
  c.run(PodBuilder("w").request("cpu", "30"), "node0", "");
  c.run(share("x", "0.2").priority_class("inference").request("cpu", "59"), "node1", "0");
  const PodRequest pending = c.wait(PodBuilder("pending").whole(1).request("cpu", "40"));
  auto plan = c.plan(pending);
  REQUIRE(plan.has_value());
  CHECK(moved_pods(*plan) == std::vector<std::string>{"default/u", "default/v", "default/w"});  // the biggest first
  REQUIRE(c.state.apply_consolidation({pending}, *plan).is_ok());
  CHECK(c.node_of("default/pending") == "node0");
  CHECK(c.node_of("default/u") == "node1");
  CHECK(c.node_of("default/v") == "node0");
  CHECK(c.node_of("default/w") == "node2");
  c.check_consistent();
}

TEST_CASE("a core pod with no room anywhere else does not rule a node out: it may be put back") {
  // node0: GPU 0 holds a (0.6, 400Gi of memory), GPU 1 holds b (0.7, 40 CPUs). a is the core
  // (24000 MiB against 28000) and fits nowhere else (node1's memory is short), yet the plan puts
  // it back: b moves beside node1's share, the pod takes GPU 1 with 1 + 30 CPUs.
  Cluster c({nvf("node0", 2, 40000), nvf("node1", 1, 40000)});
  c.run(share("a", "0.6").request("memory", "400Gi"), "node0", "0");
  c.run(share("b", "0.7").request("cpu", "40"), "node0", "1");
  c.run(share("x", "0.25").priority_class("inference").request("memory", "200Gi"), "node1", "0");
  const PodRequest pending = c.wait(PodBuilder("pending").whole(1).request("cpu", "30"));
  auto plan = c.plan(pending);
  REQUIRE(plan.has_value());
  CHECK(moved_pods(*plan) == std::vector<std::string>{"default/b"});
  CHECK(plan->moves[0].to_node == "node1");
  CHECK(plan->placements[0].choice.gpus == std::vector<int>{1});
}

TEST_CASE("a pod with no room anywhere else stays: the plan frees another GPU of its node") {
  // node0: GPU 0 holds a (0.3, 400Gi of memory: it fits nowhere else), GPU 1 holds b (0.5). GPU 0
  // is the cheaper to free (12000 MiB against 20000), but a cannot land anywhere else, so it stays
  // and b moves beside it (0.3 + 0.5; pack prefers it to node1's share); the pod takes GPU 1. The
  // search once took a first, could not put it back, and refused the node.
  Cluster c({nvf("node0", 2, 40000), nvf("node1", 1, 40000)});
  c.run(share("a", "0.3").request("memory", "400Gi"), "node0", "0");
  c.run(share("b", "0.5"), "node0", "1");
  c.run(share("x", "0.25").priority_class("inference").request("memory", "200Gi"), "node1", "0");
  const PodRequest pending = c.wait(PodBuilder("pending").whole(1));
  auto plan = c.plan(pending);
  REQUIRE(plan.has_value());
  CHECK(moved_pods(*plan) == std::vector<std::string>{"default/b"});
  CHECK(plan->moves[0].to_node == "node0");
  CHECK(plan->moves[0].to.gpus == std::vector<int>{0});
  CHECK(plan->placements[0].choice.gpus == std::vector<int>{1});
  REQUIRE(c.state.apply_consolidation({pending}, *plan).is_ok());
  CHECK(c.node_of("default/a") == "node0");
  c.check_consistent();
}

TEST_CASE("a node short of CPU only, its share fitting beside a pod that may not move, costs no GPU memory") {
  // na's one GPU holds three 0.25 shares: a 0.5 share needs one moved (1 move, 10000 MiB). nb's
  // GPU 1 holds a non-preemptible 0.25, so the share fits there; only CPUs are short (42 + 30 >
  // 64): moving the CPU pod w costs 1 move and no GPU memory. Its lower bound once counted GPU 1
  // out (a pod there may not move), tied with na's plan, and the search stopped before it.
  Cluster c({nvf("na", 1, 40000), nvf("nb", 2, 40000)});
  for (const char* name : {"c1", "c2", "c3"}) c.run(share(name, "0.25"), "na", "0");
  c.run(share("a", "0.75"), "nb", "0");
  c.run(share("y", "0.25").priority_class("inference"), "nb", "1");
  c.run(PodBuilder("w").request("cpu", "40"), "nb", "");
  const PodRequest pending = c.wait(share("pending", "0.5").request("cpu", "30"));
  auto plan = c.plan(pending);
  REQUIRE(plan.has_value());
  CHECK(plan->placements[0].node == "nb");
  CHECK(moved_pods(*plan) == std::vector<std::string>{"default/w"});
  CHECK(plan->moved_memory == MiB{0});
}

TEST_CASE("KAI PR 1565: a queue past its deserved quota cannot move another queue's pods") {
  // under holds two halves on node0's two GPUs; over runs one GPU and asks for another. Over with
  // quota 1 is past its deserved share holding it: under's pods stay (in the field, 48 GPUs of
  // requests from a queue 1,100 GPUs over its quota moved 376 GPUs of an under-quota queue's
  // pods). With quota 2 it stays within it and may move them.
  for (double quota : {1.0, 2.0}) {
    CAPTURE(quota);
    Cluster c({nvf("node0", 2, 40000), nvf("node1", 1, 40000)}, {queue("under", 4), queue("over", quota)});
    c.run(share("u0", "0.5").label("kai.scheduler/queue", "under"), "node0", "0");
    c.run(share("u1", "0.5").label("kai.scheduler/queue", "under"), "node0", "1");
    c.run(PodBuilder("o-run").whole(1).label("kai.scheduler/queue", "over"), "node1", "0");
    const PodRequest pending = c.wait(PodBuilder("o-want").whole(1).label("kai.scheduler/queue", "over"));
    CHECK(c.plan(pending).has_value() == (quota >= 2));
  }
}

TEST_CASE("KAI PR 1565: within its deserved quota a queue may move others' pods; its own always") {
  Cluster c({nvf("node0", 2, 40000)}, {queue("under", 4), queue("over", 1)});
  c.run(share("u0", "0.5").label("kai.scheduler/queue", "under"), "node0", "0");
  c.run(share("u1", "0.5").label("kai.scheduler/queue", "under"), "node0", "1");
  const PodRequest pending = c.wait(PodBuilder("o-want").whole(1).label("kai.scheduler/queue", "over"));
  auto plan = c.plan(pending);
  REQUIRE(plan.has_value());
  CHECK(plan->moves.size() == 1);

  Cluster own({nvf("node0", 2, 40000)}, {queue("over", 0)});
  own.run(share("s0", "0.5").label("kai.scheduler/queue", "over"), "node0", "0");
  own.run(share("s1", "0.5").label("kai.scheduler/queue", "over"), "node0", "1");
  auto mine = own.plan(own.wait(PodBuilder("o-want").whole(1).label("kai.scheduler/queue", "over")));
  REQUIRE(mine.has_value());
  CHECK(mine->moves.size() == 1);
}

TEST_CASE("the job must be admitted by its queue; a moved pod's grown charge must fit its limit") {
  // The job asks for a whole GPU in a queue whose limit is 0.5: refused before any search.
  Cluster c({nvf("node0", 2, 40000)}, {queue("q", 4, 0.5)});
  c.run(share("s0", "0.25").label("kai.scheduler/queue", "q"), "node0", "0");
  c.run(share("s1", "0.25").label("kai.scheduler/queue", "q"), "node0", "1");
  CHECK_FALSE(c.plan(c.wait(PodBuilder("want").whole(1).label("kai.scheduler/queue", "q"))).has_value());

  // big: one 80000 MiB GPU holding p (20000 MiB, charged 0.25); small: one idle 40000 MiB GPU.
  // A 70000 MiB request fits neither; p moved to small is charged 0.5. With everything in q,
  // limit 1.2: 0.25 + 0.88 fits, 0.5 + 0.88 does not. Limit 1.5: it does.
  for (double limit : {1.2, 1.5}) {
    CAPTURE(limit);
    Cluster d({nvf("big", 1, 80000), nvf("small", 1, 40000)}, {queue("q", -1, limit)});
    d.run(PodBuilder("p").gpu_memory("20000Mi").label("kai.scheduler/queue", "q"), "big", "0");
    const PodRequest want = d.wait(PodBuilder("want").gpu_memory("70000Mi").label("kai.scheduler/queue", "q"));
    CHECK(d.plan(want).has_value() == (limit > 1.4));
  }
}

TEST_CASE("a moved pod starts a new run; the preemptor's start is now") {
  SchedulingState::Options options;
  std::int64_t now = 5000;
  options.clock = [&now] { return now; };
  Cluster c({nvf("node0", 2, 40000)}, {}, options);
  PodBuilder j0 = share("job0", "0.5");
  j0.obj["status"]["startTime"] = "2026-01-01T00:00:00Z";
  c.run(j0, "node0", "0");
  c.run(share("job1", "0.5"), "node0", "1");
  CHECK(c.state.pod("default/job0")->pod.started.has_value());
  const PodRequest pending = c.wait(PodBuilder("pending").whole(1));
  auto plan = c.plan(pending);
  REQUIRE(plan.has_value());
  REQUIRE(c.state.apply_consolidation({pending}, *plan).is_ok());
  CHECK(c.state.pod("default/job0")->pod.started == 5000);
  CHECK(c.state.pod("default/pending")->pod.started == 5000);
}

TEST_CASE("FailedPods: a pod asking no less than a failed one, with the same constraints, is covered") {
  queues::FailedPods failed;
  const PodRequest small = PodBuilder("s").gpu_memory("10000Mi").spec();
  const PodRequest large = PodBuilder("l").gpu_memory("20000Mi").spec();
  const PodRequest whole = PodBuilder("w").whole(1).spec();
  failed.add(large);
  CHECK(failed.covers(PodBuilder("l2").gpu_memory("20000Mi").spec()));
  CHECK(failed.covers(PodBuilder("l3").gpu_memory("30000Mi").spec()));
  CHECK_FALSE(failed.covers(small));
  CHECK_FALSE(failed.covers(whole));
  CHECK_FALSE(failed.covers(PodBuilder("sel").gpu_memory("30000Mi").selector("zone", "a").spec()));
  CHECK_FALSE(failed.covers(PodBuilder("sm").gpu_memory("30000Mi").sm_sharing().spec()));
  failed.add(small);
  CHECK(failed.covers(PodBuilder("l4").gpu_memory("15000Mi").spec()));
}

TEST_CASE("FailedPods: constraints that share a hash are still told apart, and asks of a failed class are covered") {
  using Ask = queues::FailedPods::Ask;
  auto ask = [](std::string constraints, std::size_t hash, std::int64_t gpu, std::size_t alike = queues::FailedPods::kNoClass) {
    Ask a;
    a.constraints = std::move(constraints);
    a.hash = hash;
    a.gpu = gpu;
    a.alike = alike;
    return a;
  };
  queues::FailedPods failed;
  failed.add(ask("zone=a", 7, 10));
  CHECK(failed.covers(ask("zone=a", 7, 10)));
  CHECK_FALSE(failed.covers(ask("zone=b", 7, 50)));  // same bucket, other constraints
  failed.add(ask("zone=b", 7, 40));
  CHECK(failed.covers(ask("zone=b", 7, 50)));
  CHECK_FALSE(failed.covers(ask("zone=b", 7, 30)));
  CHECK(failed.covers(ask("zone=a", 7, 30)));  // the answer does not depend on which ask answered last
  CHECK(failed.covers(ask("zone=b", 7, 45)));
  // A class: one of it failed, so every ask of it is covered, by the class alone (its asks are
  // equal by the caller's word: here a smaller one shows that no amount was compared); asks of
  // other classes are compared as usual.
  failed.add(ask("gpu=a100", 9, 4, 3));
  CHECK(failed.covers(ask("gpu=a100", 9, 4, 3)));
  CHECK(failed.covers(ask("gpu=a100", 9, 1, 3)));
  CHECK_FALSE(failed.covers(ask("gpu=a100", 9, 2, 4)));
  CHECK(failed.covers(ask("gpu=a100", 9, 6, 5)));
  // ask_of() hashes the constraints: two pods alike in constraints meet in one bucket.
  const PodRequest p = PodBuilder("p").gpu_memory("10000Mi").selector("zone", "a").spec();
  CHECK(queues::FailedPods::ask_of(p).hash == std::hash<std::string>{}(queues::FailedPods::ask_of(p).constraints));
}

}  // namespace
}  // namespace fracpack::test
