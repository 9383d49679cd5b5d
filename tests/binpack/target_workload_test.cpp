// FGD's remembered fragmentation (src/binpack/target_workload.hpp) is fragmentation() of the node
// as it is: after a bind, on a copy of the state, on a new state whose nodes share one stamp, and
// for another workload on the same node; and a typical pod's GPU models match by hash as by name.
#include <doctest/doctest.h>

#include <random>

#include "binpack/target_workload.hpp"
#include "support/builders.hpp"

namespace fracpack::test {
namespace {

std::shared_ptr<const std::vector<TypicalPod>> workload(std::int64_t share) {
  auto w = std::make_shared<std::vector<TypicalPod>>();
  w->push_back(TypicalPod{MilliCpu(1000), MilliGpu(share), 1, {}, 0.6, {}});
  w->push_back(TypicalPod{MilliCpu(1000), MilliGpu(1000), 2, {}, 0.4, {}});
  return w;
}

/// Each node's remembered fragmentation equals fragmentation() worked out now.
void check_every_node(const ClusterState& s, const binpack::TargetWorkload& w) {
  for (std::size_t n = 0; n < s.node_count(); ++n) {
    CAPTURE(n);
    const NodeFree free = node_free(s, n);
    CHECK(w.fragmentation_of(s, n, free) == fragmentation(free, w.pods()));
  }
}

TEST_CASE("remembered fragmentation: the node as it is, for the workload asked about") {
  // Nodes of 1, 2 and 4 GPUs: a new state gives them one stamp, and their fragmentation differs.
  ClusterState s = cluster({nvf("a", 1, 80000), nvf("b", 2, 80000), nvf("c", 4, 80000)});
  const binpack::TargetWorkload thirds(workload(300));
  const binpack::TargetWorkload halves(workload(500));
  check_every_node(s, thirds);
  check_every_node(s, halves);  // same nodes, same stamps, another workload
  REQUIRE(place(s, PodBuilder("p").fraction("0.6").spec()).placement.has_value());
  check_every_node(s, thirds);  // the node it went to has a new stamp
  check_every_node(s, halves);
  ClusterState copy = s;
  check_every_node(copy, thirds);
  REQUIRE(place(copy, PodBuilder("q").whole(1).spec()).placement.has_value());
  check_every_node(copy, thirds);
  check_every_node(s, thirds);  // the original did not change
  {
    const binpack::TargetWorkload gone(workload(700));
    check_every_node(s, gone);
  }
  const binpack::TargetWorkload after(workload(200));  // may sit where `gone` did: a new identity
  check_every_node(s, after);
}

TEST_CASE("fragmentation by size equals fragmentation() pod by pod, on random nodes and workloads") {
  std::mt19937_64 rng(11);
  const std::vector<std::string> models{"A10", "T4", "V100"};
  for (int round = 0; round < 200; ++round) {
    std::vector<PodRequest> pods;
    const int count = 1 + static_cast<int>(rng() % 40);
    for (int i = 0; i < count; ++i) {
      PodBuilder b(fmt::format("p{}", i));
      b.request("cpu", fmt::format("{}m", 500 * (1 + rng() % 8)));
      switch (rng() % 4) {
        case 0: break;  // CPU only
        case 1: b.whole(static_cast<int>(1 + rng() % 4)); break;
        default: b.fraction(fmt::format("0.{}", 1 + rng() % 9)); break;
      }
      PodRequest p = b.spec();
      if (rng() % 3 == 0) {
        p.node_affinity.push_back(NodeSelectorTerm{{NodeSelectorRequirement{"nvidia.com/gpu.product", NodeSelectorRequirement::Op::kIn,
                                                                           {models[rng() % models.size()]}}}});
      }
      pods.push_back(std::move(p));
    }
    const binpack::TargetWorkload w(std::make_shared<const std::vector<TypicalPod>>(typical_pods(pods, 1.0)));
    for (int node = 0; node < 20; ++node) {
      NodeFree free;
      free.cpu = static_cast<std::int64_t>(rng() % 9000);
      free.gpu_milli.resize(rng() % (node == 0 ? 20 : 9));  // past 16 GPUs: the pod-by-pod path
      for (auto& g : free.gpu_milli) g = rng() % 3 == 0 ? 1000 : static_cast<std::int64_t>(rng() % 1001);
      const std::string& model = models[rng() % models.size()];
      if (rng() % 4 != 0) {
        free.model = &model;
        free.model_hash = std::hash<std::string>{}(model);
      }
      CHECK(w.fragmentation(free) == fragmentation(free, w.pods()));
    }
  }
}

TEST_CASE("typical pods match a node's GPU model by hash as by name") {
  std::vector<PodRequest> pods;
  for (const char* model : {"A10", "T4", "A10"}) {
    PodRequest p = PodBuilder(fmt::format("p{}", pods.size())).fraction("0.5").spec();
    p.node_affinity.push_back(NodeSelectorTerm{{NodeSelectorRequirement{"nvidia.com/gpu.product", NodeSelectorRequirement::Op::kIn, {model}}}});
    pods.push_back(std::move(p));
  }
  const auto typical = typical_pods(pods, 1.0);
  REQUIRE(typical.size() == 2);
  ClusterState s = cluster({nvf("a10", 2, 24000).label("nvidia.com/gpu.product", "A10"),
                            nvf("t4", 2, 16000).label("nvidia.com/gpu.product", "T4"), nvf("none", 2, 16000)});
  for (std::size_t n = 0; n < s.node_count(); ++n) {
    const NodeFree free = node_free(s, n);
    for (TypicalPod t : typical) {
      REQUIRE(t.model_hashes.size() == t.models.size());
      const double hashed = fragment_for(free, t);
      t.model_hashes.clear();  // names compared instead
      CHECK(fragment_for(free, t) == hashed);
    }
  }
  // A node of the pod's model: its idle GPUs are no fragment; any other: all of them are.
  const auto& a10 = typical.front().models.front() == "A10" ? typical.front() : typical.back();
  CHECK(fragment_for(node_free(s, 0), a10) == 0);
  CHECK(fragment_for(node_free(s, 1), a10) == 2000);
  CHECK(fragment_for(node_free(s, 2), a10) == 2000);
}

}  // namespace
}  // namespace fracpack::test
