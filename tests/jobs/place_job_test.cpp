// `fracpack place` end to end: bound pods first, then the rest in order, reasons for the others.
#include <fstream>

#include <doctest/doctest.h>

#include "fracpack/k8s/object_stream.hpp"
#include "fracpack/sim/place_job.hpp"
#include "support/builders.hpp"

namespace fracpack::test {
namespace {

PlaceReport run(const std::vector<json>& objects, const std::string& policy_name = "pack") {
  PlaceOptions options;
  options.policy = policy_name;
  auto r = run_place(k8s::with_origins(objects, "test"), options);
  REQUIRE_MESSAGE(r.is_ok(), r.status().message());
  return *r;
}

const Placement* find(const std::vector<Placement>& list, const std::string& pod) {
  for (const auto& p : list) {
    if (p.pod == pod) return &p;
  }
  return nullptr;
}

TEST_CASE("Koordinator PR 1289: bound pods are rebuilt from their annotations before anything is placed") {
  NodeBuilder n("n");
  n.gpus(2, 10000).fractions();
  std::vector<json> objects{
      n.obj,
      // Pending first in the input: it must still not get GPU 0's memory that the bound pod holds.
      PodBuilder("new").gpu_memory("6000Mi").obj,
      PodBuilder("running").gpu_memory("8000Mi").annotation("nvidia.com/container.main.gpus.devices", "0").bound_to("n").obj,
      PodBuilder("trainer").whole(1).bound_to("n").obj,  // no annotation: takes the lowest idle GPU
  };
  PlaceReport r = run(objects);
  REQUIRE(r.bound.size() == 2);
  CHECK(find(r.bound, "default/running")->choice.gpus == std::vector<int>{0});
  CHECK(find(r.bound, "default/trainer")->choice.gpus == std::vector<int>{1});
  CHECK(r.placements.empty());
  REQUIRE(r.unschedulable.size() == 1);
  CHECK(r.unschedulable[0].pod == "default/new");
  CHECK(r.unschedulable[0].status == "Unschedulable");
}

TEST_CASE("a bound pod the ledger cannot hold is a conflict, never a double allocation") {
  NodeBuilder n("n");
  n.gpus(1, 10000).fractions();
  std::vector<json> objects{
      n.obj,
      PodBuilder("a").gpu_memory("8000Mi").annotation("nvidia.com/container.main.gpus.devices", "0").bound_to("n").obj,
      PodBuilder("b").gpu_memory("8000Mi").annotation("nvidia.com/container.main.gpus.devices", "0").bound_to("n").obj,
      PodBuilder("c").whole(1).bound_to("gone").obj,
  };
  objects.push_back(PodBuilder("pending").gpu_memory("1000Mi").obj);
  PlaceReport r = run(objects);
  CHECK(r.bound.size() == 1);
  REQUIRE(r.conflicts.size() == 2);
  CHECK(r.conflicts[0].pod == "default/b");
  CHECK(r.conflicts[0].reason ==
        "GPU 0 cannot take it (shared-time-slicing, 8000 of 10000 MiB usable held); GPU(s) 0 are fenced off from new "
        "placements");
  CHECK(r.conflicts[1].reason == "bound to a node that is not in the cluster input");
  // GPU 0 has 2000 MiB left on paper, but b really runs there: nothing new may land on it.
  REQUIRE(r.unschedulable.size() == 1);
  CHECK(r.unschedulable[0].pod == "default/pending");
  CHECK(r.unschedulable[0].nodes.at(0).second.find("GPU 0 fenced") != std::string::npos);
}

TEST_CASE("a running pod is adopted as it is, even where a new pod would not be admitted") {
  // The fractioning operator is not ready and the node is short of CPU: the running pods still hold
  // their GPUs and CPU, and nothing pending may take them.
  NodeBuilder n("n");
  n.gpus(2, 80000).fractions(false).allocatable("cpu", "4");
  std::vector<json> objects{
      n.obj,
      PodBuilder("nb").fraction("0.5").annotation("nvidia.com/container.main.gpus.devices", "1").bound_to("n").obj,
      PodBuilder("big").whole(1).request("cpu", "8").annotation("nvidia.com/container.main.gpus.devices", "0").bound_to("n").obj,
      PodBuilder("train").whole(1).request("cpu", "0").obj,
  };
  PlaceReport r = run(objects);
  CHECK(r.conflicts.empty());
  REQUIRE(r.bound.size() == 2);
  REQUIRE(r.unschedulable.size() == 1);
  CHECK(r.unschedulable[0].pod == "default/train");
  CHECK(r.unschedulable[0].reason.find("Insufficient idle GPUs") != std::string::npos);
}

TEST_CASE("a gang never places fewer than minMember, counting only members really running") {
  NodeBuilder n("n");
  n.gpus(4, 80000);
  json group = {{"kind", "PodGroup"}, {"metadata", {{"name", "g"}, {"namespace", "default"}}}, {"spec", {{"minMember", 3}}}};
  std::vector<json> objects{n.obj, group, PodBuilder("g-0").whole(1).gang("g").bound_to("gone").obj,
                            PodBuilder("g-1").whole(1).gang("g").obj, PodBuilder("g-2").whole(1).gang("g").obj};
  PlaceReport r = run(objects);
  CHECK(r.placements.empty());
  REQUIRE(r.unschedulable.size() == 2);
  CHECK(r.unschedulable[0].reason == "gang default/g needs 3 pods placed together but only 2 are pending; it waits for the rest");
}

TEST_CASE("place keeps a PodGroup's pods in one rack when its topologyConstraint requires it") {
  NodeBuilder small("a-small");
  small.gpus(2, 80000).label("rack", "r1");
  NodeBuilder big("b-big");
  big.gpus(4, 80000).label("rack", "r2");
  json group = {{"kind", "PodGroup"},
                {"metadata", {{"name", "g"}, {"namespace", "default"}}},
                {"spec", {{"minMember", 3}, {"topologyConstraint", {{"requiredTopologyLevel", "rack"}}}}}};
  std::vector<json> objects{small.obj, big.obj, group};
  for (int i = 0; i < 4; ++i) objects.push_back(PodBuilder(fmt::format("g-{}", i)).whole(1).gang("g").obj);
  PlaceReport r = run(objects);
  REQUIRE(r.placements.size() == 4);  // three together, then the fourth, all in r2 (r1 holds only two)
  for (const auto& p : r.placements) CHECK(p.node == "b-big");
  objects.push_back(PodBuilder("g-4").whole(1).gang("g").obj);  // a fifth has no room left in r2
  PlaceReport more = run(objects);
  CHECK(more.placements.size() == 4);
  REQUIRE(more.unschedulable.size() == 1);
  CHECK(more.unschedulable[0].reason.find("within one value of node label rack") != std::string::npos);
}

TEST_CASE("with queues too, one pending member of a gang of three is not placed alone") {
  NodeBuilder n("n");
  n.gpus(4, 80000);
  json group = {{"kind", "PodGroup"}, {"metadata", {{"name", "g"}, {"namespace", "default"}}}, {"spec", {{"minMember", 3}, {"queue", "q"}}}};
  PlaceReport r = run({n.obj, queue_object("q", "", 4), group, PodBuilder("g-0").whole(1).gang("g").obj});
  CHECK(r.placements.empty());
  REQUIRE(r.unschedulable.size() == 1);
  CHECK(r.unschedulable[0].reason == "gang default/g needs 3 pods placed together but only 1 are pending; it waits for the rest");
}

TEST_CASE("finished pods hold nothing; invalid pods are reported with their reason") {
  NodeBuilder n("n");
  n.gpus(1, 10000).fractions();
  json done = PodBuilder("done").whole(1).bound_to("n").obj;
  done["status"]["phase"] = "Succeeded";
  std::vector<json> objects{n.obj, done, PodBuilder("next").whole(1).obj, PodBuilder("bad").fraction("2").obj,
                            PodBuilder("next").whole(1).obj};
  PlaceReport r = run(objects);
  REQUIRE(r.placements.size() == 1);
  CHECK(r.placements[0].pod == "default/next");
  REQUIRE(r.unschedulable.size() == 1);
  CHECK(r.unschedulable[0].status == "Invalid");
  CHECK(r.unschedulable[0].reason.find("gpu-fraction") != std::string::npos);
  REQUIRE(r.warnings.size() == 1);
  CHECK(r.warnings[0] == "pod default/next appears again in the input; the later copy is ignored");
}

TEST_CASE("invalid nodes and unknown kinds are warnings; a bad policy is an error") {
  NodeBuilder bad("bad");
  bad.label("nvidia.com/gpu.memory", "x");
  std::vector<json> objects{bad.obj, json{{"kind", "ConfigMap"}, {"metadata", {{"name", "cm"}}}}};
  PlaceReport r = run(objects);
  CHECK(r.nodes == 0);
  REQUIRE(r.warnings.size() == 2);
  CHECK(r.warnings[0] == "ConfigMap cm (test, object 2): kind \"ConfigMap\" is not used by placement; ignored");
  CHECK(r.warnings[1].find("node bad: label \"nvidia.com/gpu.memory\"") != std::string::npos);
  PlaceOptions options;
  options.policy = "nope";
  CHECK_FALSE(run_place(k8s::with_origins(objects, "test"), options).is_ok());
}

TEST_CASE("a workload policy with no GPU shape among the input pods says so; other policies do not") {
  std::vector<json> cpu_only{nvf("a", 2, 20000).obj, PodBuilder("c").request("cpu", "1").obj};
  for (const char* name : {"fgd", "fgd-cpu", "fgd-lp"}) {
    CAPTURE(name);
    PlaceReport r = run(cpu_only, name);
    REQUIRE(r.warnings.size() == 1);
    CHECK(r.warnings[0].rfind(fmt::format("policy {}: no input pod asks for GPU in milli-GPU", name), 0) == 0);
    CHECK(r.placements.size() == 1);  // still placed
  }
  CHECK(run(cpu_only, "pack").warnings.empty());
  std::vector<json> shared{nvf("a", 2, 20000).obj, PodBuilder("f").fraction("0.5").obj};
  CHECK(run(shared, "fgd-lp").warnings.empty());
}

TEST_CASE("PodGroup minMember and PriorityClass objects are honoured") {
  NodeBuilder n("n");
  n.gpus(8, 80000);
  json group = {{"apiVersion", "scheduling.run.ai/v2alpha2"},
                {"kind", "PodGroup"},
                {"metadata", {{"name", "g"}, {"namespace", "default"}}},
                {"spec", {{"minMember", 2}}}};
  json gold = {{"apiVersion", "scheduling.k8s.io/v1"}, {"kind", "PriorityClass"}, {"metadata", {{"name", "gold"}}}, {"value", 1000}};
  std::vector<json> objects{n.obj, group, gold, PodBuilder("g-0").whole(4).gang("g").obj, PodBuilder("g-1").whole(4).gang("g").obj,
                            PodBuilder("g-2").whole(4).gang("g").obj, PodBuilder("vip").whole(0).priority_class("gold").obj};
  PlaceReport r = run(objects);
  CHECK(r.placements.size() == 3);  // two gang members (minMember 2), and vip
  REQUIRE(r.unschedulable.size() == 1);
  CHECK(r.unschedulable[0].pod == "default/g-2");
}

TEST_CASE("a pod naming a missing PodGroup is placed all-or-nothing with its group, and warned about") {
  NodeBuilder n("n");
  n.gpus(2, 80000);
  std::vector<json> objects{n.obj, PodBuilder("a").whole(1).gang("lost").obj, PodBuilder("b").whole(2).gang("lost").obj};
  PlaceReport r = run(objects);
  CHECK(r.placements.empty());
  CHECK(r.unschedulable.size() == 2);
  REQUIRE(r.warnings.size() == 1);
  CHECK(r.warnings[0].find("names PodGroup default/lost, which is not in the input") != std::string::npos);
}

TEST_CASE("not-placed pods are listed in input order; a reserve as large as a GPU is warned about") {
  NodeBuilder n("n");
  n.gpus(1, 8000).fractions();
  std::vector<json> objects{n.obj, PodBuilder("big").gpu_memory("9000Mi").obj, PodBuilder("bad").fraction("7").obj};
  PlaceOptions options;
  options.placement.reserved_per_gpu = MiB(8000);
  auto r = run_place(k8s::with_origins(objects, "test"), options);
  REQUIRE(r.is_ok());
  REQUIRE(r->unschedulable.size() == 2);
  CHECK(r->unschedulable[0].pod == "default/big");
  CHECK(r->unschedulable[1].pod == "default/bad");
  REQUIRE(r->warnings.size() == 1);
  CHECK(r->warnings[0].find("node n: the reserved GPU memory (8000 MiB) is not below") == 0);
}

TEST_CASE("the bundled example: every pod placed or explained, the same way every run") {
  std::vector<json> objects;
  for (const char* file : {FRACPACK_SOURCE_DIR "/examples/cluster.yaml", FRACPACK_SOURCE_DIR "/examples/workload.yaml"}) {
    auto read = k8s::read_objects_file(file);
    REQUIRE_MESSAGE(read.is_ok(), read.status().message());
    objects.insert(objects.end(), read->begin(), read->end());
  }
  PlaceReport first = run(objects);
  CHECK(report_json(first) == report_json(run(objects)));
  CHECK(report_json(first).begin().key() == "policy");
  CHECK(first.bound.size() == 3);
  CHECK(first.conflicts.empty());
  auto at = [&](const std::string& pod) {
    const Placement* p = find(first.placements, pod);
    REQUIRE_MESSAGE(p != nullptr, pod);
    return *p;
  };
  CHECK(at("team-a/chat-7b-0").choice.mode == ComputeMode::kTimeSlicing);
  CHECK(at("team-a/embedder-mps").choice.mode == ComputeMode::kSmSharing);
  CHECK(at("team-b/sweep-2x").choice.gpus.size() == 2);
  CHECK(at("team-c/pretrain-8gpu").choice.hold == GpuHold::kWhole);
  CHECK(at("team-d/dev-slot").node == "l40s-shared-01");
  CHECK(at("team-c/vision-a100-60g").node == "a100-mixed-01");
  // The InfiniBand gang shares one leaf.
  CHECK(at("team-c/ib-train-0").node.starts_with("ib-h200-0"));
  CHECK(at("team-c/ib-train-1").node.starts_with("ib-h200-0"));
  int invalid = 0;
  for (const auto& u : first.unschedulable) invalid += u.status == "Invalid" ? 1 : 0;
  CHECK(invalid == 5);
  // The queue refusals the example is there to show.
  auto status_of = [&](const std::string& pod) {
    for (const auto& u : first.unschedulable) {
      if (u.pod == pod) return u.status;
    }
    return std::string("placed");
  };
  CHECK(status_of("team-d/extra-notebook") == "OverLimit");
  CHECK(status_of("default/quickstart") == "NonPreemptibleOverQuota");
  REQUIRE(first.queues.size() == 7);
  CHECK(first.queues[0].name == "default-queue");  // pre-order, oldest first
  CHECK(first.queues[1].name == "research");
  CHECK(first.queues[2].name == "team-a");
  CHECK(first.queues[2].depth == 1);
  json out = report_json(first);
  CHECK(out["summary"]["placed"] == first.placements.size());
  CHECK(out["placements"][0].contains("memoryMiB"));
  CHECK(report_table(first).find("NOT PLACED") != std::string::npos);
}

}  // namespace
}  // namespace fracpack::test
