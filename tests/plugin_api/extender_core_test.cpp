// The extender core: Filter → Prioritize → Bind, durability across restarts, races, queues, Sync.
#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include <doctest/doctest.h>

#include "fracpack/k8s/time.hpp"
#include "fracpack/server/extender.hpp"
#include "support/builders.hpp"
#include "support/temp_files.hpp"

namespace fracpack::test {
namespace {

std::unique_ptr<Extender> open_core(const std::string& path = ":memory:") {
  ExtenderOptions options;
  options.state_path = path;
  auto core = Extender::open(options);
  REQUIRE_MESSAGE(core.is_ok(), core.status().message());
  return std::move(*core);
}

TEST_CASE("a multi-device fraction on mixed GPU sizes is written one compute portion per device") {
  auto core = open_core();
  NodeBuilder mixed("mixed");
  mixed.gpus(2, 80000).fractions().annotation("fracpack.io/gpu-memory-mib", "80000,40000");
  REQUIRE(core->apply({mixed.obj}, nullptr).is_ok());
  json pod = PodBuilder("p", "ns").gpu_memory("20000Mi").devices(2).obj;
  REQUIRE(core->filter(pod, {"mixed"}).is_ok());
  auto b = core->bind("ns", "p", "uid-p", "mixed");
  REQUIRE_MESSAGE(b.is_ok(), b.status().message());
  CHECK(b->annotations.at("nvidia.com/container.main.gpus.devices") == "0,1");
  // 20000 × 100 ÷ 80000 = 25 and 20000 × 100 ÷ 40000 = 50: each from its own GPU's memory.
  CHECK(b->annotations.at("nvidia.com/container.main.gpu-compute.portion") == "0.25,0.50");
  // What Bind writes reads back: a restart decodes the bound pod without complaint.
  json bound = PodBuilder("p", "ns").uid("uid-p").gpu_memory("20000Mi").devices(2).bound_to("mixed").obj;
  for (const auto& [k, v] : b->annotations) bound["metadata"]["annotations"][k] = v;
  auto fresh = open_core();
  CHECK(fresh->apply({mixed.obj, bound}, nullptr).is_ok());
}

TEST_CASE("Filter, Prioritize and Bind a fraction; Bind answers with the annotations to write") {
  auto core = open_core();
  REQUIRE(core->apply({nvf("a", 2, 80000).obj, nvf("b", 2, 80000).obj}, nullptr).is_ok());
  json pod = PodBuilder("p", "ns").gpu_memory("20Gi").obj;
  auto f = core->filter(pod, {"a", "b", "ghost"});
  REQUIRE(f.is_ok());
  CHECK(f->passed == std::vector<std::string>{"a", "b"});
  CHECK(f->unresolvable.count("ghost") == 1);
  auto scores = core->prioritize(pod, {"b", "ghost", "a"});
  REQUIRE(scores.is_ok());
  REQUIRE(scores->size() == 3);  // one per node sent, in the order sent
  CHECK((*scores)[0].host == "b");
  CHECK((*scores)[1].host == "ghost");
  CHECK((*scores)[1].score == 0);
  CHECK((*scores)[2].host == "a");
  for (const auto& s : *scores) {
    CHECK(s.score >= 0);
    CHECK(s.score <= 10);
  }
  CHECK(std::max((*scores)[0].score, (*scores)[2].score) == 10);  // the best feasible node scores 10
  auto b = core->bind("ns", "p", "uid-p", "b");
  REQUIRE_MESSAGE(b.is_ok(), b.status().message());
  CHECK(b->node == "b");
  CHECK(b->annotations.at("nvidia.com/container.main.gpus.devices") == "0");
  CHECK(b->annotations.at("nvidia.com/container.main.gpu-compute.portion") == "0.26");  // ⌈20480 ÷ 81900 × 100⌉
  auto again = core->bind("ns", "p", "uid-p", "b");  // idempotent
  REQUIRE(again.is_ok());
  CHECK(again->choice.gpus == b->choice.gpus);
  CHECK(core->bind("ns", "p", "uid-p", "a").status().code() == Code::kAlreadyExists);
  CHECK(core->bind("ns", "never", "", "a").status().code() == Code::kNotFound);
  REQUIRE(core->filter(PodBuilder("q", "ns").uid("uid-old").gpu_memory("1Gi").obj, {"a"}).is_ok());
  auto recreated = core->bind("ns", "q", "uid-new", "a");  // the same name, another pod
  CHECK(recreated.status().code() == Code::kNotFound);
  CHECK(recreated.status().message() == "pod ns/q: Bind names PodUID uid-new, but Filter saw UID uid-old under this name "
                                        "(a recreated pod? run Filter on the current one)");
  CHECK(core->bind("ns", "p2", "", "ghost").status().code() == Code::kNotFound);
}

TEST_CASE("a pod the ledger holds fits only where it is bound; another pod of its name fits nowhere") {
  auto core = open_core();
  REQUIRE(core->apply({nvf("a", 1, 81920).obj, nvf("b", 1, 81920).obj, nvf("c", 1, 81920).obj}, nullptr).is_ok());
  const json pod = PodBuilder("p", "ns").uid("uid-p").gpu_memory("10Gi").obj;
  REQUIRE(core->filter(pod, {"a", "b", "c"}).is_ok());
  REQUIRE(core->bind("ns", "p", "uid-p", "b").is_ok());
  // The scheduler retries the pod (it never saw the Bind succeed): only its node passes.
  auto again = core->filter(pod, {"a", "b", "c"});
  REQUIRE(again.is_ok());
  CHECK(again->passed == std::vector<std::string>{"b"});
  CHECK(again->unresolvable.at("a") == "pod ns/p is already bound to node b in fracpack's ledger");
  auto best = core->filter_all(pod, 1);
  REQUIRE(best.is_ok());
  CHECK(best->passed == std::vector<std::string>{"b"});
  CHECK(core->bind("ns", "p", "uid-p", "b").is_ok());  // and binds there again
  // A recreated pod of the same name while the old binding is held: nowhere, and Bind says why.
  const json recreated = PodBuilder("p", "ns").uid("uid-p2").gpu_memory("10Gi").obj;
  auto f = core->filter(recreated, {"a", "b", "c"});
  REQUIRE(f.is_ok());
  CHECK(f->passed.empty());
  CHECK(f->unresolvable.size() == 3);
  CHECK(f->unresolvable.at("b").find("UID uid-p is bound to node b") != std::string::npos);
  auto bound = core->bind("ns", "p", "uid-p2", "b");
  CHECK(bound.status().code() == Code::kAlreadyExists);
  CHECK(bound.status().message().find("bound with UID uid-p; this Bind names UID uid-p2") != std::string::npos);
  // Unknown nodes share one reason (kube-scheduler counts them as one).
  auto unknown = core->filter(PodBuilder("u", "ns").gpu_memory("1Gi").obj, {"x", "y", "a"});
  REQUIRE(unknown.is_ok());
  CHECK(unknown->unresolvable.at("x") == "node(s) not known to fracpack (send full Nodes, or apply them)");
  CHECK(unknown->unresolvable.at("y") == unknown->unresolvable.at("x"));
}

TEST_CASE("a pod filtered again after it was bound and released keeps its place among remembered pods") {
  // Two remembered pods at most. p is filtered, bound (forgotten), released, filtered again after
  // q: dropping p's stale first entry must not drop its new copy (it used to: Bind then failed).
  ExtenderOptions options;
  options.pods_remembered = 2;
  auto opened = Extender::open(options);
  REQUIRE(opened.is_ok());
  auto& core = *opened;
  REQUIRE(core->apply({nvf("a", 4, 80000).obj}, nullptr).is_ok());
  const json p = PodBuilder("p", "ns").gpu_memory("1Gi").obj;
  REQUIRE(core->filter(p, {"a"}).is_ok());
  REQUIRE(core->bind("ns", "p", "uid-p", "a").is_ok());
  REQUIRE(core->release("ns/p").is_ok());
  REQUIRE(core->filter(PodBuilder("q", "ns").gpu_memory("1Gi").obj, {"a"}).is_ok());
  REQUIRE(core->filter(p, {"a"}).is_ok());
  auto again = core->bind("ns", "p", "uid-p", "a");
  CHECK_MESSAGE(again.is_ok(), again.status().message());
  // The bound still holds: a third pod pushes out the oldest (q), which must then Filter again.
  REQUIRE(core->filter(PodBuilder("r", "ns").gpu_memory("1Gi").obj, {"a"}).is_ok());
  REQUIRE(core->filter(PodBuilder("s", "ns").gpu_memory("1Gi").obj, {"a"}).is_ok());
  CHECK(core->bind("ns", "q", "uid-q", "a").status().code() == Code::kNotFound);
}

TEST_CASE("filter_all: every node, best first; failing nodes listed only when none passes") {
  auto core = open_core();
  REQUIRE(core->apply({nvf("a", 2, 80000).obj, nvf("b", 2, 80000).obj, nvf("c", 1, 16000).obj}, nullptr).is_ok());
  json first = PodBuilder("first").gpu_memory("30Gi").obj;
  REQUIRE(core->filter(first, {"b"})->passed.size() == 1);
  REQUIRE(core->bind("default", "first", "", "b").is_ok());  // pack now prefers b, the fuller node
  json pod = PodBuilder("p").gpu_memory("10Gi").obj;
  auto all = core->filter_all(pod, 0);
  REQUIRE(all.is_ok());
  CHECK(all->passed == std::vector<std::string>{"b", "c", "a"});  // Prioritize's order, best first
  auto scores = core->prioritize(pod, {"a", "b", "c"});
  std::map<std::string, std::int64_t> by_host;
  for (const auto& s : *scores) by_host[s.host] = s.score;
  CHECK(by_host["b"] >= by_host["c"]);
  CHECK(by_host["c"] >= by_host["a"]);
  CHECK(all->failed.empty());
  CHECK(core->filter_all(pod, 1)->passed == std::vector<std::string>{"b"});  // the index's answer agrees
  CHECK(core->filter_all(pod, 2)->passed == std::vector<std::string>{"b", "c"});
  auto big = core->filter_all(PodBuilder("big").gpu_memory("40Gi").obj, 0);
  CHECK(big->passed == std::vector<std::string>{"b", "a"});
  CHECK(big->unresolvable.empty());  // c cannot take it, but others can: not listed
  auto none = core->filter_all(PodBuilder("none").gpu_memory("100Gi").obj, 1);
  CHECK(none->passed.empty());
  CHECK(none->unresolvable.size() == 3);  // nothing passes: every node with its reason
  CHECK(none->unresolvable.at("c").find("GPUs smaller than the memory request") != std::string::npos);
}

TEST_CASE("an infeasible pod is an answer with reasons, never an error") {
  auto core = open_core();
  REQUIRE(core->apply({nvf("a", 1, 16000).obj, NodeBuilder("cpu").obj}, nullptr).is_ok());
  auto f = core->filter(PodBuilder("big").gpu_memory("40Gi").obj, {"a", "cpu"});
  REQUIRE(f.is_ok());
  CHECK(f->passed.empty());
  CHECK(f->unresolvable.at("a").find("GPUs smaller than the memory request") != std::string::npos);
  CHECK(f->unresolvable.at("cpu") == "node(s) had no GPUs");
  auto bad = core->filter(PodBuilder("bad").fraction("2").obj, {"a"});
  CHECK(bad.status().code() == Code::kInvalidArgument);
}

TEST_CASE("a pod asking for thousands of made-up resources: reasons name a few and count the rest") {
  auto core = open_core();
  REQUIRE(core->apply({nvf("a", 1, 80000).obj, nvf("b", 1, 80000).obj}, nullptr).is_ok());
  PodBuilder many("many");
  for (int i = 0; i < 20'000; ++i) many.request(fmt::format("z{}.io/x", i), "1");
  auto f = core->filter(many.obj, {"a", "b"});  // linear in the names: seconds would mean a quadratic crept back
  REQUIRE(f.is_ok());
  CHECK(f->passed.empty());
  const std::string& reason = f->unresolvable.at("a");
  CHECK(reason.size() < 1024);
  CHECK(reason.find("Insufficient other extended resources") != std::string::npos);
  auto e = core->explain(many.obj);
  REQUIRE(e.is_ok());
  CHECK(e->summary.size() < 1024);
  CHECK(e->nodes.at(0).second.reasons.size() <= 9);
}

TEST_CASE("a lost Filter → Bind race is a clean refusal, never an overcommit") {
  auto core = open_core();
  REQUIRE(core->apply({nvf("a", 1, 24600).obj}, nullptr).is_ok());
  json p1 = PodBuilder("p1").gpu_memory("12Gi").obj;
  json p2 = PodBuilder("p2").gpu_memory("12Gi").obj;
  json p3 = PodBuilder("p3").gpu_memory("12Gi").obj;
  for (const auto& p : {p1, p2, p3}) CHECK(core->filter(p, {"a"})->passed.size() == 1);  // all "fit" now
  CHECK(core->bind("default", "p1", "", "a").is_ok());
  CHECK(core->bind("default", "p2", "", "a").is_ok());
  auto lost = core->bind("default", "p3", "", "a");
  CHECK(lost.status().code() == Code::kUnschedulable);
  CHECK(lost.status().message().find("no longer fits node a") != std::string::npos);
  // A node that could never take the pod is not a lost race, and the answer says so.
  REQUIRE(core->apply({nvf("small", 1, 8000).obj}, nullptr).is_ok());
  json big = PodBuilder("big").gpu_memory("12Gi").obj;
  REQUIRE(core->filter(big, {"small"}).is_ok());
  auto never = core->bind("default", "big", "", "small");
  CHECK(never.status().code() == Code::kUnschedulableAndUnresolvable);  // docs/grpc.md: FAILED_PRECONDITION, not ABORTED
  CHECK(never.status().subject() == "node:small");
  CHECK_MESSAGE(never.status().message().find("pod default/big can never fit node small: ") == 0, never.status().message());
}

TEST_CASE("acknowledged binds survive a restart exactly; releases too") {
  StateFile tmp;
  std::vector<std::pair<std::string, std::vector<int>>> acknowledged;
  {
    auto core = open_core(tmp.path);
    REQUIRE(core->apply({nvf("a", 2, 80000).obj, nvf("b", 2, 80000).obj}, nullptr).is_ok());
    for (int i = 0; i < 6; ++i) {
      const std::string name = "p" + std::to_string(i);
      json pod = PodBuilder(name).gpu_memory("30Gi").obj;
      auto f = core->filter(pod, {"a", "b"});
      REQUIRE(f.is_ok());
      if (f->passed.empty()) continue;
      auto b = core->bind("default", name, "", f->passed.front());
      REQUIRE(b.is_ok());
      acknowledged.emplace_back(b->pod + "@" + b->node, b->choice.gpus);
    }
    CHECK(core->release("default/p0").is_ok());
    CHECK(core->release("default/p0").is_ok());  // twice: idempotent, as cluster.proto says
    acknowledged.erase(acknowledged.begin());
  }
  auto reopened = open_core(tmp.path);
  CHECK(reopened->release("default/p0").code() == Code::kNotFound);  // a restart forgets releases (documented)
  json snap = to_json(reopened->snapshot());
  REQUIRE(snap["bindings"].size() == acknowledged.size());
  for (std::size_t i = 0; i < acknowledged.size(); ++i) {
    const auto& b = snap["bindings"][i];
    CHECK(b["pod"].get<std::string>() + "@" + b["node"].get<std::string>() == acknowledged[i].first);
    CHECK(b["gpus"].get<std::vector<int>>() == acknowledged[i].second);
  }
}

TEST_CASE("Release is idempotent for a released pod; a pod never bound is NOT_FOUND; a rebound pod is released again") {
  auto core = open_core();
  REQUIRE(core->apply({nvf("a", 1, 80000).obj, nvf("b", 1, 80000).obj}, nullptr).is_ok());
  auto bind_p = [&](const std::string& node) {
    REQUIRE(core->filter(PodBuilder("p").gpu_memory("30Gi").obj, {"a", "b"}).is_ok());
    REQUIRE(core->bind("default", "p", "", node).is_ok());
  };
  bind_p("a");
  CHECK(core->release("default/p").is_ok());
  CHECK(core->release("default/p").is_ok());  // the retry of a Release whose answer was lost
  CHECK(core->snapshot().bindings.empty());
  CHECK(core->release("default/never").code() == Code::kNotFound);  // never bound here: said, not ignored
  CHECK(core->release("other/p").code() == Code::kNotFound);         // a wrong namespace too
  const Status long_name = core->release("default/" + std::string(10'000, 'x'));
  CHECK(long_name.code() == Code::kNotFound);
  CHECK(long_name.message().size() < 300);  // the name quoted short
  REQUIRE(core->filter(PodBuilder("pending").gpu_memory("30Gi").obj, {"a"}).is_ok());
  CHECK(core->release("default/pending").code() == Code::kNotFound);  // seen by Filter, never bound
  bind_p("b");  // bound again: a Release releases the new binding, once
  REQUIRE(core->snapshot().bindings.size() == 1);
  CHECK(core->release("default/p").is_ok());
  CHECK(core->snapshot().bindings.empty());
  CHECK(core->release("default/p").is_ok());
  // Dropped with its node: a Release after is done, not unknown.
  bind_p("a");
  REQUIRE(core->remove("Node", "a").is_ok());
  CHECK(core->release("default/p").is_ok());
}

TEST_CASE("many threads Filter and Bind one small cluster: nothing overcommits, refusals are clean") {
  auto core = open_core();
  REQUIRE(core->apply({nvf("a", 2, 40000).obj, nvf("b", 2, 40000).obj}, nullptr).is_ok());
  std::atomic<int> bound{0};
  std::atomic<int> refused{0};
  std::atomic<int> unexpected{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        const std::string name = fmt::format("t{}-{}", t, i);
        PodBuilder builder(name);
        builder.gpu_memory(i % 2 ? "7Gi" : "13Gi");
        if (i % 3 == 0) builder.sm_sharing();
        auto f = core->filter(builder.obj, {"a", "b"});
        if (!f.is_ok() || f->passed.empty()) continue;
        auto b = core->bind("default", name, "", f->passed.front());
        if (b.is_ok()) {
          ++bound;
        } else if (b.status().code() == Code::kUnschedulable) {
          ++refused;
        } else {
          ++unexpected;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(unexpected == 0);
  CHECK(bound > 0);
  json snap = to_json(core->snapshot());
  for (const auto& node : snap["nodes"]) {
    for (const auto& gpu : node["gpus"]) CHECK(gpu["usedMiB"].get<std::int64_t>() <= gpu["memoryMiB"].get<std::int64_t>());
  }
  MESSAGE("bound ", bound.load(), ", lost races ", refused.load());
}

TEST_CASE("queues: Filter fails every node with the queue's reason; Bind answers ResourceExhausted") {
  auto core = open_core();
  json queue = {{"kind", "Queue"},
                {"metadata", {{"name", "team"}}},
                {"spec",
                 {{"resources",
                   {{"gpu", {{"quota", 1}, {"limit", 1}}}, {"cpu", {{"quota", -1}, {"limit", -1}}}, {"memory", {{"quota", -1}, {"limit", -1}}}}}}}};
  REQUIRE(core->apply({nvf("a", 4, 80000).obj, queue}, nullptr).is_ok());
  json two = PodBuilder("two").whole(2).label("kai.scheduler/queue", "team").obj;
  auto f = core->filter(two, {"a"});
  REQUIRE(f.is_ok());
  CHECK(f->passed.empty());
  CHECK(f->failed.at("a").find("queue team: gpu would reach 2 GPUs") == 0);
  CHECK(f->refused_by == FilterAnswer::RefusedBy::kQueue);  // fracpack_unschedulable_total{reason="queue"}
  CHECK(core->bind("default", "two", "", "a").status().code() == Code::kResourceExhausted);
  json one = PodBuilder("one").whole(1).label("kai.scheduler/queue", "team").obj;
  REQUIRE(core->filter(one, {"a"})->passed.size() == 1);
  CHECK(core->filter(one, {"a"})->refused_by == FilterAnswer::RefusedBy::kNothing);
  REQUIRE(core->bind("default", "one", "", "a").is_ok());
  CHECK(core->gauges().queues.front().gpu_allocated == doctest::Approx(1.0));
}

TEST_CASE("one server per state file: a second open is refused while the first holds it") {
  StateFile temp;
  ExtenderOptions options;
  options.state_path = temp.path;
  auto first = Extender::open(options);
  REQUIRE(first.is_ok());
  auto second = Extender::open(options);
  REQUIRE_FALSE(second.is_ok());
  CHECK(second.status().message().find("in use by another fracpack serve") != std::string::npos);
  first = Status(Code::kInternal, "closed");  // the first server goes away: the file is free again
  CHECK(Extender::open(options).is_ok());
}

TEST_CASE("a running whole-GPU pod without a devices annotation shows the GPUs it was given") {
  auto core = open_core();
  REQUIRE(core->apply({nvf("a", 2, 80000).obj}, nullptr).is_ok());
  std::vector<std::string> conflicts;
  REQUIRE(core->sync({PodBuilder("old").whole(2).bound_to("a").obj}, false, &conflicts).is_ok());
  REQUIRE(core->snapshot().bindings.size() == 1);
  CHECK(core->snapshot().bindings[0].gpus == std::vector<int>{0, 1});
}

TEST_CASE("Sync replaces the ledger with the bound pods given, reporting what cannot be held") {
  auto core = open_core();
  REQUIRE(core->apply({nvf("a", 1, 40000).obj}, nullptr).is_ok());
  std::vector<std::string> conflicts;
  auto st = core->sync({PodBuilder("x").gpu_memory("30Gi").annotation("nvidia.com/container.main.gpus.devices", "0").bound_to("a").obj,
                        PodBuilder("y").gpu_memory("30Gi").annotation("nvidia.com/container.main.gpus.devices", "0").bound_to("a").obj},
                       false, &conflicts);
  REQUIRE(st.is_ok());
  CHECK(core->snapshot().bindings.size() == 2);  // both recorded: they are facts
  REQUIRE(conflicts.size() == 1);
  CHECK(conflicts[0].find("default/y") == 0);
  CHECK(core->snapshot().nodes[0].gpus[0].fenced);
}

TEST_CASE("Preempt answers only nodes where fracpack's victims are among those offered") {
  auto core = open_core();
  REQUIRE(core->apply({nvf("a", 1, 80000).obj, nvf("b", 1, 80000).obj}, nullptr).is_ok());
  std::vector<std::string> conflicts;
  PodBuilder low_a("low-a");
  low_a.whole(1).priority_class("train").bound_to("a").obj["metadata"]["uid"] = "u-a";
  PodBuilder low_b("low-b");
  low_b.whole(1).priority_class("train").bound_to("b").obj["metadata"]["uid"] = "u-b";
  REQUIRE(core->sync({low_a.obj, low_b.obj}, false, &conflicts).is_ok());
  json high = PodBuilder("high").whole(1).priority_class("build").obj;
  auto answer = core->preempt(high, {{"a", {"u-a"}}, {"b", {"someone-else"}}});
  REQUIRE(answer.is_ok());
  REQUIRE(answer->size() == 1);
  CHECK(answer->at("a") == std::vector<std::string>{"u-a"});
}

TEST_CASE("Preempt offers no victims for a non-preemptible pod its queue's quota still refuses") {
  // Queue team (quota 1) holds a non-preemptible pod and a lower-priority preemptible one. A new
  // non-preemptible pod is over the quota whatever is evicted: evicting low would only waste it.
  auto core = open_core();
  json queue = {{"kind", "Queue"},
                {"metadata", {{"name", "team"}}},
                {"spec",
                 {{"resources",
                   {{"gpu", {{"quota", 1}, {"limit", -1}}}, {"cpu", {{"quota", -1}, {"limit", -1}}}, {"memory", {{"quota", -1}, {"limit", -1}}}}}}}};
  REQUIRE(core->apply({nvf("a", 2, 80000).obj, queue}, nullptr).is_ok());
  PodBuilder held("held");
  held.whole(1).label("kai.scheduler/queue", "team").priority_class("inference").bound_to("a").obj["metadata"]["uid"] = "u-held";
  PodBuilder low("low");
  low.whole(1).label("kai.scheduler/queue", "team").priority_class("train").bound_to("a").obj["metadata"]["uid"] = "u-low";
  std::vector<std::string> conflicts;
  REQUIRE(core->sync({held.obj, low.obj}, false, &conflicts).is_ok());
  json next = PodBuilder("next").whole(1).label("kai.scheduler/queue", "team").priority_class("inference").obj;
  auto answer = core->preempt(next, {{"a", {"u-held", "u-low"}}});
  REQUIRE(answer.is_ok());
  CHECK(answer->empty());
  // (Preemption that can help still happens: session_test's "lower priority of the own queue may go".)
}

}  // namespace
}  // namespace fracpack::test

namespace fracpack::test {
namespace {

TEST_CASE("cross-queue reclaim through Preempt: the pending pod's demand gives its queue a fair share") {
  // One node with 2 GPUs; qa and qb have quota 1 each; qb holds both GPUs with preemptible pods.
  // qa's pending pod deserves one GPU back: Preempt offers one of qb's pods (place does the same).
  auto core = open_core();
  REQUIRE(core->apply({nvf("n", 2, 80000).obj, queue_object("qa", "", 1), queue_object("qb", "", 1)}, nullptr).is_ok());
  std::vector<std::string> conflicts;
  std::vector<json> held;
  for (const char* name : {"b1", "b2"}) {
    held.push_back(PodBuilder(name).uid(std::string("u-") + name).whole(1).priority_class("train").label("kai.scheduler/queue", "qb").bound_to("n").obj);
  }
  REQUIRE(core->sync(held, false, &conflicts).is_ok());
  const json pending = PodBuilder("a1").uid("u-a1").whole(1).priority_class("train").label("kai.scheduler/queue", "qa").obj;
  auto f = core->filter(pending, {"n"});
  REQUIRE(f.is_ok());
  CHECK(f->passed.empty());
  const auto snap = core->snapshot();
  REQUIRE(snap.queues.size() == 2);
  CHECK(snap.queues[0].name == "qa");
  CHECK(snap.queues[0].gpu_fair_share == doctest::Approx(1.0));  // before: 0, from allocation alone
  bool found = false;
  for (const auto& q : core->gauges().queues) {  // what /metrics shows: current, not from allocation alone
    if (q.name != "qa") continue;
    found = true;
    CHECK(q.gpu_fair_share == doctest::Approx(1.0));
  }
  CHECK(found);
  auto victims = core->preempt(pending, {{"n", {"u-b1", "u-b2"}}});
  REQUIRE(victims.is_ok());
  REQUIRE(victims->count("n") == 1);
  CHECK(victims->at("n").size() == 1);
}

}  // namespace
}  // namespace fracpack::test

namespace fracpack::test {
namespace {

std::unique_ptr<Extender> open_shielding(const std::string& path, std::chrono::seconds preempt_default) {
  ExtenderOptions options;
  options.state_path = path;
  options.min_runtime.preempt = preempt_default;
  auto core = Extender::open(options);
  REQUIRE_MESSAGE(core.is_ok(), core.status().message());
  return std::move(*core);
}

/// Node a with one GPU, and a low-priority pod "low" Filtered and Bound there by this server.
void bind_low_on_a(Extender& core) {
  REQUIRE(core.apply({nvf("a", 1, 80000).obj}, nullptr).is_ok());
  const json low = PodBuilder("low").uid("u-low").whole(1).priority_class("train").obj;
  REQUIRE(core.filter(low, {"a"}).is_ok());
  REQUIRE(core.bind("default", "low", "u-low", "a").is_ok());
}

TEST_CASE("Preempt leaves out a pod bound less than the min runtime ago, also after a restart on the state file") {
  // docs/queues.md rule 13: the server's own Bind is the pod's start, and the state file keeps it.
  StateFile file("min-runtime");
  const json high = PodBuilder("high").uid("u-high").whole(1).priority_class("build").obj;
  {
    auto core = open_shielding(file.path, std::chrono::hours(1));
    bind_low_on_a(*core);
    auto answer = core->preempt(high, {{"a", {"u-low"}}});
    REQUIRE(answer.is_ok());
    CHECK(answer->empty());  // bound a moment ago: shielded for an hour
  }
  {
    auto restarted = open_shielding(file.path, std::chrono::hours(1));
    auto answer = restarted->preempt(high, {{"a", {"u-low"}}});
    REQUIRE(answer.is_ok());
    CHECK(answer->empty());  // the start came back from the state file
  }
  auto unshielded = open_shielding(file.path, std::chrono::seconds(0));
  auto answer = unshielded->preempt(high, {{"a", {"u-low"}}});
  REQUIRE(answer.is_ok());
  REQUIRE(answer->count("a") == 1);
  CHECK(answer->at("a") == std::vector<std::string>{"u-low"});
}

TEST_CASE("Sync keeps the start this server recorded for a pod it bound, when the pod has no startTime") {
  StateFile file("min-runtime-sync");
  const json high = PodBuilder("high").uid("u-high").whole(1).priority_class("build").obj;
  {
    auto core = open_shielding(file.path, std::chrono::hours(1));
    bind_low_on_a(*core);
    std::vector<std::string> conflicts;
    REQUIRE(core->sync({PodBuilder("low").uid("u-low").whole(1).priority_class("train").bound_to("a").obj}, false, &conflicts).is_ok());
  }
  auto restarted = open_shielding(file.path, std::chrono::hours(1));
  auto answer = restarted->preempt(high, {{"a", {"u-low"}}});
  REQUIRE(answer.is_ok());
  CHECK(answer->empty());  // the Sync rewrote the binding with the Bind's start
}

TEST_CASE("Preempt counts a synced pod's start from its status.startTime") {
  auto core = open_shielding(":memory:", std::chrono::hours(1));
  REQUIRE(core->apply({nvf("a", 1, 80000).obj, nvf("b", 1, 80000).obj}, nullptr).is_ok());
  PodBuilder old_pod("old");
  old_pod.uid("u-old").whole(1).priority_class("train").bound_to("a").obj["status"]["startTime"] =
      k8s::format_micro_time(std::chrono::system_clock::now() - std::chrono::hours(2));
  PodBuilder young("young");
  young.uid("u-young").whole(1).priority_class("train").bound_to("b").obj["status"]["startTime"] =
      k8s::format_micro_time(std::chrono::system_clock::now() - std::chrono::minutes(5));
  std::vector<std::string> conflicts;
  REQUIRE(core->sync({old_pod.obj, young.obj}, false, &conflicts).is_ok());
  const json high = PodBuilder("high").uid("u-high").whole(1).priority_class("build").obj;
  auto answer = core->preempt(high, {{"a", {"u-old"}}, {"b", {"u-young"}}});
  REQUIRE(answer.is_ok());
  REQUIRE(answer->size() == 1);
  CHECK(answer->at("a") == std::vector<std::string>{"u-old"});
}

}  // namespace
}  // namespace fracpack::test

namespace fracpack::test {
namespace {

/// Nodes a and b with 2 GPUs each, one young train pod on each (x on a, y on b), shielded from
/// preemption for an hour; a pending 2-GPU pod of higher priority fits nowhere as they stand.
std::unique_ptr<Extender> split_cluster() {
  auto core = open_shielding(":memory:", std::chrono::hours(1));
  REQUIRE(core->apply({nvf("a", 2, 80000).obj, nvf("b", 2, 80000).obj}, nullptr).is_ok());
  for (const auto& [name, node] : std::vector<std::pair<std::string, std::string>>{{"x", "a"}, {"y", "b"}}) {
    const json pod = PodBuilder(name).uid("u-" + name).whole(1).priority_class("train").obj;
    REQUIRE(core->filter(pod, {node}).is_ok());
    REQUIRE(core->bind("default", name, "u-" + name, node).is_ok());
  }
  return core;
}

TEST_CASE("without a watch, Explain counts a gang member it is asked about as Filter does, and forgets it") {
  auto core = open_core();
  const json group = {{"apiVersion", "scheduling.run.ai/v2alpha2"},
                      {"kind", "PodGroup"},
                      {"metadata", {{"name", "g"}, {"namespace", "default"}}},
                      {"spec", {{"minMember", 2}}}};
  REQUIRE(core->apply({nvf("n", 4, 80000).obj, group}, nullptr).is_ok());
  const auto member = [](const std::string& name) {
    json p = PodBuilder(name).uid("u-" + name).whole(1).obj;
    p["spec"]["schedulerName"] = "kai-scheduler";
    p["metadata"]["annotations"]["pod-group-name"] = "g";
    return p;
  };
  auto f = core->filter(member("p1"), {"n"});  // recorded: one of two
  REQUIRE(f.is_ok());
  CHECK(f->passed.empty());
  auto e = core->explain(member("p0"));  // with p0 counted, the gang fits: where the plan would put it
  REQUIRE(e.is_ok());
  CAPTURE(e->summary);
  CHECK(e->code == Code::kOk);
  CHECK(e->summary.find("its gang's plan would put it on n") != std::string::npos);
  CHECK(core->snapshot().bindings.empty());
  e = core->explain(member("p1"));  // p0 was forgotten: p1's gang still waits for it
  REQUIRE(e.is_ok());
  CHECK(e->code == Code::kUnschedulable);
  CHECK(e->summary.find("gang default/g: 1 of the 2 members it still needs are pending") != std::string::npos);
  f = core->filter(member("p0"), {"n"});
  REQUIRE(f.is_ok());
  CHECK(f->passed == std::vector<std::string>{"n"});
}

TEST_CASE("Explain shows consolidation's plan for a pod that fits nowhere: the node, and which pod moves where") {
  auto core = split_cluster();
  const json big = PodBuilder("big").uid("u-big").whole(2).priority_class("build-preemptible").obj;
  auto e = core->explain(big);
  REQUIRE(e.is_ok());
  CHECK(e->code != Code::kOk);
  REQUIRE(e->consolidation_node == "a");  // a tie in moves and memory: node order
  REQUIRE(e->consolidation_moves.size() == 1);
  CHECK(e->consolidation_moves[0].pod == "default/x");
  CHECK(e->consolidation_moves[0].from == "a");
  CHECK(e->consolidation_moves[0].to == "b");
  CHECK(e->summary.find("consolidation would place it on a by moving 1 running pod(s)") != std::string::npos);
  CHECK(e->summary.find(".;") == std::string::npos);
  // Not for a non-preemptible pod (KAI consolidates for preemptible jobs only), nor when it fits.
  const json urgent = PodBuilder("urgent").uid("u-urgent").whole(2).priority_class("inference").obj;
  auto refused = core->explain(urgent);
  REQUIRE(refused.is_ok());
  CHECK(refused->consolidation_node.empty());
  const json one = PodBuilder("one").uid("u-one").whole(1).priority_class("build-preemptible").obj;
  auto fits = core->explain(one);
  REQUIRE(fits.is_ok());
  CHECK(fits->code == Code::kOk);
  CHECK(fits->consolidation_node.empty());
}

TEST_CASE("Preempt: where no pod may be preempted, the pods consolidation moves off its node are the victims") {
  auto core = split_cluster();
  const json big = PodBuilder("big").uid("u-big").whole(2).priority_class("build-preemptible").obj;
  // x and y are shielded (an hour's preempt min runtime): no preemption victims anywhere. Moving x
  // to b lands big on a: x is a's victim, its controller makes it again, and it fits on b.
  auto answer = core->preempt(big, {{"a", {"u-x"}}, {"b", {"u-y"}}});
  REQUIRE(answer.is_ok());
  REQUIRE(answer->size() == 1);
  CHECK(answer->at("a") == std::vector<std::string>{"u-x"});
  // kube-scheduler did not offer x: no answer (a subset of what it offered, never more).
  auto unoffered = core->preempt(big, {{"a", {"someone-else"}}, {"b", {"u-y"}}});
  REQUIRE(unoffered.is_ok());
  CHECK(unoffered->empty());
  // The ledger is as it was: both still where they were bound.
  const auto snap = core->snapshot();
  std::map<std::string, std::string> where;
  for (const auto& b : snap.bindings) where[b.pod] = b.node;
  CHECK(where == std::map<std::string, std::string>{{"default/x", "a"}, {"default/y", "b"}});
}

}  // namespace
}  // namespace fracpack::test
