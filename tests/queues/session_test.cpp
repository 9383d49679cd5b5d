// Queue order, admission before placement, gangs, reclaim candidates, and `place` with queues.
#include <doctest/doctest.h>

#include "fracpack/k8s/object_stream.hpp"
#include "fracpack/sim/place_job.hpp"
#include "fracpack/queues/reclaim.hpp"
#include "fracpack/queues/session.hpp"
#include "support/builders.hpp"

namespace fracpack::test {
namespace {

using queues::Amounts;
using queues::kUnlimited;
using queues::Resource;

/// A Queue object: GPU quota/limit/weight as given; CPU and memory unlimited.
json queue(const std::string& name, const std::string& parent, double quota, double limit, double weight,
           int priority = 100, const std::string& created = "2026-01-01T00:00:00Z") {
  json unlimited = {{"quota", -1}, {"limit", -1}, {"overQuotaWeight", 1}};
  json spec = {{"priority", priority},
               {"resources", {{"gpu", {{"quota", quota}, {"limit", limit}, {"overQuotaWeight", weight}}}, {"cpu", unlimited},
                              {"memory", unlimited}}}};
  if (!parent.empty()) spec["parentQueue"] = parent;
  return {{"apiVersion", "scheduling.run.ai/v2"},
          {"kind", "Queue"},
          {"metadata", {{"name", name}, {"creationTimestamp", created}}},
          {"spec", spec}};
}

PlaceReport run(const std::vector<json>& objects, const std::string& policy_name = "pack") {
  PlaceOptions options;
  options.policy = policy_name;
  auto r = run_place(k8s::with_origins(objects, "test"), options);
  REQUIRE_MESSAGE(r.is_ok(), r.status().message());
  return *r;
}

const QueueTotals& totals(const PlaceReport& r, const std::string& name) {
  for (const auto& q : r.queues) {
    if (q.name == name) return q;
  }
  FAIL("no queue " << name);
  return r.queues.front();
}

std::vector<std::string> placed(const PlaceReport& r) {
  std::vector<std::string> out;
  for (const auto& p : r.placements) out.push_back(p.pod);
  return out;
}

TEST_CASE("a queue under its fair share goes before one over it, whatever the input order") {
  NodeBuilder n("n");
  n.gpus(6, 80000);
  // Both deserve 2 GPUs. "busy" runs 4 and asks for 1 more, "idle" asks for 3: fair shares come
  // out 3 and 3, so busy is over its share and idle goes first although busy's pod is first.
  std::vector<json> objects{n.obj, queue("busy", "", 2, -1, 1), queue("idle", "", 2, -1, 1)};
  for (int i = 0; i < 4; ++i) {
    objects.push_back(PodBuilder("run-" + std::to_string(i)).whole(1).label("kai.scheduler/queue", "busy").bound_to("n").obj);
  }
  objects.push_back(PodBuilder("busy-next").whole(1).label("kai.scheduler/queue", "busy").obj);
  for (int i = 1; i <= 3; ++i) {
    objects.push_back(PodBuilder("idle-" + std::to_string(i)).whole(1).label("kai.scheduler/queue", "idle").obj);
  }
  PlaceReport r = run(objects);
  CHECK(placed(r) == std::vector<std::string>{"default/idle-1", "default/idle-2"});
  CHECK(totals(r, "busy").fair_share[Resource::kGpu] == 3000);
  CHECK(totals(r, "idle").fair_share[Resource::kGpu] == 3000);
  // Then KAI's reclaim: idle, under its share of 3, takes one GPU back from busy, over its share.
  REQUIRE(r.unschedulable.size() == 2);
  const NotPlaced& idle3 = r.unschedulable[1];
  CHECK(idle3.pod == "default/idle-3");
  REQUIRE(idle3.preemption);
  CHECK(idle3.preemption->action == "reclaim");
  REQUIRE(idle3.preemption->victims.size() == 1);
  CHECK(idle3.preemption->victims[0].starts_with("default/run-"));
  CHECK(totals(r, "busy").allocated[Resource::kGpu] == 3000);
  CHECK(totals(r, "idle").allocated[Resource::kGpu] == 3000);
  CHECK(totals(r, "idle").pending[Resource::kGpu] == 0);  // placed by reclaim: allocated, not pending
  CHECK(totals(r, "busy").pending[Resource::kGpu] == 1000);
}

TEST_CASE("then higher queue priority, then smaller dominant share, then creation time") {
  NodeBuilder n("n");
  n.gpus(1, 80000);
  auto pod = [](const std::string& name, const std::string& q) {
    return PodBuilder(name).whole(1).label("kai.scheduler/queue", q).obj;
  };
  // One GPU, three queues under their fair share: priority decides.
  PlaceReport prio = run({n.obj, queue("low", "", 1, -1, 1, 50), queue("high", "", 1, -1, 1, 200), pod("a", "low"), pod("b", "high")});
  CHECK(placed(prio) == std::vector<std::string>{"default/b"});
  // Same priority: the queue created first.
  PlaceReport age = run({n.obj, queue("young", "", 1, -1, 1, 100, "2026-05-01T00:00:00Z"),
                         queue("old", "", 1, -1, 1, 100, "2025-01-01T00:00:00Z"), pod("a", "young"), pod("b", "old")});
  CHECK(placed(age) == std::vector<std::string>{"default/b"});
}

TEST_CASE("jobs inside a queue go by priority, then age") {
  NodeBuilder n("n");
  n.gpus(1, 80000);
  PodBuilder older("older");
  older.whole(1).label("kai.scheduler/queue", "q").obj["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z";
  PodBuilder newer("newer");
  newer.whole(1).label("kai.scheduler/queue", "q").obj["metadata"]["creationTimestamp"] = "2026-02-01T00:00:00Z";
  PodBuilder vip("vip");
  vip.whole(1).label("kai.scheduler/queue", "q").priority_class("build").obj["metadata"]["creationTimestamp"] = "2026-03-01T00:00:00Z";
  PlaceReport by_priority = run({n.obj, queue("q", "", 1, -1, 1), newer.obj, older.obj, vip.obj});
  CHECK(placed(by_priority) == std::vector<std::string>{"default/vip"});
  PlaceReport by_age = run({n.obj, queue("q", "", 1, -1, 1), newer.obj, older.obj});
  CHECK(placed(by_age) == std::vector<std::string>{"default/older"});
}

TEST_CASE("admission refuses before placement, with the queue's own words") {
  NodeBuilder n("n");
  n.gpus(8, 80000);
  PlaceReport r = run({n.obj, queue("dept", "", 4, 3, 1), queue("team", "dept", 4, -1, 1),
                       PodBuilder("big").whole(4).label("kai.scheduler/queue", "team").obj,
                       PodBuilder("small").whole(2).label("kai.scheduler/queue", "team").obj});
  REQUIRE(r.unschedulable.size() == 1);
  CHECK(r.unschedulable[0].pod == "default/big");
  CHECK(r.unschedulable[0].status == "OverLimit");
  CHECK(r.unschedulable[0].reason.find("queue dept: gpu would reach 4 GPUs") == 0);
  CHECK(placed(r) == std::vector<std::string>{"default/small"});
}

TEST_CASE("a fresh default-queue with zero quota refuses non-preemptible pods and says why") {
  NodeBuilder n("n");
  n.gpus(1, 80000);
  PlaceReport r = run({n.obj, queue("default-queue", "", 0, -1, 1), PodBuilder("serve").whole(1).priority_class("inference").obj,
                       PodBuilder("train").whole(1).priority_class("train").obj});
  REQUIRE(r.unschedulable.size() == 1);
  CHECK(r.unschedulable[0].status == "NonPreemptibleOverQuota");
  CHECK(r.unschedulable[0].reason.find("a fresh KAI install gives default-queue zero quota") != std::string::npos);
  CHECK(placed(r) == std::vector<std::string>{"default/train"});  // preemptible: may run over quota
}

TEST_CASE("jobs in a missing or a parent queue are refused as invalid") {
  NodeBuilder n("n");
  n.gpus(1, 80000);
  PlaceReport r = run({n.obj, queue("dept", "", 1, -1, 1), queue("team", "dept", 1, -1, 1),
                       PodBuilder("a").whole(1).label("kai.scheduler/queue", "dept").obj,
                       PodBuilder("b").whole(1).label("kai.scheduler/queue", "ghost").obj});
  REQUIRE(r.unschedulable.size() == 2);
  CHECK(r.unschedulable[0].reason.find("has child queues; jobs go in leaf queues only") != std::string::npos);
  CHECK(r.unschedulable[1].reason.find("\"ghost\"") != std::string::npos);
}

TEST_CASE("a gang is admitted on its whole charge and placed all-or-nothing") {
  NodeBuilder n("n");
  n.gpus(8, 80000);
  json group = {{"kind", "PodGroup"},
                {"metadata", {{"name", "g"}, {"namespace", "default"}}},
                {"spec", {{"minMember", 2}, {"queue", "team"}, {"priorityClassName", "inference"}}}};
  PlaceReport r = run({n.obj, queue("team", "", 3, -1, 1), group, PodBuilder("g-0").whole(2).gang("g").obj,
                       PodBuilder("g-1").whole(2).gang("g").obj});
  // 4 GPUs of non-preemptible work against a quota of 3: the group is refused as one.
  REQUIRE(r.unschedulable.size() == 2);
  CHECK(r.unschedulable[0].status == "NonPreemptibleOverQuota");
  CHECK(r.unschedulable[1].status == "NonPreemptibleOverQuota");
  CHECK(r.placements.empty());
}

TEST_CASE("KAI #1847 at admission: a pending fraction is charged against the smallest GPU it could use") {
  std::vector<json> objects{nvf("big", 1, 81920).obj, nvf("small", 1, 40960).obj, queue("team", "", 0.5, -1, 1),
                            PodBuilder("p").gpu_memory("20000Mi").label("kai.scheduler/queue", "team").priority_class("inference").obj};
  PlaceReport r = run(objects);
  // Admitted: 0.49 of the 40900 MiB GPU is within the 0.5 quota (a 100 MiB placeholder would have
  // charged it 200 GPUs). Once placed (pack chose the 81900 MiB GPU) it is charged by that GPU.
  REQUIRE(r.placements.size() == 1);
  CHECK(totals(r, "team").allocated[Resource::kGpu] == 250);
}

TEST_CASE("reclaim candidates: preemptible pods of over-fair-share queues, fewest first") {
  NodeBuilder n("n");
  n.gpus(4, 80000);
  std::vector<json> objects{n.obj, queue("greedy", "", 1, -1, 1), queue("starved", "", 3, -1, 1)};
  for (int i = 0; i < 4; ++i) {
    PodBuilder p("g-" + std::to_string(i));
    p.whole(1).label("kai.scheduler/queue", "greedy").priority_class(i == 0 ? "inference" : "train").bound_to("n");
    objects.push_back(p.obj);
  }
  objects.push_back(PodBuilder("want-two").whole(2).label("kai.scheduler/queue", "starved").obj);
  PlaceReport r = run(objects);
  REQUIRE(r.unschedulable.size() == 1);
  REQUIRE(r.unschedulable[0].preemption);
  CHECK(r.unschedulable[0].preemption->node == "n");
  // Two victims, never the non-preemptible g-0.
  CHECK(r.unschedulable[0].preemption->victims.size() == 2);
  for (const auto& v : r.unschedulable[0].preemption->victims) CHECK(v != "default/g-0");
}

TEST_CASE("reclaim never takes from a queue at or under its fair share; lower priority of the own queue may go") {
  NodeBuilder n("n");
  n.gpus(2, 80000);
  std::vector<json> objects{n.obj, queue("fair", "", 1, -1, 1), queue("mine", "", 1, -1, 1),
                            PodBuilder("theirs").whole(1).label("kai.scheduler/queue", "fair").priority_class("train").bound_to("n").obj,
                            PodBuilder("my-low").whole(1).label("kai.scheduler/queue", "mine").priority_class("train").bound_to("n").obj,
                            PodBuilder("my-high").whole(1).label("kai.scheduler/queue", "mine").priority_class("build").obj};
  PlaceReport r = run(objects);
  REQUIRE(r.unschedulable.size() == 1);
  REQUIRE(r.unschedulable[0].preemption);
  CHECK(r.unschedulable[0].preemption->victims == std::vector<std::string>{"default/my-low"});
}

TEST_CASE("three levels: shares flow down, limits bind at the grandparent, usage climbs to the root") {
  NodeBuilder n("n");
  n.gpus(8, 80000);
  std::vector<json> objects{n.obj, queue("org", "", 8, 3, 1), queue("dept", "org", 8, -1, 1), queue("team", "dept", 8, -1, 1)};
  for (int i = 0; i < 4; ++i) {
    objects.push_back(PodBuilder("p" + std::to_string(i)).whole(1).label("kai.scheduler/queue", "team").obj);
  }
  PlaceReport r = run(objects);
  CHECK(r.placements.size() == 3);
  REQUIRE(r.unschedulable.size() == 1);
  CHECK(r.unschedulable[0].status == "OverLimit");
  CHECK(r.unschedulable[0].reason.find("queue org:") == 0);
  CHECK(totals(r, "org").allocated[Resource::kGpu] == 3000);
  CHECK(totals(r, "dept").allocated[Resource::kGpu] == 3000);
  CHECK(totals(r, "team").fair_share[Resource::kGpu] == 3000);  // capped by org's limit on the way down
}

// A KAI administrator's review: each of these once disagreed with KAI.
TEST_CASE("a PodGroup's queue and preemptibility apply to its running pods too") {
  NodeBuilder n("n");
  n.gpus(2, 80000);
  json group = {{"kind", "PodGroup"},
                {"metadata", {{"name", "g"}, {"namespace", "default"}}},
                {"spec", {{"queue", "qa"}, {"preemptibility", "non-preemptible"}}}};
  PlaceReport r = run({n.obj, queue("qa", "", 1, -1, 1), queue("qb", "", 1, -1, 1), group,
                       PodBuilder("a0").whole(1).gang("g").priority_class("train").bound_to("n").obj,
                       PodBuilder("a1").whole(1).gang("g").priority_class("train").bound_to("n").obj,
                       PodBuilder("b0").whole(1).label("kai.scheduler/queue", "qb").obj});
  CHECK(totals(r, "qa").allocated_non_preemptible[Resource::kGpu] == 2000);
  REQUIRE(r.unschedulable.size() == 1);
  CHECK_FALSE(r.unschedulable[0].preemption);  // non-preemptible pods are never victims
}

TEST_CASE("a queue with no fair share left may not reclaim") {
  NodeBuilder n("n");
  n.gpus(2, 80000);
  PlaceReport r = run({n.obj, queue("qa", "", 2, -1, 1), queue("qz", "", 0, -1, 0),
                       PodBuilder("a0").whole(1).label("kai.scheduler/queue", "qa").priority_class("train").bound_to("n").obj,
                       PodBuilder("a1").whole(1).label("kai.scheduler/queue", "qa").priority_class("train").bound_to("n").obj,
                       PodBuilder("z").whole(1).label("kai.scheduler/queue", "qz").obj});
  REQUIRE(r.unschedulable.size() == 1);
  CHECK_FALSE(r.unschedulable[0].preemption);
}

TEST_CASE("a quota -1 sibling never eats into another queue's quota") {
  NodeBuilder n("n");
  n.gpus(4, 80000);
  std::vector<json> objects{n.obj, queue("greedy", "", -1, -1, 1), queue("guaranteed", "", 2, -1, 1)};
  for (int i = 0; i < 4; ++i) {
    objects.push_back(PodBuilder("g" + std::to_string(i)).whole(1).label("kai.scheduler/queue", "greedy").priority_class("train").bound_to("n").obj);
  }
  objects.push_back(PodBuilder("mine").whole(2).label("kai.scheduler/queue", "guaranteed").obj);
  PlaceReport r = run(objects);
  CHECK(totals(r, "guaranteed").fair_share[Resource::kGpu] == 2000);
  CHECK(totals(r, "greedy").fair_share[Resource::kGpu] == 2000);
  REQUIRE(r.unschedulable.size() == 1);
  // Yet greedy is never reclaimed from, as in KAI: with quota -1 its allocatable share is its
  // limit, unlimited, so it is never over it (strategies.go FitsMaintainFairShare), nor over its
  // quota (ReclaimeeExceedsDeservedQuota).
  CHECK_FALSE(r.unschedulable[0].preemption);
}

TEST_CASE("a queue with quota -1 and a limit is reclaimed from above its limit-capped share") {
  NodeBuilder n("n");
  n.gpus(4, 80000);
  std::vector<json> objects{n.obj, queue("greedy", "", -1, 3, 1), queue("guaranteed", "", 2, -1, 1)};
  for (int i = 0; i < 4; ++i) {
    objects.push_back(PodBuilder("g" + std::to_string(i)).whole(1).label("kai.scheduler/queue", "greedy").priority_class("train").bound_to("n").obj);
  }
  objects.push_back(PodBuilder("mine").whole(1).label("kai.scheduler/queue", "guaranteed").obj);
  PlaceReport r = run(objects);
  REQUIRE(r.unschedulable.size() == 1);
  REQUIRE(r.unschedulable[0].preemption);  // greedy holds 4, its allocatable share is its limit 3
  CHECK(r.unschedulable[0].preemption->victims.size() == 1);
}

TEST_CASE("admission names every limit on the path before any quota") {
  NodeBuilder n("n");
  n.gpus(2, 80000);
  PlaceReport r = run({n.obj, queue("p", "", 2, 0.5, 1), queue("l", "p", 0.1, -1, 1),
                       PodBuilder("np").whole(1).label("kai.scheduler/queue", "l").priority_class("inference").obj});
  REQUIRE(r.unschedulable.size() == 1);
  CHECK(r.unschedulable[0].status == "OverLimit");
  CHECK(r.unschedulable[0].reason.find("queue p:") == 0);
}

TEST_CASE("an elastic gang is admitted on minMember; extra members are admitted one by one") {
  NodeBuilder n("n");
  n.gpus(4, 80000);
  json group = {{"kind", "PodGroup"}, {"metadata", {{"name", "g"}, {"namespace", "default"}}}, {"spec", {{"minMember", 2}}}};
  PlaceReport r = run({n.obj, queue("q", "", 2, 2, 1), group, PodBuilder("g-0").whole(1).gang("g").label("kai.scheduler/queue", "q").obj,
                       PodBuilder("g-1").whole(1).gang("g").label("kai.scheduler/queue", "q").obj,
                       PodBuilder("g-2").whole(1).gang("g").label("kai.scheduler/queue", "q").obj});
  CHECK(placed(r) == std::vector<std::string>{"default/g-0", "default/g-1"});
  REQUIRE(r.unschedulable.size() == 1);
  CHECK(r.unschedulable[0].pod == "default/g-2");
  CHECK(r.unschedulable[0].status == "OverLimit");
}

/// A PodGroup and its `n` pending one-GPU pods in queue q, created `created` (RFC 3339).
std::vector<json> elastic_gang(const std::string& name, int min_member, int n, const std::string& created) {
  std::vector<json> out{{{"kind", "PodGroup"},
                         {"metadata", {{"name", name}, {"namespace", "default"}, {"creationTimestamp", created}}},
                         {"spec", {{"minMember", min_member}, {"queue", "q"}}}}};
  for (int i = 0; i < n; ++i) {
    PodBuilder p(name + "-" + std::to_string(i));
    p.whole(1).gang(name).label("kai.scheduler/queue", "q").obj["metadata"]["creationTimestamp"] = created;
    out.push_back(p.obj);
  }
  return out;
}

TEST_CASE("elastic gangs: every gang's minimum before any gang's extra members, then extras by turns") {
  // KAI's elastic plugin orders jobs below their minimum first, then at it, then above it; a job
  // goes back in line after each turn. Five GPUs, two gangs of four (minMember 1): the older gets
  // three, the younger two; without the order the older would take four.
  NodeBuilder n("n");
  n.gpus(5, 80000);
  std::vector<json> objects{n.obj, queue("q", "", -1, -1, 1)};
  for (json& o : elastic_gang("old", 1, 4, "2026-01-01T00:00:00Z")) objects.push_back(o);
  for (json& o : elastic_gang("young", 1, 4, "2026-01-01T00:01:00Z")) objects.push_back(o);
  std::vector<std::string> got = placed(run(objects));
  std::sort(got.begin(), got.end());
  CHECK(got == std::vector<std::string>{"default/old-0", "default/old-1", "default/old-2", "default/young-0", "default/young-1"});
}

TEST_CASE("an elastic gang's step that finds no node ends its session: later members wait, saying why") {
  NodeBuilder n("n");
  n.gpus(4, 80000);
  std::vector<json> objects{n.obj, queue("q", "", -1, -1, 1)};
  for (json& o : elastic_gang("g", 1, 3, "2026-01-01T00:00:00Z")) objects.push_back(o);
  objects[4]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "8";  // g-1 fits no node
  PlaceReport r = run(objects);
  CHECK(placed(r) == std::vector<std::string>{"default/g-0"});
  REQUIRE(r.unschedulable.size() == 2);
  const auto& g2 = r.unschedulable[0].pod == "default/g-2" ? r.unschedulable[0] : r.unschedulable[1];
  CHECK(g2.pod == "default/g-2");
  CHECK_MESSAGE(g2.reason.find("member default/g-1 found no node") != std::string::npos, g2.reason);
}

TEST_CASE("an elastic gang's member beyond the minimum allocate placed reclaims on its own") {
  // KAI's reclaim takes a job with pods pending, for its next batch: here one member of a gang
  // whose minimum allocate placed on the last free GPU.
  NodeBuilder n("n");
  n.gpus(4, 80000);
  std::vector<json> objects{n.obj, queue("a", "", 2, -1, 1), queue("b", "", 2, -1, 1)};
  for (int i = 0; i < 3; ++i) {
    objects.push_back(PodBuilder("b-" + std::to_string(i)).whole(1).label("kai.scheduler/queue", "b").priority_class("train").bound_to("n").obj);
  }
  for (json& o : elastic_gang("g", 1, 2, "2026-01-01T00:00:00Z")) {
    if (o["kind"] == "PodGroup") o["spec"]["queue"] = "a";
    if (o["kind"] != "PodGroup") o["metadata"]["labels"]["kai.scheduler/queue"] = "a";
    objects.push_back(o);
  }
  PlaceReport r = run(objects);
  CHECK(placed(r) == std::vector<std::string>{"default/g-0"});
  REQUIRE(r.unschedulable.size() == 1);
  CHECK(r.unschedulable[0].pod == "default/g-1");
  REQUIRE(r.unschedulable[0].preemption);
  CHECK(r.unschedulable[0].preemption->action == "reclaim");
  REQUIRE(r.unschedulable[0].preemption->victims.size() == 1);
  CHECK(r.unschedulable[0].preemption->victims[0].starts_with("default/b-"));
}

TEST_CASE("queues divide only usable nodes, slots as GPUs, less what other schedulers' pods hold") {
  NodeBuilder down("down");
  down.gpus(8, 80000).not_ready();
  NodeBuilder slots("slots");
  slots.gpus(1, 46068).replicas(4, "time-slicing");
  NodeBuilder up("up");
  up.gpus(2, 80000);
  PodBuilder other("other");
  other.whole(1).bound_to("up").obj["spec"]["schedulerName"] = "default-scheduler";
  PlaceReport r = run({down.obj, slots.obj, up.obj, other.obj, queue("q", "", -1, -1, 1),
                       PodBuilder("want").whole(8).label("kai.scheduler/queue", "q").obj});
  // 4 slots + 2 GPUs - 1 held by another scheduler = 5 GPUs to divide; the NotReady node's 8 do not count.
  CHECK(totals(r, "q").fair_share[Resource::kGpu] == 5000);
  CHECK(totals(r, "q").allocated[Resource::kGpu] == 0);
}

TEST_CASE("queue totals in the JSON report, in KAI's units") {
  PlaceReport r = run({nvf("n", 2, 80000).obj, queue("dept", "", 2, -1, 1), queue("team", "dept", 1.5, -1, 1),
                       PodBuilder("a").fraction("0.5").label("kai.scheduler/queue", "team").obj});
  auto j = report_json(r);
  REQUIRE(j["queues"].size() == 2);
  CHECK(j["queues"][0]["name"] == "dept");
  CHECK(j["queues"][1]["parent"] == "dept");
  CHECK(j["queues"][1]["gpu"]["deserved"] == 1.5);
  CHECK(j["queues"][1]["gpu"]["allocated"] == 0.5);
  CHECK(j["queues"][1]["gpu"]["limit"] == -1);
  CHECK(j["queues"][1]["cpu"]["deserved"] == -1);  // quota -1 stays -1
  CHECK(report_table(r).find("QUEUES") != std::string::npos);
}


/// A running pod of `queue_name` started at `start` (RFC 3339), one GPU, preemptible.
json running_in(const std::string& name, const std::string& queue_name, const std::string& start,
                const std::string& priority = "train") {
  json p = PodBuilder(name).whole(1).label("kai.scheduler/queue", queue_name).priority_class(priority).bound_to("n").obj;
  p["status"]["startTime"] = start;
  return p;
}

TEST_CASE("a queue under its quota takes a GPU back from a sibling under the same parent: the youngest of the lowest priority") {
  // The reproduction: q0 and q1 (quota 1 each) under dept (quota 2); q0 runs two pods.
  // KAI credits what the victim gives back at dept before checking it (reclaimable.go
  // subtractReclaimedResources); checking dept holding q1's pod and giving nothing back found
  // no victim.
  NodeBuilder n("n");
  n.gpus(2, 80000);
  for (const bool with_parent : {true, false}) {
    CAPTURE(with_parent);
    const std::string parent = with_parent ? "dept" : "";
    std::vector<json> objects{n.obj, queue("q0", parent, 1, -1, 1), queue("q1", parent, 1, -1, 1),
                              running_in("old", "q0", "2026-01-01T10:00:00Z"), running_in("young", "q0", "2026-01-01T11:00:00Z"),
                              PodBuilder("wants").whole(1).label("kai.scheduler/queue", "q1").obj};
    if (with_parent) objects.push_back(queue("dept", "", 2, -1, 1));
    PlaceReport r = run(objects);
    REQUIRE(r.unschedulable.size() == 1);
    REQUIRE(r.unschedulable[0].preemption);
    CHECK(r.unschedulable[0].preemption->node == "n");
    CHECK(r.unschedulable[0].preemption->victims == std::vector<std::string>{"default/young"});
  }
}

TEST_CASE("victims go lowest priority first, then youngest") {
  NodeBuilder n("n");
  n.gpus(4, 80000);
  // q0 (quota 1) runs three pods: an old low-priority one, and two younger higher-priority ones.
  // q2 (quota 1) runs one: at its quota, it is not reclaimed from.
  PlaceReport r = run({n.obj, queue("q0", "", 1, -1, 1), queue("q1", "", 1, -1, 1), queue("q2", "", 1, -1, 1),
                       running_in("low", "q0", "2026-01-01T08:00:00Z", "train"),
                       running_in("high-a", "q0", "2026-01-01T10:00:00Z", "build-preemptible"),
                       running_in("high-b", "q0", "2026-01-01T11:00:00Z", "build-preemptible"),
                       running_in("own", "q2", "2026-01-01T12:00:00Z", "train"),
                       PodBuilder("wants").whole(1).label("kai.scheduler/queue", "q1").obj});
  REQUIRE(r.unschedulable.size() == 1);
  REQUIRE(r.unschedulable[0].preemption);
  CHECK(r.unschedulable[0].preemption->victims == std::vector<std::string>{"default/low"});
}

TEST_CASE("the victim order descends the tree: the department over its fair share gives first, not the leaf most over its own") {
  // d1 (quota 2) runs 3 pods in b; d2 (quota 3) runs 3 pods in c, exactly its quota, while c2's
  // pending pod gives c2 a share of d2 and leaves c far over its own. KAI's victim queue compares
  // d1 and d2 first: d1 is over its fair share, d2 is not, so b gives. Taking c instead (the leaf
  // most over its share) is no valid reclaim: d2 would fall below its quota.
  NodeBuilder n("n");
  n.gpus(6, 80000);
  std::vector<json> objects{n.obj, queue("d0", "", 2, -1, 1), queue("a", "d0", 2, -1, 1), queue("d1", "", 2, -1, 1),
                            queue("b", "d1", 1, -1, 1), queue("b2", "d1", 1, -1, 1), queue("d2", "", 3, -1, 1),
                            queue("c", "d2", 1, -1, 1), queue("c2", "d2", 2, -1, 1)};
  for (int i = 0; i < 3; ++i) {
    objects.push_back(running_in("b" + std::to_string(i), "b", fmt::format("2026-01-01T1{}:00:00Z", i)));
    objects.push_back(running_in("c" + std::to_string(i), "c", fmt::format("2026-01-01T1{}:30:00Z", i)));
  }
  objects.push_back(PodBuilder("c2-wants").whole(2).label("kai.scheduler/queue", "c2").obj);
  objects.push_back(PodBuilder("a-wants").whole(1).label("kai.scheduler/queue", "a").obj);
  PlaceReport r = run(objects);
  const auto it = std::find_if(r.unschedulable.begin(), r.unschedulable.end(), [](const NotPlaced& np) { return np.pod == "default/a-wants"; });
  REQUIRE(it != r.unschedulable.end());
  REQUIRE(it->preemption);
  CHECK(it->preemption->victims == std::vector<std::string>{"default/b2"});  // b's youngest
}

TEST_CASE("a victim in a running gang is taken with its gang; members above the minimum go alone, first") {
  // q0 (quota 1) runs a single pod and a younger gang; q1 (quota 2) wants 2 GPUs of the 4. KAI
  // evicts whole jobs: the gang, not its youngest member alone (which would leave it broken).
  NodeBuilder n("n");
  n.gpus(4, 80000);
  for (const int members : {2, 3}) {  // minMember 2: with 3 running, the youngest is an extra
    CAPTURE(members);
    std::vector<json> objects{n.obj, queue("q0", "", 1, -1, 1), queue("q1", "", 2, -1, 1),
                              {{"apiVersion", "scheduling.run.ai/v2alpha2"}, {"kind", "PodGroup"},
                               {"metadata", {{"name", "g"}, {"namespace", "default"}}}, {"spec", {{"minMember", 2}, {"queue", "q0"}}}},
                              running_in("single", "q0", "2026-01-01T08:00:00Z")};
    for (int i = 0; i < members; ++i) {
      json p = running_in("g-" + std::to_string(i), "q0", fmt::format("2026-01-01T1{}:00:00Z", i));
      p["metadata"]["annotations"]["pod-group-name"] = "g";
      objects.push_back(p);
    }
    objects.push_back(PodBuilder("wants").whole(members == 2 ? 2 : 1).label("kai.scheduler/queue", "q1").obj);
    PlaceReport r = run(objects);
    REQUIRE(r.unschedulable.size() == 1);
    REQUIRE(r.unschedulable[0].preemption);
    if (members == 2) {
      CHECK(r.unschedulable[0].preemption->victims == std::vector<std::string>{"default/g-0", "default/g-1"});
    } else {
      CHECK(r.unschedulable[0].preemption->victims == std::vector<std::string>{"default/g-2"});  // the extra, alone
    }
  }
}

}  // namespace
}  // namespace fracpack::test
