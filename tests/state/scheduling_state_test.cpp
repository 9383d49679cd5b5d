// SchedulingState: pods, nodes, Queues and PodGroups changing in any order keep every figure equal
// to a recount, and equal to a state built from scratch on the same objects and pods.
#include <algorithm>
#include <chrono>
#include <random>

#include <doctest/doctest.h>

#include "fracpack/binpack/policy.hpp"
#include "fracpack/queues/decode_queue.hpp"
#include "fracpack/queues/scheduling_state.hpp"
#include "support/builders.hpp"

namespace fracpack::test {
namespace {

using queues::Resource;

queues::QueueSpec queue_spec(const std::string& name, const std::string& parent, double quota) {
  auto q = queues::decode_queue(queue_object(name, parent, quota));
  REQUIRE(q.is_ok());
  return *q;
}

SchedulingState empty_state() {
  SchedulingState::Options options;
  return SchedulingState(options);
}

/// Adds node n (4 GPUs of 80000 MiB) and queue qa with `gpu_quota` GPUs deserved.
void add_node_and_queue(SchedulingState& s, double gpu_quota) {
  ObjectChange c;
  c.nodes.push_back(nvf("n", 4, 80000).spec());
  c.queues = {queue_spec("qa", "", gpu_quota)};
  (void)s.apply(c);
}

void check(const SchedulingState& s) {
  const std::string broken = s.check_invariants();
  REQUIRE_MESSAGE(broken.empty(), broken);
}

TEST_CASE("a conflict lifts when the pod it collided with goes") {
  SchedulingState s = empty_state();
  ObjectChange c;
  c.nodes.push_back(nvf("n", 2, 40000).spec());
  REQUIRE(s.validate(c).is_ok());
  (void)s.apply(c);
  auto x = PodBuilder("x").gpu_memory("30Gi").annotation("nvidia.com/container.main.gpus.devices", "0").bound_to("n").spec();
  auto y = PodBuilder("y").gpu_memory("30Gi").annotation("nvidia.com/container.main.gpus.devices", "0").bound_to("n").spec();
  CHECK(s.observe(x) == PodStanding::kBound);
  CHECK(s.observe(y) == PodStanding::kConflict);
  CHECK(s.cluster().usage(0).gpus[0].fenced());
  check(s);
  CHECK(s.forget("default/x"));
  CHECK(s.pod("default/y")->standing == PodStanding::kBound);  // GPU 0 is y's now
  CHECK_FALSE(s.cluster().usage(0).gpus[0].fenced());
  check(s);
  // Two conflicts fence GPU 0 for each other: when its holder goes, the older one takes it (they
  // were retried one by one, each kept out by the other's fence).
  auto z = PodBuilder("z").gpu_memory("30Gi").annotation("nvidia.com/container.main.gpus.devices", "0").bound_to("n").spec();
  auto w = PodBuilder("w").gpu_memory("30Gi").annotation("nvidia.com/container.main.gpus.devices", "0").bound_to("n").spec();
  CHECK(s.observe(z) == PodStanding::kConflict);
  CHECK(s.observe(w) == PodStanding::kConflict);
  CHECK(s.forget("default/y"));
  CHECK(s.pod("default/z")->standing == PodStanding::kBound);
  CHECK(s.pod("default/w")->standing == PodStanding::kConflict);
  check(s);
}

TEST_CASE("a pod bound to a node not known yet is adopted when the node appears, and waits again when it goes") {
  SchedulingState s = empty_state();
  auto p = PodBuilder("p").whole(1).bound_to("late").spec();
  CHECK(s.observe(p) == PodStanding::kWaitingForNode);
  ObjectChange add;
  add.nodes.push_back(nvf("late", 2, 40000).spec());
  (void)s.apply(add);
  CHECK(s.pod("default/p")->standing == PodStanding::kBound);
  CHECK(s.cluster().usage(*s.cluster().find_node("late")).gpus[0].state == GpuState::kWhole);
  check(s);
  ObjectChange remove;
  remove.removed_nodes.push_back("late");
  REQUIRE(s.validate(remove).is_ok());
  (void)s.apply(remove);
  CHECK(s.pod("default/p")->standing == PodStanding::kWaitingForNode);
  check(s);
}

TEST_CASE("a node whose GPUs shrink re-adopts its pods; those that no longer fit are conflicts") {
  SchedulingState s = empty_state();
  ObjectChange c;
  c.nodes.push_back(nvf("n", 2, 80000).spec());
  (void)s.apply(c);
  CHECK(s.observe(PodBuilder("a").gpu_memory("30Gi").annotation("nvidia.com/container.main.gpus.devices", "1").bound_to("n").spec()) ==
        PodStanding::kBound);
  CHECK(s.observe(PodBuilder("b").gpu_memory("10Gi").annotation("nvidia.com/container.main.gpus.devices", "0").bound_to("n").spec()) ==
        PodStanding::kBound);
  ObjectChange shrink;
  shrink.nodes.push_back(nvf("n", 2, 20000).spec());
  const auto conflicts = s.apply(shrink);
  REQUIRE(conflicts.size() == 1);
  CHECK(conflicts[0].find("default/a") == 0);
  CHECK(s.pod("default/a")->standing == PodStanding::kConflict);
  CHECK(s.pod("default/b")->standing == PodStanding::kBound);
  check(s);
}

TEST_CASE("queue figures follow Queue and PodGroup edits without a rebuild") {
  SchedulingState s = empty_state();
  add_node_and_queue(s, 2);
  PodBuilder g1("g1");
  g1.whole(1).label("kai.scheduler/queue", "qa").annotation("pod-group-name", "pg").bound_to("n");
  CHECK(s.observe(g1.spec()) == PodStanding::kBound);
  CHECK(s.observe(PodBuilder("other").whole(1).label("kai.scheduler/queue", "qb").bound_to("n").spec()) == PodStanding::kBound);
  CHECK(s.book()->allocated(*s.tree()->find("qa"))[Resource::kGpu] == 1000);
  // Queue qb appears: its running pod counts at once.
  ObjectChange add_qb;
  add_qb.queues = {queue_spec("qb", "", 1)};
  REQUIRE(s.validate(add_qb).is_ok());
  (void)s.apply(add_qb);
  CHECK(s.book()->allocated(*s.tree()->find("qb"))[Resource::kGpu] == 1000);
  // The PodGroup moves its member to qb.
  ObjectChange group;
  queues::PodGroupSpec pg;
  pg.name = "pg";
  pg.queue = "qb";
  group.groups = {pg};
  (void)s.apply(group);
  CHECK(s.book()->allocated(*s.tree()->find("qa"))[Resource::kGpu] == 0);
  CHECK(s.book()->allocated(*s.tree()->find("qb"))[Resource::kGpu] == 2000);
  check(s);
  // A pod of another scheduler holds its GPU but counts in no queue and shrinks what they divide.
  const auto before = s.total();
  auto foreign = PodBuilder("foreign").whole(1).bound_to("n").spec();
  foreign.scheduler_name = "default-scheduler";
  CHECK(s.observe(foreign) == PodStanding::kBound);
  CHECK(s.total()[Resource::kGpu] == before[Resource::kGpu] - 1000);
  CHECK(s.book()->allocated(*s.tree()->find("qb"))[Resource::kGpu] == 2000);
  check(s);
  // Removing a parent is refused; a leaf may go.
  ObjectChange bad;
  bad.queues = {queue_spec("child", "qa", 1)};
  (void)s.apply(bad);
  ObjectChange remove_parent;
  remove_parent.removed_queues = {"qa"};
  CHECK(s.validate(remove_parent).code() == Code::kInvalidArgument);
}

TEST_CASE("a pod of another scheduler placed by a session or a Bind counts in no queue, as a rebuild reads it") {
  // `fracpack place --scheduler-name someone-else` placed kai-scheduler pods in a session that
  // charged the book, then recorded them as foreign: the book counted pods no queue held.
  SchedulingState s = empty_state();
  add_node_and_queue(s, 4);
  const std::size_t qa = *s.tree()->find("qa");
  auto placed = PodBuilder("placed").whole(1).label("kai.scheduler/queue", "qa").spec();
  placed.scheduler_name = "someone-else";
  CHECK(s.observe(placed) == PodStanding::kIgnored);
  queues::Job job;
  job.name = placed.key();
  job.members = {placed};
  job.min_member = 1;
  job.queue = qa;
  job.member_charges = {s.pending_charge(placed)};
  job.charge = job.member_charges.front();
  auto pack = make_policy("pack");
  REQUIRE(pack.is_ok());
  const auto out = s.run_session(**pack, std::vector<queues::Job>{job});
  REQUIRE(out.size() == 1);
  REQUIRE(out.front().members.front().placement);
  CHECK_FALSE(s.pod(placed.key())->ours);
  CHECK(s.book()->allocated(qa)[Resource::kGpu] == 0);
  check(s);
  CHECK(s.verify().empty());
  auto bound = PodBuilder("bound").whole(1).label("kai.scheduler/queue", "qa").spec();
  bound.scheduler_name = "someone-else";
  REQUIRE(s.bind(bound, 0, **pack).is_ok());
  CHECK_FALSE(s.pod(bound.key())->ours);
  CHECK(s.book()->allocated(qa)[Resource::kGpu] == 0);
  check(s);
  CHECK(s.verify().empty());
}

TEST_CASE("a pod bound on its PodGroup's terms keeps its own: a PodGroup edit re-reads them") {
  // The extender binds the pod as the state holds it, with its PodGroup's terms; the record kept
  // those as the pod itself, so a PodGroup that stopped overriding them changed nothing.
  SchedulingState s = empty_state();
  add_node_and_queue(s, 4);
  queues::PodGroupSpec pg;
  pg.name = "pg";
  pg.queue = "qa";
  pg.preemptibility = "non-preemptible";
  ObjectChange group;
  group.groups = {pg};
  (void)s.apply(group);
  const auto p = PodBuilder("p").whole(1).label("kai.scheduler/queue", "qa").gang("pg").spec();
  REQUIRE(s.observe(p) == PodStanding::kPending);
  CHECK_FALSE(s.pod(p.key())->pod.preemptible);
  auto pack = make_policy("pack");
  REQUIRE(pack.is_ok());
  REQUIRE(s.bind(s.pod(p.key())->pod, 0, **pack).is_ok());
  CHECK(s.pod(p.key())->raw.preemptible);  // as decoded
  pg.preemptibility.reset();
  group.groups = {pg};
  (void)s.apply(group);
  CHECK(s.pod(p.key())->pod.preemptible);
  CHECK(s.book()->allocated(*s.tree()->find("qa"))[Resource::kGpu] == 1000);
  check(s);
  CHECK(s.verify().empty());
  // Bound with the terms of a PodGroup edited since the extender read the pod: today's terms, in
  // the record and in the ledger alike.
  pg.preemptibility = "non-preemptible";
  group.groups = {pg};
  (void)s.apply(group);
  const auto q = PodBuilder("q").whole(1).label("kai.scheduler/queue", "qa").gang("pg").spec();
  REQUIRE(s.observe(q) == PodStanding::kPending);
  const PodRequest as_filtered = s.pod(q.key())->pod;  // non-preemptible, by the PodGroup of then
  pg.preemptibility.reset();
  group.groups = {pg};
  (void)s.apply(group);
  REQUIRE(s.bind(as_filtered, 0, **pack).is_ok());
  CHECK(s.pod(q.key())->pod.preemptible);
  CHECK(s.cluster().allocation(q.key())->preemptible);
  check(s);
  CHECK(s.verify().empty());
}

/// A state whose clock the test moves, with node n (4 GPUs) and PodGroup pg of minMember 3.
struct StaleGangScenario {
  std::int64_t clock = 1000;
  SchedulingState s{[this] {
    SchedulingState::Options o;
    o.clock = [this] { return clock; };
    return o;
  }()};
  StaleGangScenario() {
    ObjectChange c;
    c.nodes.push_back(nvf("n", 4, 80000).spec());
    queues::PodGroupSpec pg;
    pg.name = "pg";
    pg.min_member = 3;
    c.groups = {pg};
    (void)s.apply(c);
  }
  PodRequest member(const std::string& name, bool bound) {
    PodBuilder b(name);
    b.whole(1).gang("pg");
    if (bound) b.bound_to("n");
    return b.spec();
  }
  std::vector<std::string> evicted(std::chrono::seconds grace) {
    std::vector<std::string> out;
    for (const auto& g : s.stale_gangs(grace)) out.insert(out.end(), g.evict.begin(), g.evict.end());
    return out;
  }
};

TEST_CASE("stale gang: members below minMember for the grace period are evicted, KAI's IsStale and grace") {
  using std::chrono::seconds;
  StaleGangScenario t;
  for (const char* name : {"a", "b", "c"}) REQUIRE(t.s.observe(t.member(name, true)) == PodStanding::kBound);
  CHECK(t.evicted(seconds(0)).empty());  // 3 of minMember 3: whole
  REQUIRE(t.s.forget("default/c"));       // a member is lost: 2 of 3 run
  CHECK(t.evicted(seconds(60)).empty());  // stale from now (t = 1000), not yet for 60 s
  t.clock = 1060;  // perhaps 59.1 s after it went stale in second 1000: not yet
  CHECK(t.evicted(seconds(60)).empty());
  t.clock = 1061;
  auto stale = t.s.stale_gangs(seconds(60));
  REQUIRE(stale.size() == 1);
  CHECK(stale[0].group == "default/pg");
  CHECK(stale[0].active == 2);
  CHECK(stale[0].min_member == 3);
  CHECK(stale[0].stale_since == 1000);
  CHECK(stale[0].evict == std::vector<std::string>{"default/a", "default/b"});
  CHECK(t.evicted(seconds(-1)).empty());  // a negative grace period: never evicted
  // The lost member comes back (its controller made it again) and binds: whole again, the clock
  // starts over the next time it goes stale.
  REQUIRE(t.s.observe(t.member("c", true)) == PodStanding::kBound);
  CHECK(t.evicted(seconds(0)).empty());
  REQUIRE(t.s.forget("default/c"));
  t.clock = 1100;
  CHECK(t.evicted(seconds(60)).empty());
  t.clock = 1161;
  CHECK(t.evicted(seconds(60)).size() == 2);
  CHECK(t.evicted(seconds(0)).size() == 2);  // a grace of 0: at once
}

TEST_CASE("stale gang: another scheduler's members neither count nor are evicted") {
  using std::chrono::seconds;
  StaleGangScenario t;
  REQUIRE(t.s.observe(t.member("a", true)) == PodStanding::kBound);
  PodRequest other = t.member("b", true);
  other.scheduler_name = "someone-else";
  REQUIRE(t.s.observe(other) == PodStanding::kBound);
  REQUIRE_FALSE(t.s.pod("default/b")->ours);
  const auto stale = t.s.stale_gangs(seconds(0));  // one of ours of minMember 3: ours is evicted, b is not
  REQUIRE(stale.size() == 1);
  CHECK(stale[0].active == 1);
  CHECK(stale[0].evict == std::vector<std::string>{"default/a"});
  REQUIRE(t.s.forget("default/a"));
  CHECK(t.s.stale_gangs(seconds(0)).empty());  // only b, another scheduler's: not ours to judge
}

TEST_CASE("stale gang: a gang with a Succeeded member, none on a node, or pending members only is not stale") {
  using std::chrono::seconds;
  StaleGangScenario t;
  REQUIRE(t.s.observe(t.member("a", true)) == PodStanding::kBound);
  REQUIRE(t.s.observe(t.member("b", true)) == PodStanding::kBound);
  t.s.observe_succeeded("default/c", "default/pg");  // completed: the job is finishing, not broken
  CHECK(t.evicted(seconds(0)).empty());
  CHECK(t.s.pod("default/c") == nullptr);
  CHECK(t.s.verify().empty());
  // Once the Succeeded pod is deleted, the two running members are a stale gang.
  REQUIRE_FALSE(t.s.forget("default/c"));
  CHECK(t.evicted(seconds(0)).size() == 2);
  // Pending members do not count: a gang still starting is not stale.
  REQUIRE(t.s.forget("default/a"));
  REQUIRE(t.s.forget("default/b"));
  REQUIRE(t.s.observe(t.member("a", false)) == PodStanding::kPending);
  REQUIRE(t.s.observe(t.member("b", false)) == PodStanding::kPending);
  CHECK(t.s.stale_gangs(seconds(0)).empty());
  // A Succeeded pod the list no longer shows is forgotten with the rest (pod_keys names it).
  t.s.observe_succeeded("default/d", "default/pg");
  const auto keys = t.s.pod_keys();
  CHECK(std::find(keys.begin(), keys.end(), "default/d") != keys.end());
  check(t.s);
}

TEST_CASE("stale gang: a member whose sub-group names no leaf neither counts nor is evicted") {
  // pg2 has leaves a and b (minMember 1 each). a0 runs in a; x0 runs labelled "x", no leaf of
  // pg2: KAI leaves it out of the job. b has nothing: stale, with one active member, a0.
  using std::chrono::seconds;
  StaleGangScenario t;
  ObjectChange c;
  queues::PodGroupSpec pg;
  pg.name = "pg2";
  pg.sub_groups = {{"a", "", 1, std::nullopt, {}}, {"b", "", 1, std::nullopt, {}}};
  c.groups = {pg};
  (void)t.s.apply(c);
  const auto running = [](const std::string& name, const std::string& sub) {
    PodBuilder b(name);
    b.whole(1).gang("pg2").label("kai.scheduler/subgroup-name", sub).bound_to("n");
    return b.spec();
  };
  REQUIRE(t.s.observe(running("a0", "a")) == PodStanding::kBound);
  REQUIRE(t.s.observe(running("x0", "x")) == PodStanding::kBound);
  const auto stale = t.s.stale_gangs(seconds(0));
  REQUIRE(stale.size() == 1);
  CHECK(stale[0].group == "default/pg2");
  CHECK(stale[0].active == 1);
  CHECK(stale[0].evict == std::vector<std::string>{"default/a0"});
  // b's member arrives and runs: whole, not stale; x0 changes nothing.
  REQUIRE(t.s.observe(running("b0", "b")) == PodStanding::kBound);
  CHECK(t.s.stale_gangs(seconds(0)).empty());
}

TEST_CASE("stale gang: members held by a gang plan count as active, and are never deleted") {
  using std::chrono::seconds;
  StaleGangScenario t;
  REQUIRE(t.s.observe(t.member("a", true)) == PodStanding::kBound);
  CHECK(t.s.stale_gangs(seconds(0)).size() == 1);  // 1 of 3
  REQUIRE(t.s.observe(t.member("b", false)) == PodStanding::kPending);
  REQUIRE(t.s.observe(t.member("c", false)) == PodStanding::kPending);
  auto pack = make_policy("pack");
  REQUIRE(pack.is_ok());
  const auto now = std::chrono::steady_clock::now();
  const auto d = t.s.plan_gang(t.s.pod("default/b")->pod, **pack, now, seconds(30));
  REQUIRE(d.kind == SchedulingState::GangDecision::Kind::kPlanned);
  REQUIRE(t.s.pod("default/b")->planned_until);
  CHECK(t.s.stale_gangs(seconds(0)).empty());  // 1 bound + 2 planned: whole
  // a is lost: 2 planned of minMember 3. Stale, but the planned members hold nothing in the
  // cluster to delete (their plan lapses, or they bind and the gang is judged again).
  REQUIRE(t.s.forget("default/a"));
  CHECK(t.s.stale_gangs(seconds(0)).empty());
  // b binds on its plan: 1 bound + 1 planned, stale; only b is deleted.
  REQUIRE(t.s.bind(t.s.pod("default/b")->pod, 0, **pack).is_ok());
  const auto stale = t.s.stale_gangs(seconds(0));
  REQUIRE(stale.size() == 1);
  CHECK(stale[0].active == 2);
  CHECK(stale[0].evict == std::vector<std::string>{"default/b"});
  check(t.s);
}

TEST_CASE("a planned gang member the watch shows bound where planned is bound: its plan never lapses") {
  // kube-scheduler bound it (this replica's Bind answered from the ledger, or another replica's):
  // the plan must end, or expire_plans would take a running pod off the ledger.
  using std::chrono::seconds;
  StaleGangScenario t;
  auto pack = make_policy("pack");
  REQUIRE(pack.is_ok());
  for (const char* name : {"a", "b", "c"}) REQUIRE(t.s.observe(t.member(name, false)) == PodStanding::kPending);
  const auto now = std::chrono::steady_clock::now();
  REQUIRE(t.s.plan_gang(t.s.pod("default/a")->pod, **pack, now, seconds(30)).kind == SchedulingState::GangDecision::Kind::kPlanned);
  for (const char* name : {"a", "b", "c"}) {
    PodRequest seen = t.member(name, true);
    seen.bound->devices = t.s.pod(std::string("default/") + name)->raw.bound->devices;
    REQUIRE(t.s.observe(seen) == PodStanding::kBound);
    CHECK_FALSE(t.s.pod(std::string("default/") + name)->planned_until);
  }
  CHECK(t.s.expire_plans(now + seconds(31)) == 0);
  CHECK(t.s.pod("default/a")->standing == PodStanding::kBound);
  CHECK(t.s.stale_gangs(seconds(0)).empty());
  check(t.s);
  CHECK(t.s.verify().empty());
}

TEST_CASE("random pods, nodes, Queues and PodGroups: every figure equals a recount and a state built from scratch") {
  int steps = 0;
  int binds = 0;
  auto pack = make_policy("pack");
  REQUIRE(pack.is_ok());
  for (std::uint32_t seed = 1; seed <= 20; ++seed) {
    CAPTURE(seed);
    std::mt19937 rng(seed);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    SchedulingState s = empty_state();
    std::map<std::string, NodeSpec> nodes;
    std::map<std::string, queues::QueueSpec> queue_specs;
    std::map<std::string, queues::PodGroupSpec> groups;
    std::map<std::string, PodRequest> pods;  // last observed, in observation order below
    std::vector<std::string> order;
    for (int step = 0; step < 200; ++step, ++steps) {
      CAPTURE(step);
      const int op = pick(0, 99);
      ObjectChange c;
      if (op < 10) {
        NodeSpec n = nvf(fmt::format("n{}", pick(0, 6)), pick(1, 4), pick(0, 1) == 0 ? 40000 : 80000).spec();
        n.schedulable = pick(0, 5) != 0;
        c.nodes.push_back(n);
      } else if (op < 14 && !nodes.empty()) {
        c.removed_nodes.push_back(std::next(nodes.begin(), pick(0, static_cast<int>(nodes.size()) - 1))->first);
      } else if (op < 20) {
        c.queues.push_back(queue_spec(fmt::format("q{}", pick(0, 3)), "", pick(0, 4)));
      } else if (op < 22 && !queue_specs.empty()) {
        c.removed_queues.push_back(std::next(queue_specs.begin(), pick(0, static_cast<int>(queue_specs.size()) - 1))->first);
      } else if (op < 27) {
        queues::PodGroupSpec g;
        g.name = fmt::format("g{}", pick(0, 2));
        g.queue = fmt::format("q{}", pick(0, 3));
        if (pick(0, 1) == 0) g.preemptibility = "non-preemptible";
        c.groups.push_back(g);
      } else if (op < 75) {
        PodBuilder p(fmt::format("p{}", pick(0, 40)));
        p.uid(fmt::format("u{}", pick(0, 1000)));
        p.label("kai.scheduler/queue", fmt::format("q{}", pick(0, 3)));
        if (pick(0, 3) == 0) p.annotation("pod-group-name", fmt::format("g{}", pick(0, 2)));
        const int whole = pick(0, 2);  // 0: a fraction
        if (whole > 0) {
          p.whole(whole);
        } else {
          p.gpu_memory(fmt::format("{}Gi", 4 * pick(1, 9)));
        }
        if (pick(0, 1) == 0 && !nodes.empty()) {
          // Bound, with the devices it holds (running pods without them are guessed: tested above).
          const auto& node = std::next(nodes.begin(), pick(0, static_cast<int>(nodes.size()) - 1))->second;
          p.bound_to(node.name);
          const int first = pick(0, static_cast<int>(node.gpus.size()) - 1);
          std::string devices = std::to_string(first);
          if (whole == 2 && node.gpus.size() > 1) devices += "," + std::to_string((first + 1) % static_cast<int>(node.gpus.size()));
          p.annotation("nvidia.com/container.main.gpus.devices", devices);
        }
        PodRequest pod = p.spec();
        if (pick(0, 5) == 0) pod.scheduler_name = "default-scheduler";
        (void)s.observe(pod);
        pods[pod.key()] = pod;
        std::erase(order, pod.key());
        order.push_back(pod.key());
      } else if (op < 82 && !pods.empty() && !nodes.empty()) {  // the extender's Bind, ours or another scheduler's
        const std::string key = std::next(pods.begin(), pick(0, static_cast<int>(pods.size()) - 1))->first;
        const auto node = s.cluster().find_node(std::next(nodes.begin(), pick(0, static_cast<int>(nodes.size()) - 1))->first);
        const PodRecord* seen = s.pod(key);  // the extender binds the pod as the state holds it
        const PodRequest asked = seen != nullptr && !seen->unreadable ? seen->pod : pods.at(key);
        if (node && s.bind(asked, *node, **pack).is_ok()) {
          pods[key].bound = s.pod(key)->raw.bound;  // as a watch reads it back: as created, bound, with its devices
          ++binds;
          std::erase(order, key);
          order.push_back(key);
        }
      } else if (!pods.empty()) {
        const std::string key = std::next(pods.begin(), pick(0, static_cast<int>(pods.size()) - 1))->first;
        CHECK(s.forget(key));
        pods.erase(key);
        std::erase(order, key);
      }
      if (!c.nodes.empty() || !c.removed_nodes.empty() || !c.queues.empty() || !c.removed_queues.empty() || !c.groups.empty()) {
        if (s.validate(c).is_ok()) {
          (void)s.apply(c);
          for (const auto& n : c.nodes) nodes[n.name] = n;
          for (const auto& n : c.removed_nodes) nodes.erase(n);
          for (const auto& q : c.queues) queue_specs[q.name] = q;
          for (const auto& q : c.removed_queues) queue_specs.erase(q);
          for (const auto& g : c.groups) groups[g.key()] = g;
        }
      }
      check(s);
      REQUIRE_MESSAGE(s.verify().empty(), s.verify());
      // From scratch, by hand (verify() does the same): the same objects, then the pods in the order they were last observed.
      if (step % 10 != 9) continue;
      SchedulingState fresh = empty_state();
      ObjectChange all;
      for (const auto& [_, n] : nodes) all.nodes.push_back(n);
      for (const auto& [_, q] : queue_specs) all.queues.push_back(q);
      for (const auto& [_, g] : groups) all.groups.push_back(g);
      REQUIRE(fresh.validate(all).is_ok());
      (void)fresh.apply(all);
      // Who wins a GPU two running pods claim is decided by the order they were held in: replay
      // the holders in that order (Allocation::seq), then the rest.
      std::vector<std::string> replay = order;
      std::stable_sort(replay.begin(), replay.end(), [&](const std::string& a, const std::string& b) {
        const Allocation* x = s.cluster().allocation(a);
        const Allocation* y = s.cluster().allocation(b);
        if ((x == nullptr) != (y == nullptr)) return x != nullptr;
        return x != nullptr && x->seq < y->seq;
      });
      for (const auto& key : replay) (void)fresh.observe(pods.at(key));
      check(fresh);
      for (const auto& key : order) {
        CAPTURE(key);
        const PodRecord* a = s.pod(key);
        const PodRecord* b = fresh.pod(key);
        REQUIRE(a != nullptr);
        REQUIRE(b != nullptr);
        CAPTURE(a->note);
        CHECK(standing_name(a->standing) == standing_name(b->standing));
        if (a->standing != PodStanding::kBound || b->standing != PodStanding::kBound) continue;
        const GpuChoice& x = s.cluster().allocation(key)->choice;
        const GpuChoice& y = fresh.cluster().allocation(key)->choice;
        CHECK(x == y);
      }
      CHECK(s.total() == fresh.total());
      REQUIRE((s.tree() == nullptr) == (fresh.tree() == nullptr));
      if (s.tree() == nullptr) continue;
      for (std::size_t q = 0; q < s.tree()->size(); ++q) {
        const auto& name = s.tree()->queue(q).name;
        CAPTURE(name);
        const std::size_t fq = *fresh.tree()->find(name);
        CHECK(s.book()->fair_share(q) == fresh.book()->fair_share(fq));
      }
    }
  }
  MESSAGE(steps, " steps, ", binds, " binds");
  CHECK(binds > 20);
}

}  // namespace
}  // namespace fracpack::test
