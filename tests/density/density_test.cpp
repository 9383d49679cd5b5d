// The density harness: inflation, curve bucketing, FGD's fragmentation arithmetic by hand, the
// study's policies on tiny clusters, and the real trace against the published results.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <set>

#include "density/curve.hpp"
#include "fracpack/sim/density.hpp"
#include "support/builders.hpp"
#include "support/trace_files.hpp"

namespace fracpack::test {
namespace {

trace::TracePod trace_pod(const std::string& name, int gpus, std::int64_t milli, std::int64_t cpu = 1000) {
  trace::TracePod p;
  p.name = name;
  p.cpu = MilliCpu(cpu);
  p.memory = MiB(1024);
  p.num_gpu = gpus;
  p.gpu_milli = MilliGpu(gpus == 0 ? 0 : milli);
  return p;
}

TEST_CASE("inflation: every original once in a seeded shuffle, then clones up to the target") {
  std::vector<trace::TracePod> pods;
  for (int i = 0; i < 50; ++i) pods.push_back(trace_pod(fmt::format("p{:02}", i), i % 5 == 0 ? 0 : 1, i % 2 == 0 ? 1000 : 300));
  std::int64_t original = 0;
  for (const auto& p : pods) original += p.gpu_total().count();
  const std::int64_t capacity = 40'000;  // 40 GPUs
  auto order = density::inflate(pods, capacity, 1.3, 42);
  REQUIRE(order.size() > pods.size());
  std::set<std::size_t> head(order.begin(), order.begin() + 50);
  CHECK(head.size() == 50);  // the originals first, each once
  std::int64_t total = 0;
  for (auto i : order) total += pods[i].gpu_total().count();
  CHECK(total >= original + 1000);  // the originals, and clones on top of them
  CHECK(total <= static_cast<std::int64_t>(1.3 * capacity));
  CHECK(total > static_cast<std::int64_t>(1.3 * capacity) - 1000);  // stopped by the next clone only
  CHECK(density::inflate(pods, capacity, 1.3, 42) == order);       // deterministic
  CHECK(density::inflate(pods, capacity, 1.3, 43) != order);       // and seeded
  // Demand above the target already: pods are dropped instead, never added.
  auto down = density::inflate(pods, 10'000, 1.0, 42);
  std::int64_t kept = 0;
  for (auto i : down) kept += pods[i].gpu_total().count();
  CHECK(kept <= 10'000);
  CHECK(down.size() < pods.size());
  // CPU-only lists cannot reach a GPU target: no clones, and no endless loop.
  std::vector<trace::TracePod> cpu{trace_pod("c0", 0, 0), trace_pod("c1", 0, 0)};
  CHECK(density::inflate(cpu, capacity, 1.3, 1).size() == 2);
}

TEST_CASE("curve: buckets by arrived demand rounded half to even, means, and the ±1 fallback") {
  density::CurveBuilder c(10);  // 10 GPUs: 100 milli arrived is 1 %
  c.add(250, 2.0);   // 2.5 % → bucket 2 (half to even)
  c.add(350, 4.0);   // 3.5 % → bucket 4
  c.add(180, 1.0);   // 1.8 % → bucket 2
  c.add(1000, 9.999);  // 10 % → bucket 10, value rounded to 9.99... then 10.00
  auto p = c.points();
  CHECK(p[2] == doctest::Approx(1.5));
  CHECK(p[4] == doctest::Approx(4.0));
  CHECK(p[3] == doctest::Approx((1.0 + 2.0 + 4.0) / 3));  // empty: buckets 2..4
  CHECK(p[10] == doctest::Approx(10.0));
  CHECK(std::isnan(p[7]));
}

TEST_CASE("fragmentation: the study's cases, computed by hand") {
  NodeFree node;
  node.cpu = 4000;
  node.gpu_milli = {1000, 300, 0, 600};
  const std::string t4 = "T4";
  node.model = &t4;
  // A half-GPU pod: GPUs with less than 500 free are fragments: 300 + 0.
  CHECK(fragment_for(node, TypicalPod{MilliCpu(1000), MilliGpu(500), 1, {}, 1, {}}) == 300);
  // A whole-GPU pod fits (one idle GPU): the partial ones are fragments: 300 + 600.
  CHECK(fragment_for(node, TypicalPod{MilliCpu(1000), MilliGpu(1000), 1, {}, 1, {}}) == 900);
  // Two whole GPUs do not fit: everything free is a fragment.
  CHECK(fragment_for(node, TypicalPod{MilliCpu(1000), MilliGpu(1000), 2, {}, 1, {}}) == 1900);
  // Not enough CPU, or the wrong model, or a CPU-only pod: everything.
  CHECK(fragment_for(node, TypicalPod{MilliCpu(8000), MilliGpu(100), 1, {}, 1, {}}) == 1900);
  CHECK(fragment_for(node, TypicalPod{MilliCpu(100), MilliGpu(100), 1, {"A10"}, 1, {}}) == 1900);
  CHECK(fragment_for(node, TypicalPod{MilliCpu(100), MilliGpu(100), 1, {"A10", "T4"}, 1, {}}) == 0);
  CHECK(fragment_for(node, TypicalPod{MilliCpu(100), MilliGpu(0), 0, {}, 1, {}}) == 1900);
  const std::vector<TypicalPod> workload{{MilliCpu(1000), MilliGpu(500), 1, {}, 0.75, {}}, {MilliCpu(1000), MilliGpu(1000), 1, {}, 0.25, {}}};
  CHECK(fragmentation(node, workload) == doctest::Approx(0.75 * 300 + 0.25 * 900));
}

TEST_CASE("typical pods: the commonest shapes covering 95 %, weights renormalised") {
  std::vector<PodRequest> pods;
  auto add = [&](int count, const char* fraction, int cpu_cores) {
    for (int i = 0; i < count; ++i) {
      auto b = PodBuilder(fmt::format("p{}", pods.size())).request("cpu", std::to_string(cpu_cores));
      if (fraction != nullptr) b.fraction(fraction);
      pods.push_back(b.spec());
    }
  };
  add(60, "0.5", 1);
  add(30, nullptr, 2);  // CPU-only pods count too
  add(6, "0.25", 1);
  add(4, "0.75", 1);  // beyond 95 %: left out
  auto typical = typical_pods(pods);
  REQUIRE(typical.size() == 3);
  CHECK(typical[0].milli == MilliGpu(500));
  CHECK(typical[0].weight == doctest::Approx(60.0 / 96));
  CHECK(typical[1].gpus == 0);
  CHECK(typical[2].milli == MilliGpu(250));
  double sum = 0;
  for (const auto& t : typical) sum += t.weight;
  CHECK(sum == doctest::Approx(1.0));
  // Every pod a shape of its own (CPU requests all differ): capped, commonest first, weights renormalised.
  std::vector<PodRequest> varied;
  for (int i = 0; i < 1000; ++i) {
    varied.push_back(PodBuilder(fmt::format("v{}", i)).request("cpu", fmt::format("{}m", 1000 + i)).fraction("0.5").spec());
  }
  for (int i = 0; i < 3; ++i) varied.push_back(PodBuilder(fmt::format("w{}", i)).request("cpu", "7").fraction("0.5").spec());
  auto capped = typical_pods(varied);
  REQUIRE(capped.size() == kMaxTypicalShapes);
  CHECK(capped[0].cpu == MilliCpu(7000));  // the only shape seen more than once
  CHECK(capped[0].weight == doctest::Approx(3.0 / (3 + kMaxTypicalShapes - 1)));
}

TEST_CASE("fgd: a half-GPU pod completes a half-used GPU instead of opening an idle one") {
  ClusterState s = cluster({nvf("a", 2, 20000), nvf("b", 2, 20000)});
  REQUIRE(s.reserve(PodBuilder("half").fraction("0.5").spec(), 1, [] { GpuChoice c; c.gpus = {1}; return c; }()).is_ok());
  auto o = place(s, PodBuilder("p").fraction("0.5").spec(), "fgd");
  REQUIRE(o.placement);
  CHECK(o.placement->node == "b");
  CHECK(o.placement->choice.gpus == std::vector<int>{1});
  // gpu-packing and the study's best fit agree here; random is only required to be valid.
  for (const char* name : {"gpu-packing", "study-best-fit", "gpu-clustering"}) {
    CAPTURE(name);
    ClusterState copy = s;
    auto other = place(copy, PodBuilder("q").fraction("0.5").spec(), name);
    REQUIRE(other.placement);
    CHECK(other.placement->node == "b");
  }
}

TEST_CASE("fgd-cpu: a CPU-only pod goes where it strands no GPU; fgd cannot tell the nodes apart") {
  // One typical pod: a whole GPU with 2 cores (2 milli-CPU per milli-GPU). Node a has 5 cores for
  // its 2 idle GPUs, node b has 40: 3 cores taken from a leave one of its GPUs unfed.
  PolicyOptions options;
  options.workload = std::make_shared<const std::vector<TypicalPod>>(
      std::vector<TypicalPod>{TypicalPod{MilliCpu(2000), MilliGpu(1000), 1, {}, 1.0, {}}});
  ClusterState s = cluster({nvf("a", 2, 20000).allocatable("cpu", "5"), nvf("b", 2, 20000).allocatable("cpu", "40")});
  const PodRequest cpu_pod = PodBuilder("c").request("cpu", "3").spec();
  auto fgd_cpu = *make_policy("fgd-cpu", options);
  auto fgd = *make_policy("fgd", options);
  auto ranked = rank_nodes(s, cpu_pod, *fgd_cpu);
  REQUIRE(ranked.size() == 2);
  CHECK(s.node(ranked.front().node).name == "b");
  CHECK(ranked.front().key.tier < ranked.back().key.tier);  // decided by the score, not the tie-break
  auto plain = rank_nodes(s, cpu_pod, *fgd);
  REQUIRE(plain.size() == 2);
  CHECK(plain.front().key.tier == plain.back().key.tier);  // fgd scores both alike (3 cores left still fit one pod)
}

TEST_CASE("fgd-lp: a share goes where its GPU can still be completed; fgd-cpu fills the nearest gap") {
  // The workload's shares: 650, 470, 320. Packed at best, 320 goes with 650 and 470 with 470.
  PolicyOptions options;
  options.workload = std::make_shared<const std::vector<TypicalPod>>(std::vector<TypicalPod>{
      TypicalPod{MilliCpu(1000), MilliGpu(650), 1, {}, 0.3, {}}, TypicalPod{MilliCpu(1000), MilliGpu(470), 1, {}, 0.3, {}},
      TypicalPod{MilliCpu(1000), MilliGpu(320), 1, {}, 0.3, {}}, TypicalPod{MilliCpu(2000), MilliGpu(1000), 1, {}, 0.1, {}}});
  auto fgd_lp = *make_policy("fgd-lp", options);
  auto fgd_cpu = *make_policy("fgd-cpu", options);
  // a: one GPU with a 470 on it; c: one idle GPU. A 320 beside the 470 would leave 210 that no share
  // of the workload can use; on c it waits for a 650.
  ClusterState s = cluster({nvf("a", 1, 10000), nvf("c", 1, 10000)});
  REQUIRE(s.reserve(PodBuilder("p470").fraction("0.47").spec(), 0, [] { GpuChoice c; c.gpus = {0}; return c; }()).is_ok());
  const PodRequest p320 = PodBuilder("p320").fraction("0.32").spec();
  auto lp = rank_nodes(s, p320, *fgd_lp);
  REQUIRE(lp.size() == 2);
  CHECK(s.node(lp.front().node).name == "c");
  CHECK(lp.front().key.tier < lp.back().key.tier);
  auto cpu = rank_nodes(s, p320, *fgd_cpu);
  REQUIRE(cpu.size() == 2);
  CHECK(s.node(cpu.front().node).name == "a");
  // With a 650 on c instead, the 320 completes that GPU.
  ClusterState t = cluster({nvf("a", 1, 10000), nvf("c", 1, 10000)});
  REQUIRE(t.reserve(PodBuilder("p470").fraction("0.47").spec(), 0, [] { GpuChoice c; c.gpus = {0}; return c; }()).is_ok());
  REQUIRE(t.reserve(PodBuilder("p650").fraction("0.65").spec(), 1, [] { GpuChoice c; c.gpus = {0}; return c; }()).is_ok());
  auto completed = rank_nodes(t, p320, *fgd_lp);
  REQUIRE(completed.size() == 2);
  CHECK(t.node(completed.front().node).name == "c");
  // Whole-GPU pods are scored as fgd-cpu scores them.
  ClusterState u = cluster({nvf("a", 1, 10000), nvf("c", 2, 10000)});
  const PodRequest whole = PodBuilder("w").whole(1).spec();
  auto a = rank_nodes(u, whole, *fgd_lp);
  auto b = rank_nodes(u, whole, *fgd_cpu);
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(a[i].key.tier == b[i].key.tier);
}

TEST_CASE("policies: the study's need a workload for fgd, and every name is known") {
  auto fgd = make_policy("fgd");
  REQUIRE_FALSE(fgd.is_ok());
  CHECK(fgd.status().message().find("fgd needs a target workload") != std::string::npos);
  CHECK_FALSE(make_policy("fgd-cpu").is_ok());
  CHECK_FALSE(make_policy("fgd-lp").is_ok());
  for (const auto& name : study_policy_names()) CHECK(policy(std::string(name))->name() == name);
}

TEST_CASE("density on the real trace: our reproduction of the study lands on its published numbers") {
  auto dir = require_shared_data();
  if (!dir) return;
  auto trace = density::load_trace(*dir / "alibaba-gpu-v2023" / "openb_node_list_gpu_node.csv",
                                   *dir / "alibaba-gpu-v2023" / "openb_pod_list_default.csv");
  REQUIRE_MESSAGE(trace.is_ok(), trace.status().message());
  CHECK(trace->gpus == 6212);
  // Published at 130 %, seed 42 (fgd-published/allo.csv): BestFit 93.13, FGD 95.29.
  for (auto [name, published] : {std::pair{"study-best-fit", 93.13}, std::pair{"fgd", 95.29}}) {
    CAPTURE(name);
    auto run = density::run(*trace, name, 42, 1.3);
    REQUIRE_MESSAGE(run.is_ok(), run.status().message());
    CHECK(run->placed + run->failed == run->arrivals);
    CHECK(run->arrivals > 10'000);
    CHECK(std::abs(run->allocation[130] - published) < 1.0);
    for (int x = 1; x < density::kCurvePoints; ++x) {  // pods never leave: allocation never falls
      CHECK(run->allocation[static_cast<std::size_t>(x)] >= run->allocation[static_cast<std::size_t>(x - 1)] - 0.01);
      CHECK(run->allocation[static_cast<std::size_t>(x)] <= x + 0.51);  // never more than arrived
    }
    auto again = density::run(*trace, name, 42, 1.3);
    REQUIRE(again.is_ok());
    CHECK(again->allocation == run->allocation);  // same input, same placements
  }
  // Ours ahead of FGD on the same arrivals (seed 42; docs/density.md has every trace and seed).
  auto fgd = density::run(*trace, "fgd", 42, 1.3);
  auto ours = density::run(*trace, "fgd-cpu", 42, 1.3);
  auto best = density::run(*trace, "fgd-lp", 42, 1.3);
  REQUIRE(fgd.is_ok());
  REQUIRE(ours.is_ok());
  REQUIRE(best.is_ok());
  CHECK(ours->allocation[130] > fgd->allocation[130] + 0.2);
  CHECK(best->allocation[130] > ours->allocation[130] + 0.2);
  // The LP ceiling bounds what any packing of the same pods could reach, and is close above ours.
  for (const auto* r : {&*fgd, &*ours, &*best}) {
    CHECK(r->allocation_ceiling >= r->final_allocation);
    CHECK(r->allocation_ceiling < r->final_allocation + 1.5);
  }
  auto compared = density::compare_published(*dir / "fgd-published" / "allo.csv", trace->workload, 1.3, {*fgd, *ours});
  REQUIRE_MESSAGE(compared.is_ok(), compared.status().message());
  CHECK(compared->find("| fgd | 06-FGD | ") != std::string::npos);
  CHECK(compared->find("| fgd-cpu | — |") != std::string::npos);
  auto other_tune = density::compare_published(*dir / "fgd-published" / "allo.csv", trace->workload, 1.2, {*fgd});
  REQUIRE(other_tune.is_ok());
  CHECK(other_tune->find("no published rows for workload openb_pod_list_default at --tune 1.2") != std::string::npos);
}

}  // namespace
}  // namespace fracpack::test
