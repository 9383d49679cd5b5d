// Inputs that once crashed, hung or were misplaced (an adversarial review): each gets a clear
// answer and is never placed wrongly.
#include <doctest/doctest.h>

#include "fracpack/k8s/object_stream.hpp"
#include "fracpack/sim/place_job.hpp"
#include "support/builders.hpp"

namespace fracpack::test {
namespace {

PlaceReport run(const std::vector<json>& objects, PlacementConfig placement = {}) {
  PlaceOptions options;
  options.placement = placement;
  auto r = run_place(k8s::with_origins(objects, "test"), options);
  REQUIRE_MESSAGE(r.is_ok(), r.status().message());
  return *r;
}

bool has_warning(const PlaceReport& r, const std::string& part) {
  for (const auto& w : r.warnings) {
    if (w.find(part) != std::string::npos) return true;
  }
  return false;
}

TEST_CASE("a reserve as large as the GPU leaves no room, not unlimited 0 MiB fractions") {
  PlacementConfig reserve;
  reserve.reserved_per_gpu = MiB(40000);
  NodeBuilder n("n");
  n.gpus(1, 40000).fractions();
  PlaceReport r = run({n.obj, PodBuilder("a").fraction("1").obj, PodBuilder("b").fraction("0.5").obj}, reserve);
  CHECK(r.placements.empty());
  CHECK(r.unschedulable.size() == 2);
}

TEST_CASE("a node never has more GPUs than the device plugin advertises") {
  NodeBuilder inventory("inv");
  inventory.annotation("fracpack.io/gpu-memory-mib", "80000,80000,80000,80000").allocatable("nvidia.com/gpu", "1");
  CHECK(inventory.spec().gpus.size() == 1);
  NodeBuilder labelled("lab");
  labelled.label("nvidia.com/gpu.count", "4096").label("nvidia.com/gpu.memory", "80000").allocatable("nvidia.com/gpu", "2");
  CHECK(labelled.spec().gpus.size() == 2);
  NodeBuilder none("none");
  none.gpus(4, 80000).allocatable("nvidia.com/gpu", "0");
  CHECK(none.spec().gpus.empty());
}

TEST_CASE("cordons and conditions written with other YAML types mean what they say") {
  auto objects = k8s::read_objects(R"(
kind: Node
metadata: {name: a, labels: {nvidia.com/gpu.count: "1", nvidia.com/gpu.memory: "80000"}}
spec: {unschedulable: "true"}
status:
  allocatable: {cpu: "8", memory: 8Gi, nvidia.com/gpu: "1"}
  conditions: [{type: Ready, status: True}, {type: gpu-fractioning.nvidia.com/Ready, status: True}]
---
kind: Node
metadata: {name: b}
status: {conditions: ["x"]}
---
kind: Node
metadata: {name: c}
spec: {unschedulable: maybe}
)",
                                   "nodes.yaml");
  REQUIRE(objects.is_ok());
  auto a = k8s::decode_node((*objects)[0], DecodeConfig{});
  REQUIRE(a.is_ok());
  CHECK_FALSE(a->schedulable);
  CHECK(a->ready);
  CHECK(a->fractions_ready);
  auto b = k8s::decode_node((*objects)[1], DecodeConfig{});
  REQUIRE_FALSE(b.is_ok());
  CHECK(b.status().message() == "node b: status.conditions[0] must be a map with type and status, not a string");
  auto c = k8s::decode_node((*objects)[2], DecodeConfig{});
  REQUIRE_FALSE(c.is_ok());
  CHECK(c.status().message() == "node c: spec.unschedulable must be true or false, not \"maybe\"");
}

TEST_CASE("a duplicate counts once even when its first copy is invalid") {
  NodeBuilder n("n");
  n.gpus(1, 80000).fractions();
  PlaceReport r = run({n.obj, PodBuilder("p").fraction("abc").obj, PodBuilder("p").fraction("0.5").obj});
  CHECK(r.placements.empty());
  REQUIRE(r.unschedulable.size() == 1);
  CHECK(r.unschedulable[0].status == "Invalid");
  CHECK(has_warning(r, "pod default/p appears again"));
}

TEST_CASE("out-of-range numbers are refused, not wrapped") {
  PodBuilder prio("prio");
  prio.obj["spec"]["priority"] = std::numeric_limits<std::uint64_t>::max();
  auto p = prio.decode();
  REQUIRE_FALSE(p.is_ok());
  CHECK(p.status().message().find("spec.priority must be a 32-bit integer") != std::string::npos);
  json big_class = {{"kind", "PriorityClass"}, {"metadata", {{"name", "huge"}}}, {"value", 4294967396LL}};
  json big_group = {{"kind", "PodGroup"},
                    {"metadata", {{"name", "g"}}},
                    {"spec", {{"minMember", std::numeric_limits<std::uint64_t>::max()}}}};
  PlaceReport r = run({big_class, big_group});
  CHECK(has_warning(r, "PriorityClass huge (test, object 1): ignored"));
  CHECK(has_warning(r, "PodGroup default/g: spec.minMember = 18446744073709551615: must be an integer from 0 to"));
}

TEST_CASE("names, containers and scheduler-written keys are validated") {
  CHECK_FALSE(PodBuilder("bad\nname").decode().is_ok());
  CHECK_FALSE(PodBuilder("UPPER").decode().is_ok());
  PodBuilder numbers("n");
  numbers.obj["spec"]["containers"] = json::array({1});
  CHECK(numbers.decode().status().message() == "pod default/n: spec.containers[0] must be a map, not a number");
  PodBuilder init("i");
  init.obj["spec"]["initContainers"] = json::array({1});
  CHECK(init.decode().status().message() == "pod default/i: spec.initContainers[0] must be a map, not a number");
  auto portion = PodBuilder("b").fraction("0.5").annotation("nvidia.com/container.main.gpu-compute.portion", "abc").bound_to("n").decode();
  REQUIRE_FALSE(portion.is_ok());
  CHECK(portion.status().message().find("gpu-compute.portion\" = \"abc\"") != std::string::npos);
}

TEST_CASE("bytes that are not UTF-8 come out replaced, never as an exception") {
  NodeBuilder n("n");
  PlaceReport r = run({n.obj, PodBuilder("p").fraction("0.\xff").obj});
  REQUIRE(r.unschedulable.size() == 1);
  std::string text;
  CHECK_NOTHROW(text = report_json_text(r));
  CHECK(text.find("\"Invalid\"") != std::string::npos);
}

TEST_CASE("a bound pod whose devices annotation disagrees with its request is a conflict, and fenced") {
  NodeBuilder n("n");
  n.gpus(2, 80000).fractions();
  PlaceReport r = run({n.obj,
                       PodBuilder("two").gpu_memory("1Gi").devices(2).annotation("nvidia.com/container.main.gpus.devices", "0").bound_to("n").obj,
                       PodBuilder("next").whole(2).obj});
  REQUIRE(r.conflicts.size() == 1);
  CHECK(r.conflicts[0].reason ==
        "its gpus.devices annotation lists 1 GPU(s), the pod asks for 2; GPU(s) 0 are fenced off from new placements");
  CHECK(r.placements.empty());  // GPU 0 is fenced: two whole GPUs are not available
}

TEST_CASE("huge allocatable and requests never overflow into a wrong answer") {
  NodeBuilder n("n");
  n.allocatable("cpu", "9223372036854775807m");
  PlaceReport r = run({n.obj, PodBuilder("small").request("cpu", "1m").obj,
                       PodBuilder("huge").request("cpu", "9223372036854775807m").obj});
  REQUIRE(r.placements.size() == 1);
  REQUIRE(r.unschedulable.size() == 1);
  CHECK(r.unschedulable[0].reason == "0/1 nodes are available: 1 Insufficient cpu.");
}

TEST_CASE("replica slots: many slots are chosen one GPU at a time, fullest first under pack") {
  NodeBuilder shared("s");
  shared.gpus(2, 46068).replicas(4, "time-slicing");
  ClusterState s = cluster({shared});
  auto o = place(s, PodBuilder("p").whole(6).selector("nvidia.com/gpu.sharing-strategy", "time-slicing").spec());
  REQUIRE(o.placement);
  CHECK(o.placement->choice.gpus == std::vector<int>{0, 0, 0, 0, 1, 1});
  CHECK(s.usage(0).gpus[0].slots == 4);
  CHECK(s.usage(0).gpus[1].slots == 2);
}

// A second adversarial review: each case once misplaced or lost a pod.
TEST_CASE("a memory request near 2^63 bytes never wraps into a negative hold") {
  NodeBuilder n("n");
  n.gpus(1, 40000).fractions();
  PlaceReport r = run({n.obj, PodBuilder("neg").gpu_memory("9223372036854775807").obj, PodBuilder("a").gpu_memory("39000Mi").obj,
                       PodBuilder("b").gpu_memory("39000Mi").obj});
  REQUIRE(r.placements.size() == 1);
  CHECK(r.placements[0].pod == "default/a");
  CHECK(r.unschedulable[0].status == "UnschedulableAndUnresolvable");
}

TEST_CASE("a GPU the reserve leaves empty does not hide other nodes from a fraction") {
  PlacementConfig reserve;
  reserve.reserved_per_gpu = MiB(2000);
  NodeBuilder big("big");
  big.gpus(1, 80000).fractions().cordoned();
  PlaceReport r = run({nvf("a", 1, 4000).obj, nvf("b", 1, 2000).obj, big.obj, PodBuilder("half").fraction("0.5").obj}, reserve);
  REQUIRE(r.placements.size() == 1);
  CHECK(r.placements[0].node == "a");
  CHECK(r.placements[0].choice.memory.front() == MiB(1000));
}

TEST_CASE("a running slot pod on a node without replicas holds a whole GPU") {
  NodeBuilder n("n");
  n.gpus(1, 80000).fractions();
  PlaceReport r = run({n.obj,
                       PodBuilder("slot").whole(1).selector("nvidia.com/gpu.sharing-strategy", "time-slicing").bound_to("n").obj,
                       PodBuilder("frac").gpu_memory("30000Mi").obj});
  REQUIRE(r.bound.size() == 1);
  CHECK(r.bound[0].choice.hold == GpuHold::kWhole);
  CHECK(r.placements.empty());
}

TEST_CASE("a running pod that fails validation is a conflict: its GPUs are fenced, never handed out") {
  NodeBuilder n("n");
  n.gpus(2, 80000).fractions();
  PlaceReport r = run({n.obj,
                       PodBuilder("typo").annotation("nvidia.com/container.main.gpu-memory.requests", "30Gi")
                           .annotation("nvidia.com/container.main.gpus.devices", "0")
                           .bound_to("n")
                           .obj,
                       PodBuilder("unknown").annotation("gpu-fraction", "7").bound_to("n").obj,
                       PodBuilder("new").gpu_memory("1Gi").obj});
  REQUIRE(r.conflicts.size() == 2);
  CHECK(r.conflicts[0].reason.find("GPU(s) 0 are fenced") != std::string::npos);
  CHECK(r.conflicts[1].reason.find("GPU(s) 0,1 are fenced") != std::string::npos);  // unknown claim: the whole node
  CHECK(r.placements.empty());
}

TEST_CASE("a conflicting running pod still holds its node's CPU and memory") {
  NodeBuilder n("n");
  n.gpus(1, 80000).allocatable("cpu", "8");
  PlaceReport r = run({n.obj, PodBuilder("a").whole(1).annotation("nvidia.com/container.main.gpus.devices", "0").bound_to("n").obj,
                       PodBuilder("b").whole(1).request("cpu", "6").annotation("nvidia.com/container.main.gpus.devices", "0").bound_to("n").obj,
                       PodBuilder("cpu-hog").request("cpu", "6").obj});
  REQUIRE(r.conflicts.size() == 1);
  CHECK(r.placements.empty());
  REQUIRE(r.unschedulable.size() == 1);
  CHECK(r.unschedulable[0].reason == "0/1 nodes are available: 1 Insufficient cpu.");
}

TEST_CASE("a node whose allocatable lists no nvidia.com/gpu has no GPUs, whatever its labels") {
  NodeBuilder n("n");
  n.label("nvidia.com/gpu.count", "8").label("nvidia.com/gpu.memory", "80000");
  CHECK(n.spec().gpus.empty());
}

TEST_CASE("extended resource sums saturate instead of wrapping") {
  NodeBuilder n("n");
  n.allocatable("example.com/foo", "1");
  std::vector<json> objects{n.obj};
  for (int i = 0; i < 4; ++i) {
    objects.push_back(PodBuilder("run-" + std::to_string(i)).limit("example.com/foo", "4000000000000000000").bound_to("n").obj);
  }
  objects.push_back(PodBuilder("new").limit("example.com/foo", "1").obj);
  PlaceReport r = run(objects);
  CHECK(r.placements.empty());
}

TEST_CASE("JSON objects with duplicate keys are refused like YAML ones") {
  auto r = k8s::read_objects(R"({"kind":"Pod","metadata":{"annotations":{"gpu-memory":"1000","gpu-memory":"99999"}}})", "dup.json");
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().message() == "dup.json: duplicate key \"gpu-memory\" in a JSON object");
}

TEST_CASE("table output never carries terminal escapes from the input") {
  PlaceReport r = run({PodBuilder("x\x1b[2J").obj});
  const std::string table = report_table(r);
  CHECK(table.find('\x1b') == std::string::npos);
}

}  // namespace
}  // namespace fracpack::test
