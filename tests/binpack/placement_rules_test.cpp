// docs/placement.md rules 1–6, 9–13 and 15, each a test that fails without it (rule 7 is
// gang_test.cpp, rule 16 ledger_test.cpp). Test names start with the rule they check; the one named
// "§2: ..." checks rule 10.
#include <doctest/doctest.h>

#include "fracpack/queues/charge.hpp"
#include "support/builders.hpp"

namespace fracpack::test {
namespace {

TEST_CASE("rule 1: a shared GPU returns to idle when its last fractional pod leaves") {
  ClusterState s = cluster({nvf("n", 1, 10000)});
  REQUIRE(place(s, PodBuilder("a").gpu_memory("1000Mi").spec()).placement);
  REQUIRE(place(s, PodBuilder("b").gpu_memory("1000Mi").spec()).placement);
  CHECK(gpu_state(s, "n", 0) == GpuState::kSharedTimeSlicing);
  s.release("default/a");
  CHECK(gpu_state(s, "n", 0) == GpuState::kSharedTimeSlicing);
  s.release("default/b");
  CHECK(gpu_state(s, "n", 0) == GpuState::kIdle);
  CHECK(used_mib(s, "n", 0) == 0);
  CHECK(s.check_invariants().empty());
}

TEST_CASE("rule 2: compute modes never mix on one GPU") {
  ClusterState one = cluster({nvf("n", 1, 10000)});
  REQUIRE(place(one, PodBuilder("ts").gpu_memory("1000Mi").spec()).placement);
  PlaceOutcome sm = place(one, PodBuilder("sm").gpu_memory("1000Mi").sm_sharing().spec());
  REQUIRE_FALSE(sm.placement);
  CHECK(sm.why.code == Code::kUnschedulable);
  CHECK(sm.why.nodes.at(0).second.text().find("GPU 0 time-slicing") != std::string::npos);

  ClusterState two = cluster({nvf("n", 2, 10000)});
  REQUIRE(place(two, PodBuilder("ts").gpu_memory("1000Mi").spec()).placement);
  auto o = place(two, PodBuilder("sm").gpu_memory("1000Mi").sm_sharing().spec());
  REQUIRE(o.placement);
  CHECK(o.placement->choice.gpus == std::vector<int>{1});
  CHECK(gpu_state(two, "n", 1) == GpuState::kSharedSmSharing);
}

TEST_CASE("rule 3: whole-GPU pods take idle GPUs only; a whole GPU is invisible to fractions") {
  ClusterState s = cluster({nvf("n", 2, 10000)});
  REQUIRE(place(s, PodBuilder("f").gpu_memory("100Mi").spec()).placement);  // GPU 0 shared, 9900 free
  PlaceOutcome two = place(s, PodBuilder("w2").whole(2).spec());
  REQUIRE_FALSE(two.placement);  // GPU 0 has a fraction: not idle, however empty
  CHECK(two.why.summary.find("Insufficient idle GPUs") != std::string::npos);
  auto w1 = place(s, PodBuilder("w1").whole(1).spec());
  REQUIRE(w1.placement);
  CHECK(w1.placement->choice.gpus == std::vector<int>{1});
  // Volcano gpushare bug: a whole GPU counted as 0 used memory took fractions. Here it is invisible.
  for (int i = 0; i < 3; ++i) {
    auto f = place(s, PodBuilder("g" + std::to_string(i)).gpu_memory("3000Mi").spec());
    REQUIRE(f.placement);
    CHECK(f.placement->choice.gpus == std::vector<int>{0});
  }
  CHECK_FALSE(place(s, PodBuilder("g4").gpu_memory("3000Mi").spec()).placement);
  CHECK(gpu_state(s, "n", 1) == GpuState::kWhole);
}

TEST_CASE("rule 3: InfiniBand pods take idle GPUs only, even with a fraction") {
  NodeBuilder b = nvf("n", 2, 10000);
  b.allocatable("rdma/ib", "4");
  ClusterState s = cluster({b});
  REQUIRE(place(s, PodBuilder("f").gpu_memory("1000Mi").spec()).placement);  // GPU 0 shared
  auto ib = place(s, PodBuilder("ib").gpu_memory("1000Mi").infiniband().spec());
  REQUIRE(ib.placement);
  CHECK(ib.placement->choice.gpus == std::vector<int>{1});  // pack would have chosen GPU 0
  CHECK_FALSE(place(s, PodBuilder("ib2").gpu_memory("1000Mi").infiniband().spec()).placement);
}

TEST_CASE("rule 4 / KAI #416: capacity is per GPU, from the floored label") {
  ClusterState s = cluster({nvf("l40s", 1, 46068)});  // floored to 46000 MiB
  int placed = 0;
  for (int i = 0; i < 24; ++i) placed += place(s, PodBuilder("p" + std::to_string(i)).gpu_memory("2000Mi").spec()).placement ? 1 : 0;
  CHECK(placed == 23);
  CHECK(used_mib(s, "l40s", 0) == 46000);
}

TEST_CASE("rule 4: a memory limit larger than the GPU cannot be placed there") {
  ClusterState s = cluster({nvf("small", 1, 16000), nvf("big", 1, 80000)});
  auto o = place(s, PodBuilder("p").gpu_memory("8Gi").annotation("nvidia.com/container.main.gpu-memory.limit", "20Gi").spec());
  REQUIRE(o.placement);
  CHECK(o.placement->node == "big");
  ClusterState only_small = cluster({nvf("small", 1, 16000)});
  auto refused = place(only_small, PodBuilder("p").gpu_memory("8Gi").annotation("nvidia.com/container.main.gpu-memory.limit", "20Gi").spec());
  REQUIRE_FALSE(refused.placement);
  CHECK(refused.why.code == Code::kUnschedulableAndUnresolvable);
  CHECK(refused.why.summary.find("node(s) had GPUs smaller than the memory limit") != std::string::npos);
}

TEST_CASE("rule 4: on a node of mixed sizes the limit picks the GPU that holds it") {
  NodeBuilder mixed("mixed");
  mixed.gpus(2, 16000).fractions().annotation("fracpack.io/gpu-memory-mib", "16000,80000");
  ClusterState s = cluster({mixed});
  auto o = place(s, PodBuilder("p").gpu_memory("8Gi").annotation("nvidia.com/container.main.gpu-memory.limit", "20Gi").spec());
  REQUIRE(o.placement);
  CHECK(o.placement->choice.gpus == std::vector<int>{1});  // GPU 0 has room for 8 GiB, not for the 20 GiB limit
}

TEST_CASE("rule 5: sm-sharing accounts compute in hundredths, never above 100") {
  // 333 MiB of 1000 MiB is 34 hundredths: two fit (68), a third would be 102 although its memory fits.
  ClusterState sm = cluster({nvf("n", 1, 1000)});
  for (const char* name : {"a", "b"}) REQUIRE(place(sm, PodBuilder(name).gpu_memory("333Mi").sm_sharing().spec()).placement);
  CHECK(sm.usage(0).gpus[0].compute == 68);
  PlaceOutcome third = place(sm, PodBuilder("c").gpu_memory("333Mi").sm_sharing().spec());
  REQUIRE_FALSE(third.placement);
  CHECK(third.why.nodes.at(0).second.text().find("compute 68/100") != std::string::npos);
  // The same three as time-slicing fit: only memory counts.
  ClusterState ts = cluster({nvf("n", 1, 1000)});
  for (const char* name : {"a", "b", "c"}) REQUIRE(place(ts, PodBuilder(name).gpu_memory("333Mi").spec()).placement);
  CHECK(ts.usage(0).gpus[0].compute == 0);
}

TEST_CASE("the reason names what is short: compute, the other mode, or memory") {
  ClusterState sm = cluster({nvf("n", 1, 1000)});
  for (const char* name : {"a", "b"}) REQUIRE(place(sm, PodBuilder(name).gpu_memory("333Mi").sm_sharing().spec()).placement);
  auto compute = place(sm, PodBuilder("c").gpu_memory("333Mi").sm_sharing().spec());
  CHECK(compute.why.summary == "0/1 nodes are available: 1 Insufficient GPU compute.");
  CHECK(compute.why.nodes.at(0).second.text().find("requested 333 MiB and 34/100 compute sm-sharing") != std::string::npos);
  auto mode = place(sm, PodBuilder("d").gpu_memory("100Mi").spec());
  CHECK(mode.why.summary == "0/1 nodes are available: 1 GPU(s) shared in the other compute mode.");
  auto memory = place(sm, PodBuilder("e").gpu_memory("900Mi").sm_sharing().spec());
  CHECK(memory.why.summary == "0/1 nodes are available: 1 Insufficient GPU memory.");
}

TEST_CASE("the reason names GPUs held whole, and InfiniBand's idle-only rule, not memory") {
  NodeBuilder whole = nvf("whole", 2, 80000);
  NodeBuilder shared = nvf("shared", 1, 80000);
  whole.allocatable("rdma/ib", "1");
  shared.allocatable("rdma/ib", "1");
  ClusterState s = cluster({whole, shared});
  REQUIRE(place(s, PodBuilder("w").whole(2).spec()).placement);
  REQUIRE(place(s, PodBuilder("f").gpu_memory("1Gi").spec()).placement);  // "shared" is the only node left
  auto o = place(s, PodBuilder("p").gpu_memory("8Gi").infiniband().spec());
  REQUIRE_FALSE(o.placement);
  CHECK(o.why.summary ==
        "0/2 nodes are available: 1 GPU(s) held whole, 1 GPU(s) shared, InfiniBand takes idle GPUs only.");
  // Two GPUs held whole and one short of memory: the cause of the most GPUs names the node.
  ClusterState mixed = cluster({nvf("n", 3, 10000)});
  REQUIRE(place(mixed, PodBuilder("w").whole(2).spec()).placement);
  REQUIRE(place(mixed, PodBuilder("f").gpu_memory("9000Mi").spec()).placement);
  auto m = place(mixed, PodBuilder("q").gpu_memory("2000Mi").spec());
  CHECK(m.why.summary == "0/1 nodes are available: 1 GPU(s) held whole.");
  CHECK(m.why.nodes.at(0).second.text().find("GPU 2 time-slicing, free 1000 MiB") != std::string::npos);
}

TEST_CASE("every short resource is a reason of its own, like kube-scheduler's NodeResourcesFit") {
  NodeBuilder small("small");
  small.allocatable("cpu", "32").allocatable("memory", "256Gi");
  ClusterState s = cluster({small});
  auto o = place(s, PodBuilder("big").request("cpu", "64").request("memory", "1Ti").spec());
  CHECK(o.why.summary == "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory.");
  CHECK(o.why.code == Code::kUnschedulableAndUnresolvable);
  CHECK(o.why.nodes.at(0).second.text() ==
        "Insufficient cpu: requested 64000m, node allocatable 32000m; Insufficient memory: requested 1048576 MiB, "
        "node allocatable 262144 MiB");
}

TEST_CASE("rule 6: num-devices takes N distinct GPUs of one node, all or nothing") {
  ClusterState s = cluster({nvf("a", 2, 10000), nvf("b", 2, 10000)});
  REQUIRE(place(s, PodBuilder("x").whole(1).selector("kubernetes.io/hostname", "a").spec()).placement);
  REQUIRE(place(s, PodBuilder("y").whole(1).selector("kubernetes.io/hostname", "b").spec()).placement);
  // Each node has one GPU left: two devices fit on neither, although two GPUs are free cluster-wide.
  PlaceOutcome o = place(s, PodBuilder("pair").gpu_memory("1000Mi").devices(2).spec());
  REQUIRE_FALSE(o.placement);
  CHECK(s.allocation("default/pair") == nullptr);
  CHECK(gpu_state(s, "a", 1) == GpuState::kIdle);
  ClusterState fresh = cluster({nvf("a", 2, 10000)});
  auto pair = place(fresh, PodBuilder("pair").gpu_memory("4000Mi").devices(2).spec());
  REQUIRE(pair.placement);
  CHECK(pair.placement->choice.gpus == std::vector<int>{0, 1});
  CHECK(used_mib(fresh, "a", 0) == 4000);
  CHECK(used_mib(fresh, "a", 1) == 4000);
  auto three = place(fresh, PodBuilder("three").fraction("0.1").devices(3).spec());
  REQUIRE_FALSE(three.placement);
  CHECK(three.why.code == Code::kUnschedulableAndUnresolvable);
}

TEST_CASE("a request larger than every GPU is unschedulable, never clamped") {
  ClusterState s = cluster({nvf("a", 8, 143771)});
  PlaceOutcome o = place(s, PodBuilder("huge").gpu_memory("200Gi").spec());
  REQUIRE_FALSE(o.placement);
  CHECK(o.why.code == Code::kUnschedulableAndUnresolvable);
  CHECK(o.why.summary.find("node(s) had GPUs smaller than the memory request") != std::string::npos);
  CHECK(o.why.nodes.at(0).second.text().find("requested 204800 MiB") != std::string::npos);
}

TEST_CASE("gpushare #219: mixed GPU sizes are sized per GPU, not by node average") {
  NodeBuilder mixed("mixed");
  mixed.gpus(2, 10000).fractions().annotation("fracpack.io/gpu-memory-mib", "10000,20000");
  ClusterState s = cluster({mixed});
  auto o = place(s, PodBuilder("p").gpu_memory("15000Mi").spec());  // average is 15000, only GPU 1 holds it
  REQUIRE(o.placement);
  CHECK(o.placement->choice.gpus == std::vector<int>{1});
  CHECK_FALSE(place(s, PodBuilder("q").gpu_memory("12000Mi").spec()).placement);
  // A portion is of the GPU it lands on.
  auto half = place(s, PodBuilder("half").fraction("0.5").spec());
  REQUIRE(half.placement);
  CHECK(half.placement->choice.memory.front() == MiB(5000));
}

TEST_CASE("§2: a GPU node without the memory label takes whole GPUs but no memory-sized request") {
  NodeBuilder unlabeled("t4");
  unlabeled.gpus(4, 0);
  PlacementConfig legacy;
  legacy.sharing_mode = GpuSharingMode::kNonMemoryEnforced;
  ClusterState s = cluster({unlabeled}, legacy);
  PlaceOutcome o = place(s, PodBuilder("p").gpu_memory("1Gi").spec());
  REQUIRE_FALSE(o.placement);
  CHECK(o.why.summary.find("no GPU memory label") != std::string::npos);
  CHECK(o.why.nodes.at(0).second.text().find("nvidia.com/gpu.memory") != std::string::npos);
  CHECK(place(s, PodBuilder("w").whole(4).spec()).placement);
}

TEST_CASE("§2: a GPU node without the memory label takes gpu-fraction portions, as KAI does, in both sharing modes") {
  NodeBuilder unlabeled("t4");
  unlabeled.gpus(1, 0);
  PlacementConfig legacy;
  legacy.sharing_mode = GpuSharingMode::kNonMemoryEnforced;
  legacy.reserved_per_gpu = MiB(2048);  // not applied: nothing is known to reserve there
  ClusterState s = cluster({unlabeled}, legacy);
  auto a = place(s, PodBuilder("a").fraction("0.5").spec());
  REQUIRE(a.placement);
  CHECK(a.placement->choice.memory.front() == MiB(50));  // of KAI's nominal 100 MiB device
  REQUIRE(s.allocation("default/a") != nullptr);
  CHECK(queues::charge_of_allocation(s, *s.allocation("default/a"))[queues::Resource::kGpu] == 500);
  REQUIRE(place(s, PodBuilder("b").fraction("0.5").spec()).placement);
  auto c = place(s, PodBuilder("c").fraction("0.01").spec());  // the portions add up to one device
  REQUIRE_FALSE(c.placement);
  CHECK(c.why.code == Code::kUnschedulable);

  NodeBuilder fractioning("t4-nvf");
  fractioning.gpus(2, 0).fractions();
  ClusterState nv = cluster({fractioning, unlabeled});
  auto d = place(nv, PodBuilder("d").fraction("0.25").devices(2).spec());
  REQUIRE(d.placement);
  CHECK(d.placement->node == "t4-nvf");
  // NvFractions still needs gpu-fractioning (rule 11); memory-sized requests still need the label.
  CHECK_FALSE(place(nv, PodBuilder("e").fraction("0.5").selector("kubernetes.io/hostname", "t4").spec()).placement);
  auto m = place(nv, PodBuilder("m").gpu_memory("50Mi").spec());
  REQUIRE_FALSE(m.placement);
  CHECK(m.why.summary.find("node(s) had no GPU memory label") != std::string::npos);
}

TEST_CASE("gpuSharingMode: NvFractions needs the fractioning condition True; NonMemoryEnforced takes any GPU node") {
  NodeBuilder plain("plain");
  plain.gpus(1, 16000);
  NodeBuilder not_ready = nvf("upgrading", 1, 16000);
  not_ready.obj["status"]["conditions"][1]["status"] = "False";
  ClusterState nv = cluster({plain, not_ready});
  PlaceOutcome o = place(nv, PodBuilder("p").fraction("0.5").spec());
  REQUIRE_FALSE(o.placement);
  CHECK(o.why.code == Code::kUnschedulableAndUnresolvable);
  CHECK(o.why.summary.find("1 node(s) don't run gpu-fractioning") != std::string::npos);
  CHECK(o.why.summary.find("1 node(s) had gpu-fractioning not ready") != std::string::npos);
  PlacementConfig legacy;
  legacy.sharing_mode = GpuSharingMode::kNonMemoryEnforced;
  ClusterState old = cluster({plain, not_ready}, legacy);
  CHECK(place(old, PodBuilder("p").fraction("0.5").spec()).placement);
}

TEST_CASE("KAI #2212: a gpu-fraction is a portion of the usable memory, so 1.0 still fits under a reserve") {
  PlacementConfig reserve;
  reserve.reserved_per_gpu = MiB(2000);
  ClusterState s = cluster({nvf("n", 2, 81920)}, reserve);  // 81900 labelled, 79900 usable
  auto full = place(s, PodBuilder("full").fraction("1").spec());
  REQUIRE(full.placement);
  CHECK(full.placement->choice.memory.front() == MiB(79900));
  auto a = place(s, PodBuilder("a").fraction("0.5").sm_sharing().spec());
  auto b = place(s, PodBuilder("b").fraction("0.5").sm_sharing().spec());
  REQUIRE((a.placement && b.placement));
  CHECK(b.placement->choice.gpus == a.placement->choice.gpus);  // two halves share the other GPU
  CHECK(a.placement->choice.memory.front() == MiB(39950));
  CHECK(a.placement->choice.compute.front() == 50);
}

TEST_CASE("KAI #2212: reserved memory per GPU is kept out of placement") {
  PlacementConfig reserve;
  reserve.reserved_per_gpu = MiB(2000);
  ClusterState s = cluster({nvf("n", 1, 16000)}, reserve);
  REQUIRE(place(s, PodBuilder("a").gpu_memory("8000Mi").spec()).placement);
  CHECK_FALSE(place(s, PodBuilder("b").gpu_memory("8000Mi").spec()).placement);  // 16000 - 2000 < 16000
  CHECK(place(s, PodBuilder("c").gpu_memory("6000Mi").spec()).placement);
  ClusterState none = cluster({nvf("n", 1, 16000)});
  REQUIRE(place(none, PodBuilder("a").gpu_memory("8000Mi").spec()).placement);
  CHECK(place(none, PodBuilder("b").gpu_memory("8000Mi").spec()).placement);
}

TEST_CASE("device-plugin replicas: whole-GPU and InfiniBand pods never land there; slot pods do") {
  NodeBuilder shared("shared");
  shared.gpus(2, 46068).replicas(4, "time-slicing").allocatable("rdma/ib", "4");
  ClusterState s = cluster({shared});
  PlaceOutcome whole = place(s, PodBuilder("w").whole(1).spec());
  REQUIRE_FALSE(whole.placement);
  CHECK(whole.why.code == Code::kUnschedulableAndUnresolvable);
  CHECK(whole.why.nodes.at(0).second.text().find("would get a slot, not a device") != std::string::npos);
  CHECK_FALSE(place(s, PodBuilder("ib").infiniband().spec()).placement);
  CHECK_FALSE(place(s, PodBuilder("f").gpu_memory("1Gi").spec()).placement);
  int slots = 0;
  for (int i = 0; i < 9; ++i) {
    slots += place(s, PodBuilder("s" + std::to_string(i)).whole(1).selector("nvidia.com/gpu.sharing-strategy", "time-slicing").spec())
                     .placement ? 1 : 0;
  }
  CHECK(slots == 8);  // 2 devices × 4 replicas
  CHECK(s.usage(0).gpus[0].slots == 4);
  CHECK(gpu_state(s, "shared", 0) == GpuState::kSharedTimeSlicing);
}

TEST_CASE("MPS replica slots hold memory ÷ N and compute ÷ N") {
  NodeBuilder mps("mps");
  mps.gpus(1, 143771).replicas(4, "mps");
  ClusterState s = cluster({mps});
  auto o = place(s, PodBuilder("s").whole(1).selector("nvidia.com/gpu.sharing-strategy", "mps").spec());
  REQUIRE(o.placement);
  CHECK(o.placement->choice.memory.front() == MiB(35925));  // 143700 / 4
  CHECK(o.placement->choice.mode == ComputeMode::kSmSharing);
  CHECK(s.usage(0).gpus[0].compute == 25);
}

TEST_CASE("node readiness, cordons, selectors, CPU, memory, pods and extended resources") {
  NodeBuilder small("small");
  small.gpus(1, 16000).fractions().allocatable("cpu", "2").allocatable("pods", "2");
  ClusterState s = cluster({small, NodeBuilder("down").gpus(1, 16000).fractions().not_ready(),
                            NodeBuilder("cordoned").gpus(1, 16000).fractions().cordoned()});
  auto big_cpu = place(s, PodBuilder("cpu").request("cpu", "3").spec());
  REQUIRE_FALSE(big_cpu.placement);
  CHECK(big_cpu.why.summary.find("1 Insufficient cpu") != std::string::npos);
  CHECK(big_cpu.why.summary.find("1 node(s) were not ready") != std::string::npos);
  CHECK(big_cpu.why.summary.find("1 node(s) were unschedulable") != std::string::npos);
  REQUIRE(place(s, PodBuilder("a").spec()).placement);
  REQUIRE(place(s, PodBuilder("b").spec()).placement);
  auto third = place(s, PodBuilder("c").request("cpu", "0").spec());
  REQUIRE_FALSE(third.placement);
  CHECK(third.why.summary.find("Too many pods") != std::string::npos);
  auto fpga = place(s, PodBuilder("fpga").limit("example.com/fpga", "1").spec());
  CHECK(fpga.why.summary.find("Insufficient example.com/fpga") != std::string::npos);
  auto sel = place(s, PodBuilder("sel").selector("zone", "b").spec());
  CHECK(sel.why.summary.find("didn't match Pod's node selector") != std::string::npos);
}

TEST_CASE("HAMi #1780: no node fits, or no node at all, is an answer, never a crash") {
  ClusterState empty = cluster({});
  PlaceOutcome o = place(empty, PodBuilder("p").gpu_memory("1Gi").spec());
  REQUIRE_FALSE(o.placement);
  CHECK(o.why.summary == "0/0 nodes are available: the cluster has no nodes");
  ClusterState cpu_only = cluster({NodeBuilder("c")});
  PlaceOutcome g = place(cpu_only, PodBuilder("g").whole(1).spec());
  CHECK(g.why.summary == "0/1 nodes are available: 1 node(s) had no GPUs.");
  CHECK(g.why.code == Code::kUnschedulableAndUnresolvable);
}

TEST_CASE("rule 9: ties break by node name, then GPU index, on every run") {
  for (const char* policy_name : {"pack", "spread", "best-fit", "first-fit"}) {
    CAPTURE(policy_name);
    ClusterState s = cluster({nvf("node-c", 4, 16000), nvf("node-a", 4, 16000), nvf("node-b", 4, 16000)});
    auto o = place(s, PodBuilder("p").gpu_memory("1Gi").spec(), policy_name);
    REQUIRE(o.placement);
    CHECK(o.placement->node == "node-a");
    CHECK(o.placement->choice.gpus == std::vector<int>{0});
  }
}

}  // namespace
}  // namespace fracpack::test
