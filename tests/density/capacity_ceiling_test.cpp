// The allocation ceiling with CPU (capacity_ceiling.hpp): hand-computed LPs, and never below the
// best placement found by exhaustive search on random small clusters.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>

#include "fracpack/sim/capacity_ceiling.hpp"
#include "support/bin_packing.hpp"

namespace fracpack::test {
namespace {

using density::capacity_ceiling;

NodeSpec node(const std::string& name, int gpus, std::int64_t cores, std::int64_t memory_gib = 256,
              const std::string& model = "V100M16") {
  trace::TraceNode n;
  n.name = name;
  n.cpu = MilliCpu(cores * 1000);
  n.memory = MiB(memory_gib * 1024);
  n.gpus = gpus;
  n.model = model;
  return trace::to_node_spec(n);
}

trace::TracePod pod(int gpus, std::int64_t milli, std::int64_t cores, std::int64_t memory_gib = 1) {
  trace::TracePod p;
  p.name = "p";
  p.cpu = MilliCpu(cores * 1000);
  p.memory = MiB(memory_gib * 1024);
  p.num_gpu = gpus;
  p.gpu_milli = MilliGpu(gpus == 0 ? 0 : milli);
  return p;
}

std::vector<const trace::TracePod*> pointers(const std::vector<trace::TracePod>& pods) {
  std::vector<const trace::TracePod*> out;
  for (const auto& p : pods) out.push_back(&p);
  return out;
}

double ceiling_pct(const std::vector<NodeSpec>& nodes, const std::vector<trace::TracePod>& placed,
                   const std::vector<trace::TracePod>& failed) {
  return capacity_ceiling(nodes, pointers(placed), pointers(failed)).allocation_pct;
}

TEST_CASE("CPU binds: 1-GPU pods of 5 cores on a node of 4 GPUs and 10 cores allocate half") {
  const std::vector<trace::TracePod> two(2, pod(1, 1000, 5));
  CHECK(ceiling_pct({node("n", 4, 10)}, two, two) == doctest::Approx(50.0));
  CHECK(ceiling_pct({node("n", 4, 20)}, two, two) == doctest::Approx(100.0));
  const auto c = capacity_ceiling({node("n", 4, 10)}, pointers(two), pointers(two));
  CHECK(c.gpus == doctest::Approx(2.0));
  CHECK(c.cpu_used_pct == doctest::Approx(100.0));
}

TEST_CASE("a CPU-only pod placed keeps its CPU: the GPU pods that failed cannot have it") {
  const std::vector<trace::TracePod> gpu_pods(4, pod(1, 1000, 4));
  CHECK(ceiling_pct({node("n", 4, 16)}, {}, gpu_pods) == doctest::Approx(100.0));
  CHECK(ceiling_pct({node("n", 4, 16)}, {pod(0, 0, 8)}, gpu_pods) == doctest::Approx(50.0));
  // On a CPU-only node beside it, the CPU-only pod takes nothing from them.
  CHECK(ceiling_pct({node("n", 4, 16), node("cpu", 0, 8)}, {pod(0, 0, 8)}, gpu_pods) == doctest::Approx(100.0));
  // A CPU-only pod that failed adds nothing and takes nothing.
  CHECK(ceiling_pct({node("n", 4, 16)}, {}, {pod(0, 0, 16), pod(1, 1000, 4)}) == doctest::Approx(25.0));
  CHECK(ceiling_pct({node("n", 4, 16)}, {}, {pod(1, 500, 4)}) == 0.0);  // nor does a share that failed
}

TEST_CASE("memory binds as CPU does") {
  const std::vector<trace::TracePod> pods(4, pod(1, 1000, 1, 100));
  CHECK(ceiling_pct({node("n", 4, 64, 200)}, {}, pods) == doctest::Approx(50.0));
}

TEST_CASE("shares: a GPU holding a 600-milli share takes no other 600 and no whole-GPU pod") {
  // Two GPUs; a 600 placed, two more 600s and a whole GPU failed: the whole GPU is added (failed
  // shares are not: the ceiling refines the share-only one, which keeps the placed shares).
  const std::vector<trace::TracePod> failed{pod(1, 600, 1), pod(1, 600, 1), pod(1, 1000, 1)};
  CHECK(ceiling_pct({node("n", 2, 64)}, {pod(1, 600, 1)}, failed) == doctest::Approx(80.0));
  // Placed 600s must stay placed: two of them fill both GPUs, the whole GPU cannot join.
  CHECK(ceiling_pct({node("n", 2, 64)}, {pod(1, 600, 1), pod(1, 600, 1)}, {pod(1, 1000, 1)}) == doctest::Approx(60.0));
  // Two 500s share one GPU: both GPUs full.
  CHECK(ceiling_pct({node("n", 2, 64)}, {pod(1, 500, 1), pod(1, 500, 1)}, {pod(1, 1000, 1)}) == doctest::Approx(100.0));
}

TEST_CASE("pods only go where they fit an empty node: GPU model, GPU count, CPU") {
  trace::TracePod p100_only = pod(1, 1000, 1);
  p100_only.gpu_spec = {"P100"};
  CHECK(ceiling_pct({node("v", 2, 64)}, {}, {p100_only, p100_only}) == doctest::Approx(0.0));
  CHECK(ceiling_pct({node("v", 2, 64), node("p", 2, 64, 256, "P100")}, {}, {p100_only, p100_only}) == doctest::Approx(50.0));
  // An 8-GPU pod on 4-GPU nodes, however many: nothing.
  CHECK(ceiling_pct({node("a", 4, 64), node("b", 4, 64)}, {}, {pod(8, 1000, 1)}) == doctest::Approx(0.0));
  // A pod of 40 cores fits only the 40-core node, not two 32-core nodes together.
  const std::vector<trace::TracePod> big(2, pod(1, 1000, 40));
  CHECK(ceiling_pct({node("a", 1, 32), node("b", 1, 32), node("c", 2, 40)}, {}, big) == doctest::Approx(25.0));
}

TEST_CASE("nothing to place, or no GPU: 0 %") {
  CHECK(ceiling_pct({node("n", 2, 64)}, {}, {}) == 0.0);
  CHECK(ceiling_pct({node("n", 0, 64)}, {}, {pod(1, 1000, 1)}) == 0.0);
}

/// Whether the pods `where` puts on node `n` fit it: CPU, memory, and the whole GPUs plus the
/// fewest GPUs the shares pack onto.
bool node_holds(const NodeSpec& node, int n, const std::vector<trace::TracePod>& pods, const std::vector<int>& where) {
  std::int64_t cpu = 0;
  std::int64_t memory = 0;
  int whole = 0;
  std::vector<std::int64_t> shares;
  for (std::size_t p = 0; p < pods.size(); ++p) {
    if (where[p] != n) continue;
    cpu += pods[p].cpu.count();
    memory += pods[p].memory.count();
    if (pods[p].num_gpu == 0) continue;
    if (pods[p].gpu_milli.count() < 1000) {
      shares.push_back(pods[p].gpu_milli.count());
    } else {
      whole += pods[p].num_gpu;
    }
  }
  if (cpu > node.cpu.count() || to_bytes(MiB(memory)) > node.memory) return false;
  return whole + fewest_bins(shares) <= static_cast<int>(node.gpus.size());
}

/// The most GPU a real placement of every one of the first `placed` pods and any of the rest
/// allocates (exhaustive); -1 when the first `placed` cannot all be placed.
double best_placement(const std::vector<NodeSpec>& nodes, const std::vector<trace::TracePod>& pods, std::size_t placed) {
  std::vector<int> where(pods.size(), -1);  // node index or -1
  double best = -1;
  std::function<void(std::size_t)> search = [&](std::size_t i) {
    if (i == pods.size()) {
      for (std::size_t n = 0; n < nodes.size(); ++n) {
        if (!node_holds(nodes[n], static_cast<int>(n), pods, where)) return;
      }
      double allocated = 0;
      for (std::size_t p = 0; p < pods.size(); ++p) {
        if (where[p] >= 0) allocated += static_cast<double>(pods[p].gpu_total().count()) / 1000.0;
      }
      best = std::max(best, allocated);
      return;
    }
    for (int n = i < placed ? 0 : -1; n < static_cast<int>(nodes.size()); ++n) {
      where[i] = n;
      search(i + 1);
    }
  };
  search(0);
  return best;
}

TEST_CASE("never below the best real placement, never above capacity, on random small clusters") {
  std::mt19937_64 rng(7);
  const std::vector<std::int64_t> milli{250, 400, 600, 1000};
  int compared = 0;
  for (int round = 0; round < 200; ++round) {
    CAPTURE(round);
    std::vector<NodeSpec> nodes;
    double gpus = 0;
    for (int n = 0; n < 1 + static_cast<int>(rng() % 2); ++n) {
      nodes.push_back(node("n" + std::to_string(n), 1 + static_cast<int>(rng() % 3), 4 + static_cast<std::int64_t>(rng() % 8),
                           4 + static_cast<std::int64_t>(rng() % 8)));
      gpus += static_cast<double>(nodes.back().gpus.size());
    }
    // Placed: any kind (0: CPU only, 1: two whole GPUs, else one GPU or a share); failed: whole GPUs.
    std::vector<trace::TracePod> pods;
    const std::size_t placed = rng() % 4;
    for (std::size_t p = 0; p < placed + 1 + rng() % 3; ++p) {
      const auto kind = p < placed ? rng() % 5 : 1 + rng() % 2;
      const int count = kind == 0 ? 0 : kind == 1 ? 2 : 1;
      const std::int64_t m = count == 1 && p < placed ? milli[rng() % milli.size()] : 1000;
      pods.push_back(pod(count, m, 1 + static_cast<std::int64_t>(rng() % 5), 1 + static_cast<std::int64_t>(rng() % 4)));
    }
    const double exact = best_placement(nodes, pods, placed);
    if (exact < 0) continue;  // those placed cannot all be: no run would have placed them
    ++compared;
    const std::vector<trace::TracePod> first(pods.begin(), pods.begin() + static_cast<std::ptrdiff_t>(placed));
    const std::vector<trace::TracePod> rest(pods.begin() + static_cast<std::ptrdiff_t>(placed), pods.end());
    const auto c = capacity_ceiling(nodes, pointers(first), pointers(rest));
    CHECK(c.gpus >= exact - 1e-6);
    CHECK(c.gpus <= gpus + 1e-9);
    CHECK(c.allocation_pct == doctest::Approx(100.0 * c.gpus / gpus));
  }
  CHECK(compared > 100);
}

}  // namespace
}  // namespace fracpack::test
