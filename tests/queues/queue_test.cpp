// Queue objects, the queue tree, charging, and admission (docs/queues.md rules 1–8).
#include <doctest/doctest.h>

#include "fracpack/k8s/object_stream.hpp"
#include "fracpack/queues/charge.hpp"
#include "fracpack/queues/decode_queue.hpp"
#include "fracpack/queues/queue_book.hpp"
#include "support/builders.hpp"

namespace fracpack::queues {
namespace {

using nlohmann::json;

json queue_json(const std::string& name, const std::string& parent, json gpu, json cpu = nullptr, json memory = nullptr) {
  json resources = {{"gpu", std::move(gpu)}};
  if (!cpu.is_null()) resources["cpu"] = std::move(cpu);
  if (!memory.is_null()) resources["memory"] = std::move(memory);
  json spec = {{"resources", resources}};
  if (!parent.empty()) spec["parentQueue"] = parent;
  return {{"apiVersion", "scheduling.run.ai/v2"}, {"kind", "Queue"}, {"metadata", {{"name", name}}}, {"spec", spec}};
}

QueueSpec decoded(const json& q) {
  auto r = decode_queue(q);
  REQUIRE_MESSAGE(r.is_ok(), r.status().message());
  return *r;
}

std::string decode_error(const json& q) {
  auto r = decode_queue(q);
  REQUIRE_FALSE(r.is_ok());
  return r.status().message();
}

TEST_CASE("Queue units: GPUs with fractions, millicores, MB of 10^6 bytes; -1 and unset") {
  QueueSpec q = decoded(queue_json("team-a", "dept", {{"quota", 2.5}, {"limit", -1}, {"overQuotaWeight", 2}},
                                   {{"quota", "4000"}, {"limit", 8000}}, {{"quota", -1}}));
  CHECK(q.parent == "dept");
  CHECK(q.priority == 100);
  CHECK(q.resource(Resource::kGpu).quota == 2500);
  CHECK(q.resource(Resource::kGpu).limit == kUnlimited);
  CHECK(q.resource(Resource::kGpu).over_quota_weight == 2000);
  CHECK(q.resource(Resource::kCpu).quota == 4000);
  CHECK(q.resource(Resource::kCpu).limit == 8000);
  CHECK(q.resource(Resource::kMemory).quota == kUnlimited);
  CHECK(q.resource(Resource::kMemory).limit == 0);  // unset: 0, which blocks
  CHECK_FALSE(q.resource(Resource::kMemory).limit_set);
  auto yaml = k8s::read_objects("kind: Queue\nmetadata: {name: q}\nspec: {resources: {gpu: {quota: 0.5, limit: 1}}}\n", "q.yaml");
  REQUIRE(yaml.is_ok());
  CHECK(decoded((*yaml)[0]).resource(Resource::kGpu).quota == 500);
}

TEST_CASE("bad Queue values name the queue and the field") {
  CHECK(decode_error(queue_json("q", "", {{"quota", -2}})) == "queue q: spec.resources.gpu.quota = -2: must be ≥ 0, or -1 for unlimited");
  CHECK(decode_error(queue_json("q", "", {{"limit", "NaN"}})) == "queue q: spec.resources.gpu.limit = \"NaN\": must be a finite number");
  CHECK(decode_error(queue_json("q", "", {{"quota", "inf"}})).find("must be a finite number") != std::string::npos);
  CHECK(decode_error(queue_json("q", "", {{"overQuotaWeight", -1}})) == "queue q: spec.resources.gpu.overQuotaWeight = -1: must be ≥ 0");
  CHECK(decode_error(queue_json("q", "", {{"quota", "lots"}})).find("must be a finite number") != std::string::npos);
  json no_resources = {{"kind", "Queue"}, {"metadata", {{"name", "q"}}}, {"spec", json::object()}};
  CHECK(decode_error(no_resources) == "queue q: spec.resources is missing; KAI requires gpu, cpu and memory terms");
}

TEST_CASE("the tree: unknown parents and cycles are errors; over-quota children are warnings") {
  auto unknown = QueueTree::build({decoded(queue_json("a", "ghost", {{"quota", 1}}))});
  REQUIRE_FALSE(unknown.is_ok());
  CHECK(unknown.status().message() == "queue a: spec.parentQueue \"ghost\" is not a queue in the input");
  auto cycle = QueueTree::build({decoded(queue_json("a", "c", {})), decoded(queue_json("b", "a", {})),
                                 decoded(queue_json("c", "b", {}))});
  REQUIRE_FALSE(cycle.is_ok());
  CHECK(cycle.status().message().find("links form a cycle: a → c → b → a") != std::string::npos);
  std::vector<std::string> warnings;
  auto tree = QueueTree::build({decoded(queue_json("dept", "", {{"quota", 2}})), decoded(queue_json("t1", "dept", {{"quota", 3}})),
                                decoded(queue_json("t2", "dept", {{"quota", 1}}))},
                               &warnings);
  REQUIRE(tree.is_ok());
  REQUIRE(warnings.size() == 2);
  CHECK(warnings[0].find("queue t1: gpu.quota 3 exceeds its parent dept's 2") == 0);
  CHECK(warnings[1] == "queue dept: its children's gpu.quota add up to 4, above its own 2");
  CHECK(tree->is_leaf(*tree->find("t1")));
  CHECK_FALSE(tree->is_leaf(*tree->find("dept")));
  CHECK(tree->path_to_root(*tree->find("t2")) == std::vector<std::size_t>{*tree->find("t2"), *tree->find("dept")});
}

TEST_CASE("charging: whole GPUs 1 each; fractions num-devices × hundredths of their GPU") {
  using test::PodBuilder;
  CHECK(charge(PodBuilder("w").whole(2).spec(), std::nullopt)[Resource::kGpu] == 2000);
  CHECK(charge(PodBuilder("f").fraction("0.333").spec(), std::nullopt)[Resource::kGpu] == 340);
  // KAI #1369: 2 devices × 60 % is 1.2 GPUs, not 0.6.
  CHECK(charge(PodBuilder("two").fraction("0.6").devices(2).spec(), std::nullopt)[Resource::kGpu] == 1200);
  CHECK(charge(PodBuilder("m").gpu_memory("20000Mi").spec(), MiB(80000))[Resource::kGpu] == 250);
  CHECK(charge(PodBuilder("m").gpu_memory("20000Mi").spec(), MiB(40000))[Resource::kGpu] == 500);
  auto cpu = charge(PodBuilder("c").spec(), std::nullopt);
  CHECK(cpu[Resource::kCpu] == 1000);
  CHECK(cpu[Resource::kMemory] == 1LL << 30);
}

TEST_CASE("KAI #1847: a pending fraction is charged against the smallest GPU that could take it") {
  using test::cluster;
  using test::nvf;
  ClusterState s = cluster({nvf("big", 1, 81920), nvf("small", 1, 40960), test::NodeBuilder("cpu")});
  auto pod = test::PodBuilder("p").gpu_memory("20000Mi").spec();
  CHECK(smallest_candidate_gpu(s, pod) == MiB(40900));
  CHECK(charge_pending(pod, s)[Resource::kGpu] == 490);  // ⌈20000 ÷ 40900 × 100⌉ = 49 hundredths
  auto too_big = test::PodBuilder("q").gpu_memory("60000Mi").spec();
  CHECK(charge_pending(too_big, s)[Resource::kGpu] == 740);  // only the 80 GB GPU holds it
}

struct Fixture {
  QueueTree tree;
  explicit Fixture(const std::vector<json>& queues)
      : tree([&] {
          std::vector<QueueSpec> specs;
          for (const auto& q : queues) specs.push_back(decoded(q));
          auto t = QueueTree::build(std::move(specs));
          REQUIRE(t.is_ok());
          return std::move(*t);
        }()) {}
  std::size_t at(const char* name) const { return *tree.find(name); }
};

TEST_CASE("KAI #1369: 2 devices × 60 % under deserved 1 is refused for a non-preemptible job") {
  Fixture f(std::vector<json>{queue_json("team", "", {{"quota", 1}, {"limit", -1}}, {{"quota", -1}, {"limit", -1}},
                                       {{"quota", -1}, {"limit", -1}})});
  QueueBook book(f.tree);
  auto pod = test::PodBuilder("p").fraction("0.6").devices(2).spec();
  auto refusal = book.admit(f.at("team"), charge(pod, std::nullopt), /*preemptible=*/false);
  REQUIRE(refusal);
  CHECK(refusal->reason == "NonPreemptibleOverQuota");
  CHECK(refusal->message.find("requested 1.2") != std::string::npos);
  CHECK(refusal->message.find("raise gpu.quota of queue team to ≥ 1.2") != std::string::npos);
  CHECK_FALSE(book.admit(f.at("team"), charge(pod, std::nullopt), /*preemptible=*/true));

  book.set_refusal_messages(false);  // replays: the same decision, no message formatted
  auto quiet = book.admit(f.at("team"), charge(pod, std::nullopt), /*preemptible=*/false);
  REQUIRE(quiet);
  CHECK(quiet->reason == "NonPreemptibleOverQuota");
  CHECK(quiet->queue == "team");
  CHECK(quiet->message.empty());
}

TEST_CASE("limit 0 and unset block; -1 does not; checks run at every ancestor") {
  Fixture f(std::vector<json>{queue_json("dept", "", {{"quota", 4}, {"limit", 3}}, {{"limit", -1}}, {{"limit", -1}}),
             queue_json("team", "dept", {{"quota", 4}, {"limit", -1}}, {{"limit", -1}}, {{"limit", -1}}),
             queue_json("closed", "dept", {{"quota", 4}, {"limit", 0}}, {{"limit", -1}}, {{"limit", -1}}),
             queue_json("nocpu", "", {{"quota", 4}, {"limit", -1}}, nullptr, {{"limit", -1}})});
  QueueBook book(f.tree);
  const Amounts two_gpus(2000, 0, 0);
  CHECK_FALSE(book.admit(f.at("team"), two_gpus, true));
  book.charge(f.at("team"), two_gpus, true);
  CHECK(book.allocated(f.at("dept"))[Resource::kGpu] == 2000);  // usage propagates to the parent
  auto over = book.admit(f.at("team"), two_gpus, true);
  REQUIRE(over);
  CHECK(over->reason == "OverLimit");
  CHECK(over->queue == "dept");
  CHECK(over->message == "queue dept: gpu would reach 4 GPUs (allocated 2 + requested 2), above its limit 3; raise "
                         "gpu.limit of queue dept to ≥ 4, or -1 for no limit");
  auto closed = book.admit(f.at("closed"), Amounts(100, 0, 0), true);
  REQUIRE(closed);
  CHECK(closed->queue == "closed");
  auto no_cpu = book.admit(f.at("nocpu"), Amounts(0, 500, 0), true);
  REQUIRE(no_cpu);
  CHECK(no_cpu->message.find("above its limit unset (0 in KAI, which blocks it)") != std::string::npos);
  CHECK_FALSE(book.admit(f.at("nocpu"), Amounts(1000, 0, 0), true));  // only resources asked for are checked
  book.charge(f.at("team"), two_gpus, true, -1);
  CHECK(book.allocated(f.at("dept"))[Resource::kGpu] == 0);
}

TEST_CASE("a fresh default-queue with zero quota explains itself") {
  Fixture f(std::vector<json>{queue_json("default-queue", "", {{"quota", 0}, {"limit", -1}}, {{"quota", 0}, {"limit", -1}},
                        {{"quota", 0}, {"limit", -1}})});
  QueueBook book(f.tree);
  auto r = book.admit(f.at("default-queue"), Amounts(1000, 1000, 0), false);
  REQUIRE(r);
  CHECK(r->reason == "NonPreemptibleOverQuota");
  CHECK(r->message.find("a fresh KAI install gives default-queue zero quota") != std::string::npos);
}

}  // namespace
}  // namespace fracpack::queues
