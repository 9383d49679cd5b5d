// The extender core fed by the watch: assumed binds survive stale views and relists and are
// settled by what the API server says; whole-GPU binds keep their GPUs across a restart; a pod
// asking for absurd memory cannot corrupt its node's count; gangs bind whole.
#include <filesystem>
#include <thread>

#include <doctest/doctest.h>

#include "fracpack/server/extender.hpp"
#include "support/builders.hpp"
#include "support/temp_files.hpp"

namespace fracpack::test {
namespace {

std::unique_ptr<Extender> following(const std::string& state = ":memory:", std::chrono::seconds ttl = std::chrono::seconds(30)) {
  ExtenderOptions options;
  options.watching = true;
  options.state_path = state;
  options.assume_ttl = ttl;
  auto core = Extender::open(options);
  REQUIRE_MESSAGE(core.is_ok(), core.status().message());
  return std::move(*core);
}

json pending(const std::string& name, int gpus = 1) {
  PodBuilder p(name);
  p.uid("u-" + name).whole(gpus);
  p.obj["spec"]["schedulerName"] = "kai-scheduler";
  return p.obj;
}

std::map<std::string, std::string> held(const Extender& core) {
  std::map<std::string, std::string> out;
  for (const auto& b : core.snapshot().bindings) out[b.pod] = fmt::format("{}:{}", b.node, fmt::join(b.gpus, ","));
  return out;
}

/// Lists a node and `pods`, marks the core synced.
void listed(Extender& core, const std::vector<json>& pods, int gpus = 2) {
  core.watch_listed("Node", {nvf("n", gpus, 80000).obj}, nullptr);
  core.watch_listed("Pod", pods, nullptr);
  core.set_synced(true);
}

/// Filter then Bind, as kube-scheduler does.
Result<BindAnswer> schedule(Extender& core, const json& pod) {
  auto f = core.filter(pod, std::vector<std::string>{"n"});
  REQUIRE(f.is_ok());
  if (f->passed.empty()) return Status(Code::kUnschedulable, "no node");
  return core.bind("default", pod["metadata"]["name"], pod["metadata"]["uid"], "n");
}

TEST_CASE("an assumed bind survives an older view of its pod and a relist that does not show it yet") {
  auto core = following();
  listed(*core, {pending("a")});
  REQUIRE(schedule(*core, pending("a")).is_ok());
  CHECK(core->snapshot().bindings.at(0).assumed);
  // The watch still delivers the pod as it was before the bind: it keeps its GPU.
  core->watch_changed("Pod", {{ApiEvent::Type::kModified, pending("a")}}, nullptr);
  CHECK(held(*core) == std::map<std::string, std::string>{{"default/a", "n:0"}});
  // A relist from before the bind (a paged list's first page predates it): still held.
  core->watch_listed("Pod", {}, nullptr);
  CHECK(held(*core).size() == 1);
  // The watch shows it bound: confirmed, and the GPUs are those of the bind.
  json bound = pending("a");
  bound["spec"]["nodeName"] = "n";
  bound["metadata"]["annotations"]["fracpack.io/gpus"] = "0";
  core->watch_changed("Pod", {{ApiEvent::Type::kModified, bound}}, nullptr);
  CHECK_FALSE(core->snapshot().bindings.at(0).assumed);
  CHECK(core->verify().empty());
}

TEST_CASE("an assumed bind whose time is up is settled by the pod the API server shows") {
  auto core = following(":memory:", std::chrono::seconds(0));
  listed(*core, {pending("a"), pending("b"), pending("c")}, 4);
  for (const char* name : {"a", "b", "c"}) REQUIRE(schedule(*core, pending(name)).is_ok());
  auto due = core->assumed_binds();
  REQUIRE(due.size() == 3);
  json a_bound = pending("a");
  a_bound["spec"]["nodeName"] = "n";
  for (const auto& b : due) {
    if (b.pod == "default/a") core->settle(b, a_bound);           // bound there: kept, still assumed
    if (b.pod == "default/b") core->settle(b, json());            // gone: released
    if (b.pod == "default/c") core->settle(b, pending("c"));      // still pending: released, pending again
  }
  const auto h = held(*core);
  CHECK(h.count("default/a") == 1);
  CHECK(h.count("default/b") == 0);
  CHECK(h.count("default/c") == 0);
  // a is still assumed: an older view cannot release it before the watch shows it bound.
  core->watch_changed("Pod", {{ApiEvent::Type::kModified, pending("a")}}, nullptr);
  CHECK(held(*core).count("default/a") == 1);
  CHECK(core->verify().empty());
}

TEST_CASE("a whole-GPU bind keeps its GPUs across a restart: the ledger's indices go with the Binding") {
  StateFile file("watch");
  json trainer = pending("trainer", 2);
  trainer["spec"]["nodeName"] = "n";  // running before, no annotations: GPUs 0,1 by the guess
  std::string where;
  {
    auto core = following(file.path);
    listed(*core, {trainer, pending("mine")}, 4);
    auto b = schedule(*core, pending("mine"));
    REQUIRE(b.is_ok());
    CHECK(b->annotations.at("fracpack.io/gpus") == "2");
    where = held(*core).at("default/mine");
  }
  // After the restart the API server lists mine (bound, with the annotation) before trainer, as
  // it lists by name: trainer, which names no GPUs, must not take mine's.
  json mine = pending("mine");
  mine["spec"]["nodeName"] = "n";
  mine["metadata"]["annotations"]["fracpack.io/gpus"] = "2";
  auto core = following(file.path);
  listed(*core, {mine, trainer}, 4);
  CHECK(held(*core).at("default/mine") == where);
  for (const auto& b : core->snapshot().bindings) CHECK(b.standing == "bound");
  CHECK(core->verify().empty());
}

TEST_CASE("a running pod that asks for absurd memory cannot corrupt its node's count") {
  auto core = following();
  PodBuilder small("small");
  small.request("memory", "128Mi").bound_to("n");
  PodBuilder absurd("absurd");
  absurd.request("memory", "9999Pi").bound_to("n");
  listed(*core, {small.obj, absurd.obj});
  core->watch_changed("Pod", {{ApiEvent::Type::kDeleted, absurd.obj}}, nullptr);
  CHECK(core->verify().empty());
}

/// PodGroup default/g with leaf sub-groups a (minMember `a_min`) and b (minMember 1).
json sub_grouped(int a_min) {
  return {{"apiVersion", "scheduling.run.ai/v2alpha2"},
          {"kind", "PodGroup"},
          {"metadata", {{"name", "g"}, {"namespace", "default"}}},
          {"spec", {{"subGroups", {{{"name", "a"}, {"minMember", a_min}}, {{"name", "b"}, {"minMember", 1}}}}}}};
}

/// A pending member of g in sub-group `sub`, asking for `gpus` whole GPUs.
json sub_group_member(const std::string& name, const std::string& sub, int gpus = 1) {
  json p = pending(name, gpus);
  p["metadata"]["annotations"]["pod-group-name"] = "g";
  p["metadata"]["labels"]["kai.scheduler/subgroup-name"] = sub;
  return p;
}

TEST_CASE("a PodGroup with sub-groups binds its minimum whole; a pod naming no sub-group is refused") {
  auto core = following();
  const json group = sub_grouped(2);
  const auto member = [](const std::string& name, const std::string& sub) { return sub_group_member(name, sub); };
  core->watch_listed("PodGroup", {group}, nullptr);
  listed(*core, {member("a0", "a"), member("a1", "a")}, 4);
  std::vector<std::string> nudged;
  core->on_retry_wanted([&](const std::vector<std::string>& pods) { nudged = pods; });
  auto f = core->filter(member("a0", "a"), std::vector<std::string>{"n"});
  REQUIRE(f.is_ok());
  CHECK(f->passed.empty());
  CHECK(f->failed.at("n").find("gang default/g: sub-group b has 0 of the 1 members it still needs pending") != std::string::npos);
  core->watch_changed("Pod", {{ApiEvent::Type::kAdded, member("b0", "b")}, {ApiEvent::Type::kAdded, member("x0", "x")}}, nullptr);
  f = core->filter(member("b0", "b"), std::vector<std::string>{"n"});
  REQUIRE(f.is_ok());
  CHECK(f->passed == std::vector<std::string>{"n"});
  CHECK(nudged == std::vector<std::string>{"default/a0", "default/a1"});
  for (const char* name : {"b0", "a0", "a1"}) REQUIRE(core->bind("default", name, std::string("u-") + name, "n").is_ok());
  CHECK(held(*core).size() == 3);
  f = core->filter(member("x0", "x"), std::vector<std::string>{"n"});
  REQUIRE(f.is_ok());
  CHECK(f->passed.empty());
  CHECK(f->unresolvable.at("n").find("kai.scheduler/subgroup-name = \"x\" names no leaf sub-group") != std::string::npos);
  // One more member of a satisfied sub-group is placed on its own.
  core->watch_changed("Pod", {{ApiEvent::Type::kAdded, member("a2", "a")}}, nullptr);
  f = core->filter(member("a2", "a"), std::vector<std::string>{"n"});
  REQUIRE(f.is_ok());
  CHECK(f->passed == std::vector<std::string>{"n"});
  REQUIRE(core->bind("default", "a2", "u-a2", "n").is_ok());
  CHECK(held(*core).size() == 4);
  CHECK(core->verify().empty());
}

TEST_CASE("Explain answers a gang member as Filter would, and holds nothing") {
  auto core = following();
  core->watch_listed("PodGroup", {sub_grouped(2)}, nullptr);
  const auto member = [](const std::string& name, const std::string& sub) { return sub_group_member(name, sub); };
  listed(*core, {member("a0", "a"), member("a1", "a"), member("x0", "x")}, 5);
  // Each alone would fit; the gang waits for sub-group b.
  auto e = core->explain(member("a0", "a"));
  REQUIRE(e.is_ok());
  CHECK(e->code == Code::kUnschedulable);
  CAPTURE(e->summary);
  CHECK(e->summary.find("gang default/g: sub-group b has 0 of the 1 members it still needs pending") != std::string::npos);
  CHECK(e->summary.find("; on its own: 1/1 nodes are available") != std::string::npos);
  // A pod whose label names no leaf is refused for that, by Explain and Filter, while the gang waits.
  e = core->explain(member("x0", "x"));
  REQUIRE(e.is_ok());
  CHECK(e->code == Code::kUnschedulableAndUnresolvable);
  CHECK(e->summary.find("kai.scheduler/subgroup-name = \"x\" names no leaf sub-group") != std::string::npos);
  auto f = core->filter(member("x0", "x"), std::vector<std::string>{"n"});  // for good: kube-scheduler must not preempt for it
  REQUIRE(f.is_ok());
  CHECK(f->passed.empty());
  CHECK(f->failed.empty());
  CHECK(f->unresolvable.at("n").find("kai.scheduler/subgroup-name = \"x\" names no leaf sub-group") != std::string::npos);
  // Once b0 shows, Explain says where the plan would put it, and holds no plan: Filter makes it.
  core->watch_changed("Pod", {{ApiEvent::Type::kAdded, member("b0", "b")}}, nullptr);
  e = core->explain(member("b0", "b"));
  REQUIRE(e.is_ok());
  CHECK(e->code == Code::kOk);
  CHECK(e->summary.find("its gang's plan would put it on n") != std::string::npos);
  CHECK(held(*core).empty());
  CHECK(core->verify().empty());
  f = core->filter(member("b0", "b"), std::vector<std::string>{"n"});
  REQUIRE(f.is_ok());
  CHECK(f->passed == std::vector<std::string>{"n"});
  for (const char* name : {"b0", "a0", "a1"}) REQUIRE(core->bind("default", name, std::string("u-") + name, "n").is_ok());
  CHECK(held(*core).size() == 3);
  // A running member is asked about as a pod, not as a gang waiting for it.
  json running = member("a0", "a");
  running["spec"]["nodeName"] = "n";
  e = core->explain(running);
  REQUIRE(e.is_ok());
  CAPTURE(e->summary);
  CHECK(e->summary.find("gang") == std::string::npos);
  // A flat gang short of members: the same answer as its Filter.
  json flat = {{"apiVersion", "scheduling.run.ai/v2alpha2"},
               {"kind", "PodGroup"},
               {"metadata", {{"name", "h"}, {"namespace", "default"}}},
               {"spec", {{"minMember", 2}}}};
  core->watch_changed("PodGroup", {{ApiEvent::Type::kAdded, flat}}, nullptr);
  const auto arrives = [&](const std::string& name) {  // a pending member of h, seen by the watch
    json p = pending(name);
    p["metadata"]["annotations"]["pod-group-name"] = "h";
    core->watch_changed("Pod", {{ApiEvent::Type::kAdded, p}}, nullptr);
    return p;
  };
  const json h0 = arrives("h0");
  e = core->explain(h0);
  REQUIRE(e.is_ok());
  CHECK(e->code == Code::kUnschedulable);
  CHECK(e->summary.find("gang default/h: 1 of the 2 members it still needs are pending") != std::string::npos);
  // With its second member it fits (2 of the node's 5 GPUs are left): placed for the answer, then released.
  e = core->explain(arrives("h1"));
  REQUIRE(e.is_ok());
  CHECK(e->code == Code::kOk);
  CHECK(e->summary.find("its gang's plan would put it on n") != std::string::npos);
  CHECK(held(*core).size() == 3);
  CHECK(core->verify().empty());
  f = core->filter(h0, std::vector<std::string>{"n"});
  REQUIRE(f.is_ok());
  CHECK(f->passed == std::vector<std::string>{"n"});
}

TEST_CASE("a sub-group member beyond the minimum is admitted with the minimum beside it: the queue limit holds") {
  // default-queue may hold 3 GPUs. The minimum, a0 and b0, takes 2; a1's own step 2 more: alone
  // it fits the limit, with the minimum planned in the same Filter it does not. The book is
  // charged only when a plan is held, so the step must be admitted with the minimum.
  auto core = following();
  const json group = sub_grouped(1);
  json queue = {{"apiVersion", "scheduling.run.ai/v2"}, {"kind", "Queue"}, {"metadata", {{"name", "default-queue"}}},
                {"spec",
                 {{"resources",
                   {{"gpu", {{"quota", 3}, {"limit", 3}, {"overQuotaWeight", 1}}},
                    {"cpu", {{"quota", -1}, {"limit", -1}, {"overQuotaWeight", 1}}},
                    {"memory", {{"quota", -1}, {"limit", -1}, {"overQuotaWeight", 1}}}}}}}};
  const auto& member = sub_group_member;
  core->watch_listed("PodGroup", {group}, nullptr);
  core->watch_listed("Queue", {queue}, nullptr);
  listed(*core, {member("a0", "a", 1), member("a1", "a", 2), member("b0", "b", 1)}, 8);
  auto f = core->filter(member("a1", "a", 2), std::vector<std::string>{"n"});
  REQUIRE(f.is_ok());
  CHECK(f->passed.empty());
  REQUIRE(f->failed.count("n") == 1);
  CHECK(f->failed.at("n").find("above its limit 3") != std::string::npos);
  // The minimum alone is within the limit: planned at a0's Filter, it binds.
  f = core->filter(member("a0", "a", 1), std::vector<std::string>{"n"});
  REQUIRE(f.is_ok());
  CHECK(f->passed == std::vector<std::string>{"n"});
  for (const char* name : {"a0", "b0"}) {
    auto b = core->bind("default", name, std::string("u-") + name, "n");
    REQUIRE_MESSAGE(b.is_ok(), b.status().message());
  }
  CHECK(held(*core).size() == 2);
  CHECK(core->verify().empty());
}

TEST_CASE("a gang binds whole through Filter and Bind, one pod at a time; members wait until it fits") {
  auto core = following();
  json group = {{"apiVersion", "scheduling.run.ai/v2alpha2"},
                {"kind", "PodGroup"},
                {"metadata", {{"name", "g"}, {"namespace", "default"}}},
                {"spec", {{"minMember", 3}}}};
  auto member = [](int i) {
    json p = pending(fmt::format("m{}", i));
    p["metadata"]["annotations"]["pod-group-name"] = "g";
    return p;
  };
  core->watch_listed("PodGroup", {group}, nullptr);
  listed(*core, {member(0), member(1)}, 4);
  std::vector<std::string> nudged;
  core->on_retry_wanted([&](const std::vector<std::string>& pods) { nudged = pods; });
  // Two of three members: every node waits, saying why.
  auto f = core->filter(member(0), std::vector<std::string>{"n"});
  REQUIRE(f.is_ok());
  CHECK(f->passed.empty());
  CHECK(f->failed.at("n").find("gang default/g: 2 of the 3 members it still needs are pending") != std::string::npos);
  // The third arrives: the gang is planned at a Filter, each member gets its node, and the
  // members kube-scheduler has put aside are nudged.
  core->watch_changed("Pod", {{ApiEvent::Type::kAdded, member(2)}}, nullptr);
  f = core->filter(member(2), std::vector<std::string>{"n"});
  REQUIRE(f.is_ok());
  CHECK(f->passed == std::vector<std::string>{"n"});
  CHECK(nudged == std::vector<std::string>{"default/m0", "default/m1"});
  for (int i : {2, 0, 1}) REQUIRE(core->bind("default", fmt::format("m{}", i), fmt::format("u-m{}", i), "n").is_ok());
  CHECK(held(*core).size() == 3);
  CHECK(core->verify().empty());
  // A gang that does not fit holds nothing: 2 GPUs left, a new gang of 3.
  json big = group;
  big["metadata"]["name"] = "h";
  core->watch_changed("PodGroup", {{ApiEvent::Type::kAdded, big}}, nullptr);
  std::vector<json> hs;
  for (int i = 0; i < 3; ++i) {
    json p = pending(fmt::format("h{}", i));
    p["metadata"]["annotations"]["pod-group-name"] = "h";
    hs.push_back(p);
    core->watch_changed("Pod", {{ApiEvent::Type::kAdded, p}}, nullptr);
  }
  f = core->filter(hs[0], std::vector<std::string>{"n"});
  REQUIRE(f.is_ok());
  CHECK(f->passed.empty());
  CHECK(f->failed.at("n").find("does not fit as a whole") != std::string::npos);
  CHECK(held(*core).size() == 3);
}

TEST_CASE("a gang's plan lapses when its members are not bound in time") {
  ExtenderOptions options;
  options.watching = true;
  options.gang_hold = std::chrono::seconds(0);
  auto opened = Extender::open(options);
  REQUIRE(opened.is_ok());
  std::unique_ptr<Extender> core = std::move(*opened);
  json group = {{"kind", "PodGroup"}, {"metadata", {{"name", "g"}, {"namespace", "default"}}}, {"spec", {{"minMember", 2}}}};
  core->watch_listed("PodGroup", {group}, nullptr);
  json a = pending("a");
  json b = pending("b");
  a["metadata"]["annotations"]["pod-group-name"] = "g";
  b["metadata"]["annotations"]["pod-group-name"] = "g";
  listed(*core, {a, b}, 2);
  REQUIRE(core->filter(a, std::vector<std::string>{"n"})->passed.size() == 1);
  CHECK(held(*core).size() == 2);  // both held for the gang
  // The hold is over at the next Filter: nothing stays held by a plan nobody bound.
  (void)core->filter(pending("other"), std::vector<std::string>{"n"});
  CHECK(held(*core).size() <= 1);
  CHECK(core->verify().empty());
}

/// A following core that records what it asks kube-scheduler to retry.
struct Retries {
  std::unique_ptr<Extender> core;
  std::vector<std::string> asked;  ///< every pod handed to on_retry_wanted, in order

  explicit Retries(std::chrono::milliseconds window, std::chrono::seconds assume_ttl = std::chrono::seconds(30)) {
    ExtenderOptions options;
    options.watching = true;
    options.retry_refused_within = window;
    options.assume_ttl = assume_ttl;
    auto opened = Extender::open(options);
    REQUIRE(opened.is_ok());
    core = std::move(*opened);
    core->on_retry_wanted([this](const std::vector<std::string>& pods) { asked.insert(asked.end(), pods.begin(), pods.end()); });
  }
  bool refused(const json& pod) {
    auto f = core->filter(pod, std::vector<std::string>{"n"});
    REQUIRE(f.is_ok());
    return f->passed.empty();
  }
};

json running(const std::string& name) {
  json p = pending(name);
  p["spec"]["nodeName"] = "n";
  return p;
}

TEST_CASE("a pod refused just before the watch frees room is asked for again; heartbeats, bound pods and pods that still fit nowhere are not") {
  Retries r(std::chrono::seconds(60));
  listed(*r.core, {running("a"), pending("b"), pending("c"), pending("d", 2)}, 1);
  // kube-scheduler saw a's deletion first and retried b, c and d: refused, the ledger still holds a.
  REQUIRE(r.refused(pending("b")));
  REQUIRE(r.refused(pending("c")));
  REQUIRE(r.refused(pending("d", 2)));  // two GPUs on a one-GPU node: a's GPU does not help it
  // A node heartbeat (nothing the scheduler reads changed) frees nothing.
  r.core->watch_changed("Node", {{ApiEvent::Type::kModified, nvf("n", 1, 80000).obj}}, nullptr);
  CHECK(r.asked.empty());
  // c is bound meanwhile, to a node fracpack does not know: only b and d still wait.
  json c = running("c");
  c["spec"]["nodeName"] = "n2";
  r.core->watch_changed("Pod", {{ApiEvent::Type::kModified, c}}, nullptr);
  CHECK(r.asked.empty());  // bound to a node fracpack does not know: nothing freed
  r.core->watch_changed("Pod", {{ApiEvent::Type::kDeleted, running("a")}}, nullptr);
  CHECK(r.asked == std::vector<std::string>{"default/b"});
  // Asked once per refusal: b, not refused since, is not asked again. d, which fit nowhere, is
  // still remembered, and fits now that n has two GPUs.
  r.core->watch_changed("Node", {{ApiEvent::Type::kModified, nvf("n", 2, 80000).obj}}, nullptr);
  CHECK(r.asked == std::vector<std::string>{"default/b", "default/d"});
  CHECK(r.core->verify().empty());
}

TEST_CASE("a process that may act anew (started, or took the lead) asks for its pending pods that fit, though it never refused them") {
  Retries r(std::chrono::seconds(60));
  json other = pending("o");
  other["spec"]["schedulerName"] = "default-scheduler";  // another scheduler's: never asked for
  listed(*r.core, {running("a"), pending("b"), pending("c", 2), other}, 2);
  // kube-scheduler failed b and c while no replica could act (a connection refused, a Bind a
  // follower turned away): this process never saw their Filters.
  CHECK(r.asked.empty());
  r.core->retry_pending();
  CHECK(r.asked == std::vector<std::string>{"default/b"});  // c asks for two GPUs and one is free
  // Once a's GPU frees, c is remembered as refused with the rest and asked for.
  r.core->watch_changed("Pod", {{ApiEvent::Type::kDeleted, running("a")}}, nullptr);
  CHECK(r.asked == std::vector<std::string>{"default/b", "default/c"});
  // Before the first list, nothing is asked: the ledger does not know the cluster yet.
  Retries early(std::chrono::seconds(60));
  early.core->watch_listed("Node", {nvf("n", 2, 80000).obj}, nullptr);
  early.core->watch_listed("Pod", {pending("b")}, nullptr);
  early.core->retry_pending();
  CHECK(early.asked.empty());
}

TEST_CASE("the one refused pod that now fits is found behind hundreds that fit nowhere") {
  Retries r(std::chrono::seconds(60));
  std::vector<json> pods{running("a"), pending("b")};
  for (int i = 0; i < 160; ++i) pods.push_back(pending(fmt::format("z{:03}", i), 2));
  listed(*r.core, pods, 1);
  // 80 pods that can never fit a one-GPU node are refused before b, and 80 after it.
  for (int i = 0; i < 80; ++i) REQUIRE(r.refused(pending(fmt::format("z{:03}", i), 2)));
  REQUIRE(r.refused(pending("b")));
  for (int i = 80; i < 160; ++i) REQUIRE(r.refused(pending(fmt::format("z{:03}", i), 2)));
  r.core->watch_changed("Pod", {{ApiEvent::Type::kDeleted, running("a")}}, nullptr);
  CHECK(r.asked == std::vector<std::string>{"default/b"});
  // The others are still remembered: when room for two GPUs appears, they are asked for, 64 at most.
  r.core->watch_changed("Node", {{ApiEvent::Type::kModified, nvf("n", 3, 80000).obj}}, nullptr);
  CHECK(r.asked.size() == 1 + 64);
}

/// PodGroup default/g with minMember 3, and its member m<i> (pending, one GPU).
json gang_group() {
  return {{"apiVersion", "scheduling.run.ai/v2alpha2"}, {"kind", "PodGroup"},
          {"metadata", {{"name", "g"}, {"namespace", "default"}}}, {"spec", {{"minMember", 3}}}};
}
json gang_member(int i) {
  json p = pending(fmt::format("m{}", i));
  p["metadata"]["annotations"]["pod-group-name"] = "g";
  return p;
}

TEST_CASE("members of a gang that cannot be placed are not asked for when room frees, though each alone would fit") {
  Retries r(std::chrono::seconds(60));
  auto member = [](int i) { return gang_member(i); };
  r.core->watch_listed("PodGroup", {gang_group()}, nullptr);
  listed(*r.core, {running("a"), member(0), member(1)}, 4);
  REQUIRE(r.refused(member(0)));  // 2 of the 3 members it needs are pending
  r.core->watch_changed("Pod", {{ApiEvent::Type::kDeleted, running("a")}}, nullptr);
  CHECK(r.asked.empty());
}

TEST_CASE("members refused while their gang waited are asked for once the last one shows: its planner, once, fit or not") {
  for (const int gpus : {4, 2}) {  // room for the gang, and not: either way a member must say why now
    CAPTURE(gpus);
    Retries r(std::chrono::seconds(60));
    auto member = [](int i) {
      json p = gang_member(i);
      p["metadata"]["creationTimestamp"] = fmt::format("2026-01-05T09:00:0{}Z", 3 - i);  // m2 is the earliest
      return p;
    };
    r.core->watch_listed("PodGroup", {gang_group()}, nullptr);
    listed(*r.core, {member(0), member(1)}, gpus);
    // kube-scheduler filters all three before fracpack's watch shows m2: each is told to wait.
    for (int i = 0; i < 3; ++i) REQUIRE(r.refused(member(i)));
    CHECK(r.asked.empty());
    // m2 shows: the gang could be planned now, at its earliest member's Filter; that one is asked for.
    r.core->watch_changed("Pod", {{ApiEvent::Type::kAdded, member(2)}}, nullptr);
    REQUIRE(r.asked == std::vector<std::string>{"default/m2"});
    r.core->watch_changed("Node", {{ApiEvent::Type::kModified, nvf("n", gpus, 80000).obj}}, nullptr);  // a heartbeat
    CHECK(r.asked.size() == 1);  // once
    auto f = r.core->filter(member(2), std::vector<std::string>{"n"});
    REQUIRE(f.is_ok());
    if (gpus == 4) {
      CHECK(f->passed == std::vector<std::string>{"n"});
      CHECK(r.asked == std::vector<std::string>{"default/m2", "default/m1", "default/m0"});  // planned: the others follow
    } else {
      CHECK(f->passed.empty());
      CHECK(f->failed.at("n").find("does not fit as a whole") != std::string::npos);
      CHECK(r.asked.size() == 1);
    }
    CHECK(r.core->verify().empty());
  }
}

TEST_CASE("a gang member refused before the watch showed it is asked for once it does, though its gang still waits: its reason then counts it") {
  Retries r(std::chrono::seconds(60));
  json group = gang_group();
  group["spec"]["minMember"] = 4;
  r.core->watch_listed("PodGroup", {group}, nullptr);
  listed(*r.core, {gang_member(0), gang_member(1)}, 4);
  // kube-scheduler filters m2 before fracpack's watch shows it.
  auto before = r.core->filter(gang_member(2), std::vector<std::string>{"n"});
  REQUIRE(before.is_ok());
  REQUIRE(before->passed.empty());
  CHECK(before->failed.at("n").find("2 of the 4 members") != std::string::npos);  // m2 itself not counted
  CHECK(r.asked.empty());
  r.core->watch_changed("Pod", {{ApiEvent::Type::kAdded, gang_member(2)}}, nullptr);
  REQUIRE(r.asked == std::vector<std::string>{"default/m2"});  // the gang cannot be planned, yet m2's reason is stale
  auto after = r.core->filter(gang_member(2), std::vector<std::string>{"n"});
  REQUIRE(after.is_ok());
  CHECK(after->failed.at("n").find("3 of the 4 members") != std::string::npos);
  r.core->watch_changed("Node", {{ApiEvent::Type::kModified, nvf("n", 4, 80000).obj}}, nullptr);  // a heartbeat
  CHECK(r.asked.size() == 1);  // once
}

TEST_CASE("a bind released because the API server never showed it frees room for the pods refused meanwhile") {
  Retries r(std::chrono::seconds(60), std::chrono::seconds(0));
  listed(*r.core, {pending("a"), pending("b")}, 1);
  REQUIRE(schedule(*r.core, pending("a")).is_ok());
  REQUIRE(r.refused(pending("b")));
  const auto due = r.core->assumed_binds();
  REQUIRE(due.size() == 1);
  r.core->settle(due.front(), json());  // a is gone: its GPU is free
  CHECK(r.asked == std::vector<std::string>{"default/b"});
}

TEST_CASE("refusals older than the window, or with the window 0, are not asked for again") {
  for (const auto window : {std::chrono::milliseconds(0), std::chrono::milliseconds(1)}) {
    CAPTURE(window.count());
    Retries r(window);
    listed(*r.core, {running("a"), pending("b")}, 1);
    REQUIRE(r.refused(pending("b")));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // beyond the 1 ms window
    r.core->watch_changed("Pod", {{ApiEvent::Type::kDeleted, running("a")}}, nullptr);
    CHECK(r.asked.empty());
  }
}

TEST_CASE("pods refused while fracpack was syncing, or before a Queue edit, are asked for again minutes later; a Queue status write is no edit") {
  // The window for other changes is 1 ms; syncing and Queue edits look back 5 minutes.
  Retries r(std::chrono::milliseconds(1));
  r.core->set_synced(false);
  r.core->watch_listed("Node", {nvf("n", 1, 80000).obj}, nullptr);
  r.core->watch_listed("Pod", {pending("b")}, nullptr);
  REQUIRE(r.refused(pending("b")));  // "fracpack is syncing with the API server"
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  r.core->set_synced(true);
  CHECK(r.asked == std::vector<std::string>{"default/b"});
  // A Queue's status written again changes nothing; a quota edit is room.
  json q = {{"apiVersion", "scheduling.run.ai/v2"}, {"kind", "Queue"}, {"metadata", {{"name", "default-queue"}}},
            {"spec",
             {{"resources",
               {{"gpu", {{"quota", 0}, {"limit", 0}, {"overQuotaWeight", 1}}},
                {"cpu", {{"quota", -1}, {"limit", -1}, {"overQuotaWeight", 1}}},
                {"memory", {{"quota", -1}, {"limit", -1}, {"overQuotaWeight", 1}}}}}}}};
  r.core->watch_changed("Queue", {{ApiEvent::Type::kAdded, q}}, nullptr);
  REQUIRE(r.refused(pending("b")));  // the queue's limit is 0
  r.asked.clear();
  json status = q;
  status["status"] = {{"allocated", {{"gpu", 0}}}};
  r.core->watch_changed("Queue", {{ApiEvent::Type::kModified, status}}, nullptr);
  CHECK(r.asked.empty());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  q["spec"]["resources"]["gpu"]["limit"] = 1;
  r.core->watch_changed("Queue", {{ApiEvent::Type::kModified, q}}, nullptr);
  CHECK(r.asked == std::vector<std::string>{"default/b"});
  auto f = r.core->filter(pending("b"), std::vector<std::string>{"n"});
  REQUIRE(f.is_ok());
  CHECK(f->passed == std::vector<std::string>{"n"});
}

}  // namespace
}  // namespace fracpack::test
