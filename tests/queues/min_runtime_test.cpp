// Min-runtime protection (docs/queues.md rule 13): which Queue's min runtime applies, KAI's
// arithmetic, and victims it shields in `place`, the scheduling state and the replay.
#include <chrono>
#include <memory>

#include <doctest/doctest.h>

#include "fracpack/k8s/object_stream.hpp"
#include "fracpack/k8s/time.hpp"
#include "fracpack/queues/decode_queue.hpp"
#include "fracpack/queues/min_runtime.hpp"
#include "fracpack/queues/scheduling_state.hpp"
#include "fracpack/sim/place_job.hpp"
#include "fracpack/sim/quota/replay.hpp"
#include "support/builders.hpp"
#include "support/quota_scenarios.hpp"

namespace fracpack::test {
namespace {

using namespace std::chrono_literals;
using queues::MinRuntimeDefaults;
using queues::QueueSpec;
using queues::ReclaimMinRuntimeResolve;

QueueSpec spec(const std::string& name, const std::string& parent, std::optional<std::chrono::nanoseconds> preempt,
               std::optional<std::chrono::nanoseconds> reclaim) {
  QueueSpec q;
  q.name = name;
  q.parent = parent;
  q.preempt_min_runtime = preempt;
  q.reclaim_min_runtime = reclaim;
  return q;
}

/// org ─┬─ team-a (preempt 5m, reclaim 10m) ─┬─ a1 (reclaim 1m)
///      │                                     └─ a2
///      └─ team-b
/// other (reclaim 30m) ── o1
queues::QueueTree tree() {
  auto t = queues::QueueTree::build({spec("org", "", std::nullopt, std::nullopt), spec("team-a", "org", 5min, 10min),
                                     spec("a1", "team-a", std::nullopt, 1min), spec("a2", "team-a", std::nullopt, std::nullopt),
                                     spec("team-b", "org", std::nullopt, std::nullopt), spec("other", "", std::nullopt, 30min),
                                     spec("o1", "other", std::nullopt, std::nullopt)});
  REQUIRE_MESSAGE(t.is_ok(), t.status().message());
  return std::move(*t);
}

std::size_t at(const queues::QueueTree& t, const std::string& name) { return *t.find(name); }

TEST_CASE("preempt min runtime: the victim's queue, then up its path, then the default") {
  const auto t = tree();
  const MinRuntimeDefaults defaults{7s, 0s, ReclaimMinRuntimeResolve::kLowestCommonAncestor};
  CHECK(queues::preempt_min_runtime(t, at(t, "a1"), defaults) == 5min);  // a1 sets none: team-a's
  CHECK(queues::preempt_min_runtime(t, at(t, "team-a"), defaults) == 5min);
  CHECK(queues::preempt_min_runtime(t, at(t, "team-b"), defaults) == 7s);  // none on the path
  CHECK(queues::preempt_min_runtime(t, at(t, "o1"), defaults) == 7s);
}

TEST_CASE("reclaim min runtime, lca: one step below the common ancestor towards the victim, then up") {
  const auto t = tree();
  const MinRuntimeDefaults defaults{0s, 3s, ReclaimMinRuntimeResolve::kLowestCommonAncestor};
  // Siblings a2 → a1: below team-a towards the victim is a1 itself, which sets 1m.
  CHECK(queues::reclaim_min_runtime(t, at(t, "a2"), at(t, "a1"), defaults) == 1min);
  // a1 → a2: a2 sets none; up from it, team-a's 10m.
  CHECK(queues::reclaim_min_runtime(t, at(t, "a1"), at(t, "a2"), defaults) == 10min);
  // Cousin team-b → a1: below org towards a1 is team-a: its 10m, not a1's 1m.
  CHECK(queues::reclaim_min_runtime(t, at(t, "team-b"), at(t, "a1"), defaults) == 10min);
  // team-a's branch → team-b: team-b sets none, org neither: the default.
  CHECK(queues::reclaim_min_runtime(t, at(t, "a1"), at(t, "team-b"), defaults) == 3s);
  // Different top-level queues: the victim's top-level queue alone.
  CHECK(queues::reclaim_min_runtime(t, at(t, "o1"), at(t, "a1"), defaults) == 3s);   // org sets none
  CHECK(queues::reclaim_min_runtime(t, at(t, "a1"), at(t, "o1"), defaults) == 30min);  // other's
}

TEST_CASE("reclaim min runtime, queue: the victim's queue, then up, whoever reclaims") {
  const auto t = tree();
  const MinRuntimeDefaults defaults{0s, 3s, ReclaimMinRuntimeResolve::kVictimQueue};
  CHECK(queues::reclaim_min_runtime(t, at(t, "team-b"), at(t, "a1"), defaults) == 1min);
  CHECK(queues::reclaim_min_runtime(t, at(t, "a1"), at(t, "a2"), defaults) == 10min);
  CHECK(queues::reclaim_min_runtime(t, at(t, "a1"), at(t, "o1"), defaults) == 30min);
  CHECK(queues::reclaim_min_runtime(t, at(t, "a1"), at(t, "team-b"), defaults) == 3s);
  CHECK(queues::parse_reclaim_min_runtime_resolve("queue") == ReclaimMinRuntimeResolve::kVictimQueue);
  CHECK(queues::parse_reclaim_min_runtime_resolve("lca") == ReclaimMinRuntimeResolve::kLowestCommonAncestor);
  CHECK_FALSE(queues::parse_reclaim_min_runtime_resolve("LCA").has_value());
}

TEST_CASE("shielded: now < started + min runtime; never without a start; a negative min runtime shields nothing") {
  CHECK(queues::shielded(1000, 60s, 1059));
  CHECK_FALSE(queues::shielded(1000, 60s, 1060));
  CHECK(queues::shielded(1000, 60500ms, 1060));
  CHECK_FALSE(queues::shielded(std::nullopt, 1h, 0));
  CHECK_FALSE(queues::shielded(1000, -5s, 1000));
  CHECK_FALSE(queues::shielded(1000, 0s, 1000));
  CHECK(queues::shielded(1000, 60s, 10));  // started after now (clock skew): still shielded
  CHECK_FALSE(queues::shielded(0, 1h, INT64_MAX / 2));
}

TEST_CASE("decode_queue: preemptMinRuntime and reclaimMinRuntime are Go durations, named when malformed") {
  auto queue = [](const json& extra) {
    json spec = {{"resources", {{"gpu", {{"quota", 1}}}}}};
    spec.update(extra);
    return json{{"apiVersion", "scheduling.run.ai/v2"}, {"kind", "Queue"}, {"metadata", {{"name", "q"}}}, {"spec", spec}};
  };
  std::vector<std::string> warnings;
  auto q = queues::decode_queue(queue({{"preemptMinRuntime", "20s"}, {"reclaimMinRuntime", "1h30m"}}), &warnings);
  REQUIRE_MESSAGE(q.is_ok(), q.status().message());
  CHECK(q->preempt_min_runtime == 20s);
  CHECK(q->reclaim_min_runtime == 90min);
  CHECK(warnings.empty());  // honoured now, not "ignored"
  auto unset = queues::decode_queue(queue(json::object()));
  REQUIRE(unset.is_ok());
  CHECK_FALSE(unset->preempt_min_runtime.has_value());
  for (const json& bad : {json("10 minutes"), json(600), json("1d")}) {
    auto refused = queues::decode_queue(queue({{"reclaimMinRuntime", bad}}));
    REQUIRE_FALSE(refused.is_ok());
    CHECK_MESSAGE(refused.status().message().find("queue q: spec.reclaimMinRuntime = ") != std::string::npos, refused.status().message());
  }
}

/// A Queue object with a GPU quota and the given spec fields; CPU and memory unlimited.
json queue_object(const std::string& name, double quota, const json& extra = json::object()) {
  const json unlimited = {{"quota", -1}, {"limit", -1}, {"overQuotaWeight", 1}};
  json spec = {{"resources", {{"gpu", {{"quota", quota}, {"limit", -1}, {"overQuotaWeight", 1}}}, {"cpu", unlimited}, {"memory", unlimited}}}};
  spec.update(extra);
  return {{"apiVersion", "scheduling.run.ai/v2"}, {"kind", "Queue"}, {"metadata", {{"name", name}}}, {"spec", spec}};
}

/// A running one-GPU pod of `queue` that started `ago` before now (none: no status.startTime).
json running(const std::string& name, const std::string& queue, std::optional<std::chrono::seconds> ago,
             const std::string& priority_class = "train") {
  PodBuilder p(name);
  p.whole(1).label("kai.scheduler/queue", queue).priority_class(priority_class).bound_to("n");
  if (ago) p.obj["status"]["startTime"] = k8s::format_micro_time(std::chrono::system_clock::now() - *ago);
  return p.obj;
}

std::optional<std::vector<std::string>> victims_of(const std::vector<json>& objects, const PlaceOptions& options = {}) {
  auto r = run_place(k8s::with_origins(objects, "test"), options);
  REQUIRE_MESSAGE(r.is_ok(), r.status().message());
  REQUIRE(r->unschedulable.size() == 1);
  if (!r->unschedulable[0].preemption) return std::nullopt;
  return r->unschedulable[0].preemption->victims;
}

TEST_CASE("place: reclaim skips pods younger than their queue's reclaimMinRuntime") {
  NodeBuilder n("n");
  n.gpus(3, 80000);
  // greedy (quota 1) runs three preemptible pods; starved (quota 2) wants two GPUs: two victims.
  auto objects = [&](const json& greedy_extra, std::chrono::seconds young) {
    return std::vector<json>{n.obj, queue_object("greedy", 1, greedy_extra), queue_object("starved", 2),
                             running("g-young", "greedy", young), running("g-old-1", "greedy", 2h), running("g-old-2", "greedy", 3h),
                             PodBuilder("want-two").whole(2).label("kai.scheduler/queue", "starved").obj};
  };
  // Without protection the two largest-first candidates are taken, whichever they are.
  CHECK(victims_of(objects(json::object(), 10min))->size() == 2);
  // reclaimMinRuntime 1h: the pod started 10 minutes ago is shielded; the two old ones go.
  CHECK(victims_of(objects({{"reclaimMinRuntime", "1h"}}, 10min)) == std::vector<std::string>{"default/g-old-1", "default/g-old-2"});
  // 4h shields all three: no victims, the pod just waits.
  CHECK_FALSE(victims_of(objects({{"reclaimMinRuntime", "4h"}}, 10min)).has_value());
  // preemptMinRuntime does not apply to a reclaim.
  CHECK(victims_of(objects({{"preemptMinRuntime", "4h"}}, 10min))->size() == 2);
}

TEST_CASE("place: preemption skips pods younger than preemptMinRuntime, or the default; a pod with no start is never shielded") {
  NodeBuilder n("n");
  n.gpus(1, 80000);
  auto objects = [&](const json& extra, std::optional<std::chrono::seconds> ago) {
    return std::vector<json>{n.obj, queue_object("mine", 1, extra), running("my-low", "mine", ago),
                             PodBuilder("my-high").whole(1).label("kai.scheduler/queue", "mine").priority_class("build").obj};
  };
  CHECK(victims_of(objects(json::object(), 5min)) == std::vector<std::string>{"default/my-low"});
  CHECK_FALSE(victims_of(objects({{"preemptMinRuntime", "1h"}}, 5min)).has_value());
  CHECK(victims_of(objects({{"preemptMinRuntime", "1h"}}, 2h)) == std::vector<std::string>{"default/my-low"});
  CHECK(victims_of(objects({{"preemptMinRuntime", "1h"}}, std::nullopt)) == std::vector<std::string>{"default/my-low"});
  CHECK(victims_of(objects({{"reclaimMinRuntime", "1h"}}, 5min)) == std::vector<std::string>{"default/my-low"});
  PlaceOptions defaults;
  defaults.min_runtime.preempt = 1h;  // --default-preempt-min-runtime 1h, and no queue sets one
  CHECK_FALSE(victims_of(objects(json::object(), 5min), defaults).has_value());
  CHECK(victims_of(objects({{"preemptMinRuntime", "0s"}}, 5min), defaults) == std::vector<std::string>{"default/my-low"});
}

TEST_CASE("replay: a reclaim waits until the victim's reclaimMinRuntime has passed, then happens at once") {
  // As the reclaim test in replay_test, with a's reclaimMinRuntime 30 s: a1 and a2 start at 0;
  // b1 arrives at 10 and finds both shielded; at 30 they are not, one is evicted and b1 starts
  // (KAI's next session after the protection lapses). Its 30 s run ends at 60.
  quota::TimedWorkload w;
  w.pods = {whole_gpu("a1", "a", 0, 100), whole_gpu("a2", "a", 0, 100), whole_gpu("b1", "b", 10, 30)};
  QueueSpec a = gpu_queue("a", 1);
  a.reclaim_min_runtime = 30s;
  auto r = quota::replay(one_node(2), {a, gpu_queue("b", 1)}, w, quota::ReplayOptions{});
  REQUIRE_MESSAGE(r.is_ok(), r.status().message());
  CHECK(r->queues[1].pending_seconds == std::vector<std::int64_t>{20});
  CHECK(r->queues[0].preemptions_suffered == 1);
  // The victim restarts when b1 leaves at 60 and runs its 100 s again.
  CHECK(r->end == 160);
  // A default of 200 s shields a's pods for their whole run: nothing is evicted, b1 starts at 100.
  quota::ReplayOptions shielded;
  shielded.min_runtime.reclaim = 200s;
  auto kept = quota::replay(one_node(2), {gpu_queue("a", 1), gpu_queue("b", 1)}, w, shielded);
  REQUIRE(kept.is_ok());
  CHECK(kept->queues[1].pending_seconds == std::vector<std::int64_t>{90});
  CHECK(kept->queues[0].preemptions_suffered == 0);
}

TEST_CASE("replay: a trace pod's own start time is not its start in the replay") {
  // As above, but the trace says a1 and a2 started long before the replay: the replay places
  // them itself, at 0, and counts from there (without the reset b1 would reclaim at 10).
  quota::TimedWorkload w;
  w.pods = {whole_gpu("a1", "a", 0, 100), whole_gpu("a2", "a", 0, 100), whole_gpu("b1", "b", 10, 30)};
  w.pods[0].pod.started = -100'000;
  w.pods[1].pod.started = -100'000;
  QueueSpec a = gpu_queue("a", 1);
  a.reclaim_min_runtime = 30s;
  auto r = quota::replay(one_node(2), {a, gpu_queue("b", 1)}, w, quota::ReplayOptions{});
  REQUIRE(r.is_ok());
  CHECK(r->queues[1].pending_seconds == std::vector<std::int64_t>{20});
}

TEST_CASE("replay: a min runtime on a queue nobody reclaims from changes nothing") {
  quota::TimedWorkload w;
  w.pods = {whole_gpu("a1", "a", 0, 100), whole_gpu("a2", "a", 0, 100), whole_gpu("b1", "b", 10, 30)};
  QueueSpec b = gpu_queue("b", 1);
  b.reclaim_min_runtime = 7s;  // b's pods are never victims here
  auto plain = quota::replay(one_node(2), {gpu_queue("a", 1), gpu_queue("b", 1)}, w, quota::ReplayOptions{});
  auto with = quota::replay(one_node(2), {gpu_queue("a", 1), b}, w, quota::ReplayOptions{});
  REQUIRE(plain.is_ok());
  REQUIRE(with.is_ok());
  CHECK(with->end == plain->end);
  CHECK(with->cycles == plain->cycles);  // no extra cycle for a lapse that shields nobody
  CHECK(with->queues[0].pending_seconds == plain->queues[0].pending_seconds);
  CHECK(with->queues[1].pending_seconds == plain->queues[1].pending_seconds);
}

/// A state on one 2-GPU node whose clock reads `now`.
std::unique_ptr<SchedulingState> clocked_state(const std::int64_t& now) {
  SchedulingState::Options options;
  options.clock = [&now] { return now; };
  auto state = std::make_unique<SchedulingState>(options);
  SchedulingState& s = *state;
  ObjectChange c;
  c.nodes.push_back(nvf("n", 2, 80000).spec());
  queues::PodGroupSpec group;
  group.name = "g";
  group.min_member = 2;
  c.groups.push_back(group);
  REQUIRE(s.validate(c).is_ok());
  (void)s.apply(c);
  return state;
}

TEST_CASE("scheduling state: Bind records the clock as the start; a terms change of the same running pod keeps it") {
  std::int64_t now = 1000;
  auto state = clocked_state(now);
  SchedulingState& s = *state;
  const auto policy = *make_policy("pack");
  const PodRequest pod = PodBuilder("p").uid("u").whole(1).spec();
  REQUIRE(s.bind(pod, 0, *policy).is_ok());
  CHECK(s.cluster().allocation("default/p")->started == 1000);
  CHECK(s.pod("default/p")->raw.started == 1000);
  now = 2000;
  // The watch then sees it bound with another priority class (a terms change) and no startTime.
  const PodRequest seen = PodBuilder("p").uid("u").whole(1).priority_class("build").bound_to("n").spec();
  CHECK(s.observe(seen) == PodStanding::kBound);
  CHECK(s.cluster().allocation("default/p")->started == 1000);
  CHECK(s.verify().empty());
  // A new pod under the same name (another uid) is another run.
  const PodRequest recreated = PodBuilder("p").uid("u2").whole(1).bound_to("n").spec();
  CHECK(s.observe(recreated) == PodStanding::kBound);
  CHECK_FALSE(s.cluster().allocation("default/p")->started.has_value());
}

TEST_CASE("scheduling state: a gang plan that lapses forgets its start; the next plan records its own") {
  std::int64_t now = 1000;
  auto state = clocked_state(now);
  SchedulingState& s = *state;
  const auto policy = *make_policy("pack");
  const PodRequest m0 = PodBuilder("m0").uid("u0").whole(1).gang("g").spec();
  const PodRequest m1 = PodBuilder("m1").uid("u1").whole(1).gang("g").spec();
  (void)s.observe(m0);
  (void)s.observe(m1);
  const auto t0 = std::chrono::steady_clock::now();
  REQUIRE(s.plan_gang(m0, *policy, t0, 30s).kind == SchedulingState::GangDecision::Kind::kPlanned);
  CHECK(s.cluster().allocation("default/m1")->started == 1000);
  CHECK(s.expire_plans(t0 + 31s) == 2);
  CHECK_FALSE(s.pod("default/m1")->raw.started.has_value());
  now = 5000;
  REQUIRE(s.plan_gang(m0, *policy, t0 + 40s, 30s).kind == SchedulingState::GangDecision::Kind::kPlanned);
  CHECK(s.cluster().allocation("default/m0")->started == 5000);
  CHECK(s.cluster().allocation("default/m1")->started == 5000);
}

}  // namespace
}  // namespace fracpack::test
