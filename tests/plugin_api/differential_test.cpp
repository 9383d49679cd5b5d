// place and serve are one scheduling state: on random clusters, queues and pods, driven in the
// same order, `fracpack place` and the extender core give the same placements (node and GPUs),
// the same refusals (queue admission, with the same text), the same queue figures (allocated,
// fair share) and the same reclaim and preemption victims.
#include <random>

#include <doctest/doctest.h>

#include "fracpack/server/extender.hpp"
#include "fracpack/k8s/object_stream.hpp"
#include "fracpack/sim/place_job.hpp"
#include "support/builders.hpp"

namespace fracpack::test {
namespace {

struct World {
  std::mt19937 rng;
  std::vector<json> cluster;  ///< Nodes and Queues
  std::vector<std::string> nodes;
  std::vector<std::string> leaves;

  explicit World(std::uint32_t seed) : rng(seed) {
    const int node_count = pick(2, 5);
    for (int n = 0; n < node_count; ++n) {
      const std::string name = fmt::format("node-{}", n);
      nodes.push_back(name);
      cluster.push_back(nvf(name, pick(1, 4), pick(0, 1) == 0 ? 40000 : 80000).obj);
    }
    cluster.push_back(queue_object("root", "", -1));
    for (const char* leaf : {"qa", "qb", "qc"}) {
      leaves.emplace_back(leaf);
      const double quota = pick(0, 4);
      const double limit = pick(0, 2) == 0 ? -1 : quota + pick(0, 4);
      cluster.push_back(queue_object(leaf, "root", quota, limit, pick(1, 3)));
    }
  }
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

  PodBuilder pod(int i) {
    PodBuilder p(fmt::format("p{:03}", i));
    p.uid(fmt::format("uid-{}", i));
    p.label("kai.scheduler/queue", leaves[static_cast<std::size_t>(pick(0, 2))]);
    p.priority_class(pick(0, 2) == 0 ? "inference" : "train");
    if (pick(0, 1) == 0) {
      p.whole(pick(1, 2));
    } else {
      p.gpu_memory(fmt::format("{}Gi", 4 * pick(1, 9)));
    }
    return p;
  }
};

const NotPlaced* refused_in(const PlaceReport& r, const std::string& key) {
  for (const auto& u : r.unschedulable) {
    if (u.pod == key) return &u;
  }
  return nullptr;
}
const Placement* placed_in(const PlaceReport& r, const std::string& key) {
  for (const auto& p : r.placements) {
    if (p.pod == key) return &p;
  }
  return nullptr;
}

TEST_CASE("place and serve give the same placements, refusals, queue figures and victims") {
  int placed = 0;
  int refused = 0;
  int with_victims = 0;
  for (std::uint32_t seed = 1; seed <= 25; ++seed) {
    CAPTURE(seed);
    World world(seed * 7717u);
    ExtenderOptions options;
    auto opened = Extender::open(options);
    REQUIRE(opened.is_ok());
    Extender& serve = **opened;
    REQUIRE(serve.apply(world.cluster, nullptr).is_ok());
    std::vector<json> bound;    // as place reads them: bound to where serve bound them
    std::vector<json> waiting;  // refused so far: still pending, in both
    std::map<std::string, std::string> uid_of;
    for (int i = 0; i < 30; ++i) {
      CAPTURE(i);
      PodBuilder p = world.pod(i);
      const std::string key = "default/" + p.obj["metadata"]["name"].get<std::string>();
      uid_of[key] = p.obj["metadata"]["uid"];
      std::vector<json> input = world.cluster;
      input.insert(input.end(), bound.begin(), bound.end());
      input.insert(input.end(), waiting.begin(), waiting.end());
      input.push_back(p.obj);
      PlaceOptions place_options;
      auto report = run_place(k8s::with_origins(input, "differential"), place_options);
      REQUIRE_MESSAGE(report.is_ok(), report.status().message());

      auto filtered = serve.filter_all(p.obj, 1);
      REQUIRE(filtered.is_ok());
      if (const Placement* where = placed_in(*report, key)) {
        REQUIRE(filtered->passed.size() == 1);
        CHECK(filtered->passed[0] == where->node);
        auto scores = serve.prioritize(p.obj, world.nodes);
        REQUIRE(scores.is_ok());
        for (const auto& s : *scores) {
          if (s.host == where->node) CHECK(s.score == 10);  // place's choice is a best-scored node
        }
        auto b = serve.bind("default", p.obj["metadata"]["name"], uid_of[key], where->node);
        REQUIRE_MESSAGE(b.is_ok(), b.status().message());
        CHECK(b->choice.gpus == where->choice.gpus);
        PodBuilder held = p;
        held.annotation("nvidia.com/container.main.gpus.devices", fmt::format("{}", fmt::join(where->choice.gpus, ","))).bound_to(where->node);
        bound.push_back(held.obj);
        ++placed;
      } else {
        const NotPlaced* np = refused_in(*report, key);
        REQUIRE(np != nullptr);
        CHECK(filtered->passed.empty());
        ++refused;
        if (np->status == "OverLimit" || np->status == "NonPreemptibleOverQuota") {
          REQUIRE_FALSE(filtered->failed.empty());
          CHECK(filtered->failed.front().second.str() == np->reason);
        }
        if (np->preemption) {  // serve's Preempt, offered every bound pod, names the same victims there
          std::map<std::string, std::vector<std::string>> offered;
          for (const auto& node : world.nodes) {
            for (const auto& [pod_key, uid] : uid_of) offered[node].push_back(uid);
          }
          auto victims = serve.preempt(p.obj, offered);
          REQUIRE(victims.is_ok());
          REQUIRE(victims->count(np->preemption->node) == 1);
          std::vector<std::string> want;
          for (const auto& v : np->preemption->victims) want.push_back(uid_of[v]);
          std::vector<std::string> got = victims->at(np->preemption->node);
          std::sort(want.begin(), want.end());
          std::sort(got.begin(), got.end());
          CHECK(got == want);
          ++with_victims;
        }
        waiting.push_back(p.obj);
      }
      // The same queue figures after the step.
      const auto snapshot = serve.snapshot();
      REQUIRE(snapshot.queues.size() == report->queues.size());
      for (std::size_t q = 0; q < snapshot.queues.size(); ++q) {
        CAPTURE(snapshot.queues[q].name);
        CHECK(snapshot.queues[q].name == report->queues[q].name);
        CHECK(snapshot.queues[q].gpu_allocated == doctest::Approx(static_cast<double>(report->queues[q].allocated[queues::Resource::kGpu]) / 1000.0));
        CHECK(snapshot.queues[q].gpu_fair_share == doctest::Approx(static_cast<double>(report->queues[q].fair_share[queues::Resource::kGpu]) / 1000.0));
      }
    }
  }
  MESSAGE(placed, " placed, ", refused, " refused, ", with_victims, " with victims compared");
  CHECK(placed > 100);
  CHECK(refused > 50);
  CHECK(with_victims > 10);
}

}  // namespace
}  // namespace fracpack::test
