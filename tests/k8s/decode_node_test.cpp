// docs/requests.md rules 2–9: what a node offers.
#include <doctest/doctest.h>

#include "support/builders.hpp"

namespace fracpack::test {
namespace {

std::string node_error(const NodeBuilder& b) {
  auto n = k8s::decode_node(b.obj, DecodeConfig{});
  REQUIRE_FALSE(n.is_ok());
  CHECK(n.status().code() == Code::kInvalidArgument);
  return n.status().message();
}

TEST_CASE("gpu.memory label: MiB floored to 100; bytes when at least 1,048,576") {
  CHECK(NodeBuilder("a").gpus(8, 143771).spec().gpus[0].memory == MiB(143700));
  CHECK(NodeBuilder("b").gpus(2, 46068).spec().gpus[1].memory == MiB(46000));
  // 80 GiB written in bytes
  CHECK(NodeBuilder("c").gpus(1, 85899345920LL).spec().gpus[0].memory == MiB(81900));
  // 1 MiB in bytes, or 99 MiB, floors to nothing: refused, never a GPU that takes fractions forever
  CHECK(node_error(NodeBuilder("d").gpus(1, 1048576)).find("gives 0 MiB per GPU") != std::string::npos);
  CHECK(node_error(NodeBuilder("e").gpus(1, 99)).find("gives 0 MiB per GPU") != std::string::npos);
}

TEST_CASE("GPU count: the count label, else allocatable nvidia.com/gpu") {
  NodeBuilder b("a");
  b.allocatable("nvidia.com/gpu", "4").label("nvidia.com/gpu.memory", "16000");
  NodeSpec n = b.spec();
  REQUIRE(n.gpus.size() == 4);
  CHECK(n.gpus[3].index == 3);
  CHECK(n.gpu_memory_known);
}

TEST_CASE("a GPU node without the memory label is marked unknown, never given a size") {
  NodeBuilder b("a");
  b.gpus(4, 0);
  NodeSpec n = b.spec();
  CHECK(n.gpus.size() == 4);
  CHECK_FALSE(n.gpu_memory_known);
}

TEST_CASE("sharing kind: NvFractions from the fractioning condition, readiness from its status") {
  NodeSpec ready = NodeBuilder("a").gpus(8, 80000).fractions(true).spec();
  CHECK(ready.sharing == SharingKind::kNvFractions);
  CHECK(ready.fractions_ready);
  NodeSpec not_ready = NodeBuilder("b").gpus(8, 80000).fractions(false).spec();
  CHECK(not_ready.sharing == SharingKind::kNvFractions);
  CHECK_FALSE(not_ready.fractions_ready);
  CHECK(NodeBuilder("c").gpus(8, 80000).spec().sharing == SharingKind::kExclusive);
}

TEST_CASE("device-plugin replicas: physical GPUs from allocatable ÷ N, strategy from the label") {
  NodeBuilder b("mps");
  b.gpus(1, 143771).replicas(4, "mps");
  b.obj["metadata"]["labels"].erase("nvidia.com/gpu.count");
  NodeSpec n = b.spec();
  CHECK(n.sharing == SharingKind::kReplicas);
  CHECK(n.replica.replicas == 4);
  CHECK(n.replica.strategy == ComputeMode::kSmSharing);
  CHECK(n.gpus.size() == 1);  // allocatable 4 slots, 1 device
  NodeSpec ts = NodeBuilder("ts").gpus(2, 46068).replicas(4, "time-slicing").spec();
  CHECK(ts.replica.strategy == ComputeMode::kTimeSlicing);
  CHECK(ts.gpus.size() == 2);
}

TEST_CASE("per-device inventory for nodes that mix GPU sizes") {
  NodeSpec n = NodeBuilder("mixed")
                   .gpus(4, 40960)
                   .annotation("fracpack.io/gpu-memory-mib", "81920,81920,40960,40960")
                   .spec();
  REQUIRE(n.gpus.size() == 4);
  CHECK(n.gpus[0].memory == MiB(81900));
  CHECK(n.gpus[3].memory == MiB(40900));
}

TEST_CASE("node errors name the node, the field and the rule") {
  CHECK(node_error(NodeBuilder("a").gpus(2, 1000).label("nvidia.com/gpu.memory", "lots")).find(
            "node a: label \"nvidia.com/gpu.memory\" = \"lots\"") != std::string::npos);
  CHECK(node_error(NodeBuilder("a").gpus(2, 1000).label("nvidia.com/gpu.count", "-2")).find("non-negative") !=
        std::string::npos);
  CHECK(node_error(NodeBuilder("a").allocatable("cpu", "64 cores")).find("status.allocatable[\"cpu\"]") !=
        std::string::npos);
  CHECK(node_error(NodeBuilder("a").gpus(2, 1000).annotation("fracpack.io/gpu-memory-mib", "100,200,300"))
            .find("lists 3 GPUs but label") != std::string::npos);
  CHECK(node_error(NodeBuilder("a").gpus(2, 1000).fractions().replicas(2, "time-slicing")).find("cannot both") !=
        std::string::npos);
  CHECK(node_error(NodeBuilder("a").gpus(1, 1000).replicas(2, "mig")).find("time-slicing or mps") !=
        std::string::npos);
  nlohmann::json nameless = {{"kind", "Node"}, {"metadata", {{"labels", nlohmann::json::object()}}}};
  auto n = k8s::decode_node(nameless, DecodeConfig{});
  REQUIRE_FALSE(n.is_ok());
  CHECK(n.status().message() == "node: metadata.name is missing");
}

TEST_CASE("readiness and cordoning") {
  CHECK_FALSE(NodeBuilder("a").not_ready().spec().ready);
  CHECK_FALSE(NodeBuilder("a").cordoned().spec().schedulable);
}

}  // namespace
}  // namespace fracpack::test
