// place and serve are one scheduling state: on random clusters, queues and pods, driven in the
// same order, `fracpack place` and the extender core give the same placements (node and GPUs),
// the same refusals (queue admission, with the same text), the same queue figures (allocated,
// fair share) and the same reclaim and preemption victims. Where place's cycle reclaims or
// preempts, the world goes on as kube-scheduler's preemption does: serve's Preempt names the
// victims, they are deleted, and the pod binds where place put it, in both.
#include <algorithm>
#include <chrono>
#include <random>

#include <doctest/doctest.h>

#include "fracpack/server/extender.hpp"
#include "fracpack/k8s/object_stream.hpp"
#include "fracpack/k8s/time.hpp"
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

/// `seconds` as status.startTime.
std::string clock_text(std::int64_t seconds) {
  return k8s::format_micro_time(std::chrono::system_clock::time_point(std::chrono::seconds(seconds)));
}

/// Binds `pod` in serve on `node` (its Filter passes that node), where place put it on `gpus`, and
/// records it bound.
void bind_as_placed(Extender& serve, const json& pod, const std::string& node, const std::vector<int>& gpus, const std::string& uid,
                    const std::string& started, std::vector<json>& bound) {
  const std::string name = pod["metadata"]["name"];
  auto filtered = serve.filter_all(pod, 1);  // as kube-scheduler's next cycle asks for it
  REQUIRE(filtered.is_ok());
  CAPTURE(name);
  std::string refusals;
  for (const auto& [n, why] : filtered->failed) refusals += n + ": " + why.str() + "; ";
  CAPTURE(refusals);
  REQUIRE(filtered->passed.size() == 1);
  CHECK(filtered->passed[0] == node);
  auto b = serve.bind("default", name, uid, node);
  REQUIRE_MESSAGE(b.is_ok(), b.status().message());
  CHECK(b->choice.gpus == gpus);
  PodBuilder held(name);
  held.obj = pod;
  held.annotation("nvidia.com/container.main.gpus.devices", fmt::format("{}", fmt::join(gpus, ","))).bound_to(node);
  held.obj["status"]["startTime"] = started;
  bound.push_back(held.obj);
}

/// Each pod place's cycle placed on victims: serve's Preempt, offered every bound pod, names the
/// same victims on the same node (those place evicts and those it moves elsewhere); they are
/// deleted in both (serve releases them, place's next input leaves them out), the pod binds there
/// on the same GPUs, and the moved ones bind where place moved them. Returns how many.
/// `started`: the bind's start, as serve's clock reads it.
int evict_and_bind(const PlaceReport& report, Extender& serve, const World& world, std::map<std::string, std::string>& uid_of,
                   std::vector<json>& bound, std::vector<json>& waiting, const std::string& started, int& moves) {
  int compared = 0;
  std::vector<const NotPlaced*> decided;  // in the order the cycle decided them
  for (const NotPlaced& np : report.unschedulable) {
    if (np.preemption) decided.push_back(&np);
  }
  std::sort(decided.begin(), decided.end(), [](const NotPlaced* a, const NotPlaced* b) { return a->preemption->step < b->preemption->step; });
  for (const NotPlaced* each : decided) {
    const NotPlaced& np = *each;
    CAPTURE(np.pod);
    auto w = std::find_if(waiting.begin(), waiting.end(), [&](const json& o) { return "default/" + o["metadata"]["name"].get<std::string>() == np.pod; });
    REQUIRE(w != waiting.end());
    std::map<std::string, std::vector<std::string>> offered;
    for (const auto& node : world.nodes) {
      for (const json& b : bound) offered[node].push_back(b["metadata"]["uid"]);
    }
    auto victims = serve.preempt(*w, offered);
    REQUIRE(victims.is_ok());
    REQUIRE(victims->count(np.preemption->node) == 1);
    std::vector<std::string> leaving = np.preemption->victims;  // evicted, and moved elsewhere
    for (const Placement& m : np.preemption->moved) leaving.push_back(m.pod);
    std::vector<std::string> want;
    for (const auto& v : leaving) want.push_back(uid_of[v]);
    std::vector<std::string> got = victims->at(np.preemption->node);
    std::sort(want.begin(), want.end());
    std::sort(got.begin(), got.end());
    CHECK(got == want);
    std::map<std::string, json> moved;  // deleted, and made again by their controllers
    for (const std::string& v : leaving) {
      REQUIRE(serve.release(v).is_ok());
      auto it = std::find_if(bound.begin(), bound.end(), [&](const json& o) { return "default/" + o["metadata"]["name"].get<std::string>() == v; });
      REQUIRE(it != bound.end());
      moved[v] = *it;
      moved[v]["spec"].erase("nodeName");
      moved[v]["metadata"]["annotations"].erase("nvidia.com/container.main.gpus.devices");
      bound.erase(it);
    }
    bind_as_placed(serve, *w, np.preemption->node, np.preemption->gpus, uid_of[np.pod], started, bound);
    waiting.erase(w);
    for (const Placement& m : np.preemption->moved) {
      bind_as_placed(serve, moved[m.pod], m.node, m.choice.gpus, uid_of[m.pod], started, bound);
      ++moves;
    }
    ++compared;
  }
  return compared;
}

TEST_CASE("place and serve give the same placements, refusals, queue figures and victims") {
  int placed = 0;
  int refused = 0;
  int with_victims = 0;
  int moved = 0;  // victims that ran on elsewhere
  for (std::uint32_t seed = 1; seed <= 25; ++seed) {
    CAPTURE(seed);
    World world(seed * 7717u);
    // One clock for both: serve records a bind's start by it, place reads it from status.startTime
    // (the victim order takes the youngest first).
    std::int64_t now = 1'700'000'000;
    ExtenderOptions options;
    options.clock = [&now] { return now; };
    auto opened = Extender::open(options);
    REQUIRE(opened.is_ok());
    Extender& serve = **opened;
    REQUIRE(serve.apply(world.cluster, nullptr).is_ok());
    std::vector<json> bound;    // as place reads them: bound to where serve bound them
    std::vector<json> waiting;  // refused so far: still pending, in both
    std::map<std::string, std::string> uid_of;
    for (int i = 0; i < 30; ++i) {
      CAPTURE(i);
      ++now;
      PodBuilder p = world.pod(i);
      const std::string key = "default/" + p.obj["metadata"]["name"].get<std::string>();
      uid_of[key] = p.obj["metadata"]["uid"];
      std::vector<json> input = world.cluster;
      input.insert(input.end(), bound.begin(), bound.end());
      input.insert(input.end(), waiting.begin(), waiting.end());
      input.push_back(p.obj);
      PlaceOptions place_options;
      // Through kube-scheduler, serve moves no running pod: consolidation is place's alone.
      place_options.actions = {cycle::ActionKind::kAllocate, cycle::ActionKind::kReclaim, cycle::ActionKind::kPreempt};
      auto report = run_place(k8s::with_origins(input, "differential"), place_options);
      REQUIRE_MESSAGE(report.is_ok(), report.status().message());

      waiting.push_back(p.obj);
      // Every pod place placed (the new one, or one waiting that now fits), in its order: serve's
      // Filter passes it on the same node, scores that node best, and binds it on the same GPUs.
      for (const Placement& where : report->placements) {
        CAPTURE(where.pod);
        auto w = std::find_if(waiting.begin(), waiting.end(), [&](const json& o) { return "default/" + o["metadata"]["name"].get<std::string>() == where.pod; });
        REQUIRE(w != waiting.end());
        auto filtered = serve.filter_all(*w, 1);
        REQUIRE(filtered.is_ok());
        REQUIRE(filtered->passed.size() == 1);
        CHECK(filtered->passed[0] == where.node);
        auto scores = serve.prioritize(*w, world.nodes);
        REQUIRE(scores.is_ok());
        for (const auto& s : *scores) {
          if (s.host == where.node) CHECK(s.score == 10);  // place's choice is a best-scored node
        }
        bind_as_placed(serve, *w, where.node, where.choice.gpus, uid_of[where.pod], clock_text(now), bound);
        waiting.erase(w);
        ++placed;
      }
      if (placed_in(*report, key) == nullptr) {
        const NotPlaced* np = refused_in(*report, key);
        REQUIRE(np != nullptr);
        auto filtered = serve.filter_all(p.obj, 1);
        REQUIRE(filtered.is_ok());
        CHECK(filtered->passed.empty());
        ++refused;
        if (np->status == "OverLimit" || np->status == "NonPreemptibleOverQuota") {
          REQUIRE_FALSE(filtered->failed.empty());
          CHECK(filtered->failed.front().second.str() == np->reason);
        }
      }
      with_victims += evict_and_bind(*report, serve, world, uid_of, bound, waiting, clock_text(now), moved);
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
  MESSAGE(placed, " placed, ", refused, " refused, ", with_victims, " with victims compared, ", moved, " victims moved");
  CHECK(placed > 100);
  CHECK(refused > 50);
  CHECK(with_victims > 10);
  CHECK(moved > 0);
}

}  // namespace
}  // namespace fracpack::test
