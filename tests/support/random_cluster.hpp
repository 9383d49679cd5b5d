// Seeded random clusters and pods for property tests and contract tests.
#pragma once

#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "fracpack/binpack/cluster_state.hpp"
#include "fracpack/core/request.hpp"

namespace fracpack::test {

class RandomWorld {
 public:
  explicit RandomWorld(std::uint32_t seed) : rng_(seed) {}

  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }

  /// A node of a random kind: NvFractions (sometimes not ready, sometimes mixed sizes), exclusive,
  /// replica-shared, CPU-only, or without a memory label.
  NodeSpec node(const std::string& name) {
    static const std::int64_t kSizes[] = {15100, 16200, 20000, 22700, 32500, 46000, 81900, 143700};
    NodeSpec n;
    n.name = name;
    n.cpu = MilliCpu(1000LL * uniform(8, 128));
    n.memory = Bytes(static_cast<std::int64_t>(uniform(32, 1024)) << 30);
    n.pods = uniform(4, 40);
    n.labels["zone"] = chance(0.5) ? "a" : "b";
    const int kind = uniform(0, 9);
    if (kind == 0) return n;  // CPU-only
    const int gpus = uniform(1, 8);
    const std::int64_t size = kSizes[uniform(0, 7)];
    for (int g = 0; g < gpus; ++g) {
      std::int64_t mib = kind == 1 && chance(0.5) ? kSizes[uniform(0, 7)] : size;  // mixed sizes
      n.gpus.push_back({g, MiB(mib)});
    }
    n.gpu_memory_known = kind != 2;
    if (kind == 3) {
      n.sharing = SharingKind::kReplicas;
      n.replica.replicas = uniform(2, 4);
      n.replica.strategy = chance(0.5) ? ComputeMode::kSmSharing : ComputeMode::kTimeSlicing;
    } else if (kind >= 4) {
      n.sharing = SharingKind::kNvFractions;
      n.fractions_ready = kind != 4;
    }
    if (chance(0.3)) n.extended["rdma/ib"] = uniform(1, 8);
    if (chance(0.05)) n.ready = false;
    return n;
  }

  std::vector<NodeSpec> nodes(int count) {
    std::vector<NodeSpec> out;
    for (int i = 0; i < count; ++i) out.push_back(node("node-" + std::to_string(i)));
    return out;
  }

  /// A ledger over nodes(count). The nodes are valid by construction: a refusal is the test
  /// support's bug, thrown (doctest reports it as the test's failure).
  ClusterState cluster(int count, const PlacementConfig& config = {}) {
    auto created = ClusterState::create(nodes(count), config);
    if (!created.is_ok()) throw std::logic_error(created.status().message());
    return std::move(*created);
  }

  /// A valid pod of a random shape.
  PodRequest pod(const std::string& name) {
    PodRequest p;
    p.name = name;
    p.cpu = MilliCpu(100LL * uniform(1, 80));
    p.memory = Bytes(static_cast<std::int64_t>(uniform(1, 64)) << 30);
    const int shape = uniform(0, 9);
    if (shape <= 4) {
      GpuFraction f;
      if (chance(0.5)) {
        f.memory = MiB(uniform(1, 400) * 100);
      } else {
        f.portion = MilliGpu(uniform(1, 20) * 50);
      }
      if (chance(0.2)) f.memory_limit = MiB(f.memory ? f.memory->count() + uniform(0, 20000) : uniform(1000, 90000));
      f.mode = chance(0.4) ? ComputeMode::kSmSharing : ComputeMode::kTimeSlicing;
      f.num_devices = chance(0.2) ? uniform(2, 4) : 1;
      f.container = "main";
      p.gpu = f;
    } else if (shape <= 7) {
      p.gpu = WholeGpus{uniform(1, 8), false};
    } else if (shape == 8) {
      p.gpu = WholeGpus{uniform(1, 2), true};
    }
    if (chance(0.1)) p.rdma["rdma/ib"] = uniform(1, 2);
    if (chance(0.1)) p.node_selector["zone"] = chance(0.5) ? "a" : "b";
    return p;
  }

 private:
  std::mt19937 rng_;
};

}  // namespace fracpack::test
