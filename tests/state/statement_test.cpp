// Statement: evictions, placements and moves on the scheduling state, kept by commit() and undone
// exactly by rollback() — the same GPUs, the same starts, the same queue figures.
#include <chrono>

#include <doctest/doctest.h>

#include "fracpack/binpack/policy.hpp"
#include "fracpack/queues/decode_queue.hpp"
#include "fracpack/queues/scheduling_state.hpp"
#include "fracpack/queues/statement.hpp"
#include "support/builders.hpp"

namespace fracpack::test {
namespace {

using queues::Resource;

/// Node n (4 GPUs of 80000 MiB), queue qa; `old` (1 GPU, devices 0) and `half` (40000 MiB on GPU 1)
/// run; `wants` (2 GPUs) waits.
void fill(SchedulingState& s) {
  ObjectChange c;
  c.nodes.push_back(nvf("n", 4, 80000).spec());
  c.queues = {*queues::decode_queue(queue_object("qa", "", 4))};
  REQUIRE(s.validate(c).is_ok());
  (void)s.apply(c);
  auto old = PodBuilder("old").whole(1).label("kai.scheduler/queue", "qa").bound_to("n").spec();
  old.started = 1000;
  REQUIRE(s.observe(old) == PodStanding::kBound);
  auto half = PodBuilder("half").gpu_memory("40000Mi").annotation("nvidia.com/container.main.gpus.devices", "1")
                  .label("kai.scheduler/queue", "qa").bound_to("n").spec();
  half.started = 2000;
  REQUIRE(s.observe(half) == PodStanding::kBound);
  REQUIRE(s.observe(PodBuilder("wants").whole(2).label("kai.scheduler/queue", "qa").spec()) == PodStanding::kPending);
}

/// Everything a rollback must give back: per pod standing, GPUs and start; the queue's figures.
struct Snapshot {
  std::vector<NodeUsage> usage;
  std::map<std::string, std::tuple<PodStanding, std::vector<int>, std::optional<std::int64_t>>> pods;
  queues::Amounts allocated;
  std::size_t pending = 0;
  bool operator==(const Snapshot&) const = default;
};

Snapshot snapshot(const SchedulingState& s) {
  Snapshot out;
  out.usage = usage_of(s.cluster());
  for (const std::string& key : s.pod_keys()) {
    const PodRecord* r = s.pod(key);
    const Allocation* a = s.cluster().allocation(key);
    out.pods[key] = {r->standing, a ? a->choice.gpus : std::vector<int>{}, r->raw.started};
  }
  out.allocated = s.book()->allocated(*s.tree()->find("qa"));
  out.pending = s.pending_count();
  const std::string broken = s.check_invariants();
  REQUIRE_MESSAGE(broken.empty(), broken);
  return out;
}

GpuChoice whole(std::vector<int> gpus) {
  GpuChoice c;
  c.hold = GpuHold::kWhole;
  c.gpus = std::move(gpus);
  c.memory.assign(c.gpus.size(), MiB(80000));
  return c;
}

TEST_CASE("a rolled-back statement leaves the state exactly as it was") {
  SchedulingState s(SchedulingState::Options{});
  fill(s);
  const Snapshot before = snapshot(s);
  {
    Statement statement(s);
    REQUIRE(statement.evict("default/old").is_ok());
    REQUIRE(statement.evict("default/half").is_ok());
    CHECK(s.pod("default/old") == nullptr);
    CHECK(statement.evicted() == std::vector<std::string>{"default/old", "default/half"});
    REQUIRE(statement.place("default/wants", 0, whole({0, 1})).is_ok());  // on the GPUs the victims left
    CHECK(s.pod("default/wants")->standing == PodStanding::kBound);
    CHECK(s.book()->allocated(*s.tree()->find("qa"))[Resource::kGpu] == 2000);
    statement.rollback(0);
    CHECK(snapshot(s) == before);
    // Again, and left to the destructor.
    REQUIRE(statement.evict("default/old").is_ok());
    REQUIRE(statement.place("default/wants", 0, whole({0, 2})).is_ok());
  }
  CHECK(snapshot(s) == before);
  CHECK(s.verify().empty());
}

TEST_CASE("rollback to a checkpoint keeps what came before it") {
  SchedulingState s(SchedulingState::Options{});
  fill(s);
  Statement statement(s);
  REQUIRE(statement.evict("default/old").is_ok());
  const Snapshot after_first = snapshot(s);
  const std::size_t mark = statement.checkpoint();
  REQUIRE(statement.evict("default/half").is_ok());
  REQUIRE(statement.place("default/wants", 0, whole({0, 1})).is_ok());
  statement.rollback(mark);
  CHECK(snapshot(s) == after_first);
  CHECK(statement.evicted() == std::vector<std::string>{"default/old"});
}

TEST_CASE("a committed statement keeps its changes, and moved pods start a new run") {
  SchedulingState s(SchedulingState::Options{});
  fill(s);
  {
    Statement statement(s);
    REQUIRE(statement.move("default/old", 0, whole({3})).is_ok());
    CHECK(statement.evicted().empty());  // moved, not evicted
    REQUIRE(statement.place("default/wants", 0, whole({0, 2})).is_ok());
    statement.commit();
  }
  CHECK(s.cluster().allocation("default/old")->choice.gpus == std::vector<int>{3});
  CHECK(s.pod("default/old")->raw.started != std::optional<std::int64_t>(1000));
  CHECK(s.cluster().allocation("default/wants")->choice.gpus == std::vector<int>{0, 2});
  CHECK(s.book()->allocated(*s.tree()->find("qa"))[Resource::kGpu] == 3000 + 500);
  CHECK(s.verify().empty());
}

TEST_CASE("a refused change changes nothing and says why") {
  SchedulingState s(SchedulingState::Options{});
  fill(s);
  const Snapshot before = snapshot(s);
  Statement statement(s);
  CHECK(statement.evict("default/wants").code() == Code::kNotFound);   // pending, not bound
  CHECK(statement.place("default/old", 0, whole({3})).code() == Code::kNotFound);  // bound, not pending
  CHECK(statement.place("default/wants", 0, whole({0, 1})).code() == Code::kUnschedulable);  // GPUs 0 and 1 are held
  CHECK(statement.rebind("default/old", 0, whole({3})).code() == Code::kNotFound);  // not evicted here
  CHECK(statement.move("default/half", 0, whole({0})).code() == Code::kUnschedulable);  // GPU 0 is old's: not moved
  CHECK(snapshot(s) == before);
}

TEST_CASE("a member held for its gang's plan runs nowhere yet: never evicted, never a victim") {
  SchedulingState s(SchedulingState::Options{});
  ObjectChange c;
  c.nodes.push_back(nvf("n", 4, 80000).spec());
  c.queues = {*queues::decode_queue(queue_object("qa", "", 4))};
  auto group = queues::decode_pod_group(json{{"apiVersion", "scheduling.run.ai/v2alpha2"},
                                             {"kind", "PodGroup"},
                                             {"metadata", {{"name", "g"}, {"namespace", "default"}}},
                                             {"spec", {{"minMember", 2}, {"queue", "qa"}}}});
  REQUIRE(group.is_ok());
  c.groups = {*group};
  REQUIRE(s.validate(c).is_ok());
  (void)s.apply(c);
  const auto policy = make_policy("pack", {});
  REQUIRE(policy.is_ok());
  PodRequest a = PodBuilder("a").whole(1).gang("g").spec();
  PodRequest b = PodBuilder("b").whole(1).gang("g").spec();
  (void)s.observe(a);
  (void)s.observe(b);
  const auto d = s.plan_gang(*s.effective(a), **policy, std::chrono::steady_clock::now(), std::chrono::seconds(30));
  REQUIRE(d.kind == SchedulingState::GangDecision::Kind::kPlanned);
  Statement statement(s);
  CHECK(statement.evict("default/a").code() == Code::kFailedPrecondition);
  CHECK(s.victim_jobs().at("default/a").planned);
  CHECK(s.victim_jobs().at("default/b").planned);
}

}  // namespace
}  // namespace fracpack::test
