// The queue replay on a scenario small enough to compute by hand: start times, pending times,
// GPU-hours per queue, departures returning GPUs to the right queue.
#include <doctest/doctest.h>

#include "fracpack/queues/decode_queue.hpp"
#include <fstream>
#include <tuple>

#include "fracpack/sim/quota/replay.hpp"
#include "fracpack/sim/quota_job.hpp"
#include "support/builders.hpp"
#include "support/quota_scenarios.hpp"
#include "support/random_cluster.hpp"
#include "support/temp_files.hpp"

namespace fracpack::test {
namespace {

std::vector<NodeSpec> one_node_two_gpus() { return one_node(2); }

TEST_CASE("replay: two queues share two GPUs; waits, GPU-hours and departures computed by hand") {
  // Queue a (quota 2) runs non-preemptible pods; b has quota 0, so nothing is reclaimed for it.
  // t=0: a1, a2 (100 s each) and a3 (50 s) arrive in a; t=10: b1 (30 s) in b.
  // 0: a1, a2 start; a3 waits (a is at its quota: non-preemptible pods may not go over it).
  // 10: b1 waits. 100: a1, a2 leave; a3 and b1 start. 130: b1 leaves. 150: a3 leaves.
  quota::TimedWorkload w;
  w.pods = {whole_gpu("a1", "a", 0, 100), whole_gpu("a2", "a", 0, 100), whole_gpu("a3", "a", 0, 50), whole_gpu("b1", "b", 10, 30)};
  for (int i = 0; i < 3; ++i) {
    w.pods[static_cast<std::size_t>(i)].pod.preemptible = false;
    w.pods[static_cast<std::size_t>(i)].pod.priority = 125;
  }
  auto r = quota::replay(one_node_two_gpus(), {gpu_queue("a", 2), gpu_queue("b", 0)}, w, quota::ReplayOptions{});
  REQUIRE_MESSAGE(r.is_ok(), r.status().message());
  REQUIRE(r->queues.size() == 2);
  const auto& a = r->queues[0];
  const auto& b = r->queues[1];
  CHECK(a.queue == "a");
  CHECK(a.started == 3);
  CHECK(a.pending_seconds == std::vector<std::int64_t>{0, 0, 100});
  CHECK(b.pending_seconds == std::vector<std::int64_t>{90});
  // Why the longest waits waited: a3 was refused by a's quota, b1 found no room.
  CHECK(a.longest_wait.pod == "default/a3");
  CHECK(a.longest_wait.seconds == 100);
  CHECK(a.longest_wait.why == "NonPreemptibleOverQuota (queue a)");
  CHECK(b.longest_wait.pod == "default/b1");
  CHECK(b.longest_wait.seconds == 90);
  CHECK(b.longest_wait.why.rfind("0/1 nodes are available: 1 Insufficient", 0) == 0);
  CHECK(a.gpu_hours == doctest::Approx((2 * 100 + 1 * 50) / 3600.0));
  CHECK(b.gpu_hours == doctest::Approx(30 / 3600.0));
  CHECK(a.over_quota_seconds == 0);
  CHECK(b.over_quota_seconds == doctest::Approx(30));  // one GPU against a quota of 0, from 100 to 130
  CHECK(a.deserved_gpu_hours == doctest::Approx(2 * 150 / 3600.0));  // quota 2 × the 150 s replayed
  CHECK(a.preemptions_suffered == 0);
  CHECK(r->start == 0);
  CHECK(r->end == 150);
  CHECK(r->events == 8);  // 4 arrivals, 4 departures
}

TEST_CASE("replay reproduces KAI's reclaim_test.go scenario 9 step by step (2 jobs of queue0 running, 2 of queue1 pending)") {
  // KAI pkg/scheduler/actions/reclaim/reclaim_test.go, "2 jobs from queue0 running on node0 - 2
  // pending jobs from queue1 - reclaim" (tests/kai_conformance/scenarios/reclaim__reclaim.json,
  // index 9): one node of 2 GPUs; queue0 and queue1 deserve 1 GPU each. KAI's reclaim leaves
  // running_job0 Running, running_job1 Releasing, pending_job0 Pipelined, pending_job1 Pending.
  // As a replay: queue0's jobs start at 0; queue1's arrive at 10, and that cycle decides as KAI.
  quota::TimedWorkload w;
  w.pods = {whole_gpu("running-job0", "queue0", 0, 1000), whole_gpu("running-job1", "queue0", 0, 1000),
            whole_gpu("pending-job0", "queue1", 10, 1000), whole_gpu("pending-job1", "queue1", 10, 1000)};
  quota::ReplayOptions options;
  options.per_pod = true;
  options.period = 10;
  auto r = quota::replay(one_node_two_gpus(), {gpu_queue("queue0", 1), gpu_queue("queue1", 1)}, w, options);
  REQUIRE_MESSAGE(r.is_ok(), r.status().message());
  const auto& pods = r->pods;
  REQUIRE(pods.size() == 4);
  CHECK(pods[0].first_start == std::optional<std::int64_t>(0));  // running_job0: Running
  CHECK(pods[0].pending_seconds == 0);                           // never evicted
  CHECK(pods[1].first_start == std::optional<std::int64_t>(0));  // running_job1: Releasing at 10 ...
  CHECK(pods[1].pending_seconds > 0);                            // ... so it waited again
  CHECK(pods[2].first_start == std::optional<std::int64_t>(10)); // pending_job0: Pipelined at 10
  REQUIRE(pods[3].first_start.has_value());
  CHECK(*pods[3].first_start > 10);                              // pending_job1: Pending at 10
  CHECK(r->queues[0].preemptions_suffered == 1);                 // one victim, of queue0
  CHECK(r->queues[1].preemptions_caused == 1);
}

TEST_CASE("replay: a pod that names a node (Pod objects of running pods) arrives, waits and leaves like any other") {
  // a1 and a2 both name node n and GPU 0, as running pods printed by kubectl would: the replay
  // places each when it arrives, not where the input says it ran.
  quota::TimedWorkload w;
  w.pods = {whole_gpu("a1", "a", 0, 100), whole_gpu("a2", "a", 10, 100)};
  for (auto& p : w.pods) p.pod.bound = Binding{"n", {0}};
  auto r = quota::replay(one_node(1), {gpu_queue("a", 1)}, w, quota::ReplayOptions{});
  REQUIRE_MESSAGE(r.is_ok(), r.status().message());
  const auto& a = r->queues[0];
  CHECK(a.started == 2);
  CHECK(a.pending_seconds == std::vector<std::int64_t>{0, 90});  // a2 waits for a1's GPU
  CHECK(a.gpu_hours == doctest::Approx(200 / 3600.0));
  CHECK(r->end == 200);
}

TEST_CASE("replay: a starved queue reclaims from a preemptible queue over its fair share; the victim starts over") {
  // a (quota 1) takes both GPUs with preemptible a1, a2 (100 s). b1 (quota 1, 30 s) arrives at 10:
  // b is under its fair share (1), a over it (2 > 1): one of a's pods is evicted, b1 starts at 10.
  // The victim waits until b1 leaves at 40 and runs its 100 s again, to 140.
  quota::TimedWorkload w;
  w.pods = {whole_gpu("a1", "a", 0, 100), whole_gpu("a2", "a", 0, 100), whole_gpu("b1", "b", 10, 30)};
  auto r = quota::replay(one_node_two_gpus(), {gpu_queue("a", 1), gpu_queue("b", 1)}, w, quota::ReplayOptions{});
  REQUIRE_MESSAGE(r.is_ok(), r.status().message());
  const auto& a = r->queues[0];
  const auto& b = r->queues[1];
  CHECK(b.pending_seconds == std::vector<std::int64_t>{0});
  CHECK(a.pending_seconds == std::vector<std::int64_t>{0, 0, 40});  // the restart counts from the original arrival
  CHECK(a.preemptions_suffered == 1);
  CHECK(b.preemptions_caused == 1);
  CHECK(a.preemptions_caused == 0);
  CHECK(a.gpu_hours == doctest::Approx((100 + 10 + 100) / 3600.0));
  CHECK(b.gpu_hours == doctest::Approx(30 / 3600.0));
  CHECK(r->end == 140);
  // The timeline after each cycle: time, a's GPUs, b's GPUs.
  std::vector<std::tuple<std::int64_t, double, double>> seen;
  for (const auto& p : r->timeline) seen.emplace_back(p.time, p.allocated[0], p.allocated[1]);
  const std::vector<std::tuple<std::int64_t, double, double>> expected{{0, 2, 0}, {10, 1, 1}, {40, 2, 0}, {100, 1, 0}, {140, 0, 0}};
  CHECK(seen == expected);
  CHECK(r->timeline[1].cluster_allocated_pct == doctest::Approx(100));
  CHECK(r->timeline[1].fragmentation_pct == 0);  // nothing idle
  CHECK(r->timeline[3].fragmentation_pct == 0);  // one idle GPU, and a whole-GPU pod can use it
  CHECK(r->timeline[1].fair_share[1] == doctest::Approx(1));
  CHECK(r->deserved == std::vector<double>{1, 1});
  CHECK(quota_warnings(one_node_two_gpus(), {gpu_queue("a", 1), gpu_queue("b", 1)}).empty());
  auto over = quota_warnings(one_node_two_gpus(), {gpu_queue("a", 2), gpu_queue("b", 1)});
  REQUIRE(over.size() == 1);
  CHECK(over[0] == "the top-level queues' GPU quotas sum to 3 GPUs, more than the cluster's 2; not every queue can get its quota at once");
  queues::QueueSpec gpu_only = gpu_queue("c", 1);  // a Queue written without cpu and memory terms
  gpu_only.resource(queues::Resource::kCpu) = queues::QueueResource{};
  gpu_only.resource(queues::Resource::kGpu).limit = 500;  // and a limit below its quota
  const auto odd = quota_warnings(one_node_two_gpus(), {gpu_only});
  REQUIRE(odd.size() == 2);
  CHECK(odd[0] == "queue c: gpu.quota 1 is above its limit 0.5; the limit caps it");
  CHECK(odd[1] == "queue c: cpu.limit is unset, which KAI reads as 0: no pod asking for cpu can run in it (limit -1 means no limit)");

  // Non-preemptible pods are never taken, even over the fair share.
  for (int i = 0; i < 2; ++i) {
    w.pods[static_cast<std::size_t>(i)].pod.preemptible = false;
    w.pods[static_cast<std::size_t>(i)].pod.priority = 125;
  }
  auto kept = quota::replay(one_node_two_gpus(), {gpu_queue("a", 2), gpu_queue("b", 1)}, w, quota::ReplayOptions{});
  REQUIRE(kept.is_ok());
  CHECK(kept->queues[0].preemptions_suffered == 0);
  CHECK(kept->queues[1].pending_seconds == std::vector<std::int64_t>{90});
}

/// A half-GPU pod of queue a arriving at 0 and running `run` seconds.
quota::TimedPod half(const std::string& name, std::int64_t run) {
  quota::TimedPod t;
  t.pod = PodBuilder(name).fraction("0.5").spec();
  t.pod.queue = "a";
  t.run_seconds = run;
  return t;
}

TEST_CASE("replay: consolidation moves a half beside the other so a whole-GPU pod starts at once") {
  // Two 20000 MiB GPUs. t=0: four halves; pack puts s1, s2 on GPU 0 and s3, s4 on GPU 1. t=10:
  // s2 and s3 leave, so each GPU holds one half. t=20: w asks for a whole GPU for 50 s.
  // Without consolidation w waits for s1 and s4 to leave at 100. With it, s1 (GPU 0, the lower
  // index of two equal costs) moves beside s4 and starts over at 20 (leaving at 120); w starts
  // at once and leaves at 70.
  quota::TimedWorkload w;
  w.pods = {half("s1", 100), half("s2", 10), half("s3", 10), half("s4", 100), whole_gpu("w", "a", 20, 50)};
  quota::ReplayOptions options;
  auto plain = quota::replay(one_node(2), {gpu_queue("a", 2)}, w, options);
  REQUIRE_MESSAGE(plain.is_ok(), plain.status().message());
  CHECK(plain->queues[0].pending_seconds == std::vector<std::int64_t>{0, 0, 0, 0, 80});
  CHECK(plain->moves == 0);
  CHECK(plain->end == 150);
  options.consolidation = true;
  auto moved = quota::replay(one_node(2), {gpu_queue("a", 2)}, w, options);
  REQUIRE_MESSAGE(moved.is_ok(), moved.status().message());
  CHECK(moved->queues[0].pending_seconds == std::vector<std::int64_t>{0, 0, 0, 0, 0});
  CHECK(moved->moves == 1);
  CHECK(moved->queues[0].moved == 1);
  CHECK(moved->queues[0].consolidated == 1);
  CHECK(moved->end == 120);
}

TEST_CASE("replay: without reasons (sessions by runs of alike pods) the same pods start at the same times") {
  // With reasons every waiting pod takes its turn each cycle and is explained; without them a
  // one-queue replay hands its sessions runs of alike pods (queues::AlikeRuns). Random nodes and
  // pods of a few shapes, two priorities (reclaim evicts), consolidation on: the same report.
  std::int64_t moves = 0;
  std::int64_t evictions = 0;
  for (std::uint32_t seed = 1; seed <= 6; ++seed) {
    CAPTURE(seed);
    RandomWorld w(seed * 31337u);
    const std::vector<NodeSpec> nodes = w.nodes(4);
    std::vector<PodRequest> shapes;
    for (int k = 0; k < 5; ++k) shapes.push_back(w.pod("shape"));
    quota::TimedWorkload load;
    for (int i = 0; i < 300; ++i) {
      quota::TimedPod t;
      t.pod = shapes[static_cast<std::size_t>(w.uniform(0, 4))];
      t.pod.name = fmt::format("p{:03}", i);
      t.pod.queue = "a";
      if (w.chance(0.2)) t = non_preemptible(t);
      t.arrival = w.uniform(0, 900);
      t.run_seconds = w.uniform(20, 600);
      load.pods.push_back(std::move(t));
    }
    std::sort(load.pods.begin(), load.pods.end(), [](const quota::TimedPod& x, const quota::TimedPod& y) {
      return std::tie(x.arrival, x.pod.name) < std::tie(y.arrival, y.pod.name);
    });
    quota::ReplayOptions options;
    options.consolidation = true;
    options.per_pod = true;
    auto every_turn = quota::replay(nodes, {gpu_queue("a", -1)}, load, options);
    options.reasons = false;
    auto by_runs = quota::replay(nodes, {gpu_queue("a", -1)}, load, options);
    REQUIRE_MESSAGE(every_turn.is_ok(), every_turn.status().message());
    REQUIRE_MESSAGE(by_runs.is_ok(), by_runs.status().message());
    const quota::QueueReport& x = every_turn->queues.at(0);
    const quota::QueueReport& y = by_runs->queues.at(0);
    CHECK(x.pending_seconds == y.pending_seconds);
    CHECK(std::tie(x.started, x.never_started, x.moved, x.consolidated, x.preemptions_suffered) ==
          std::tie(y.started, y.never_started, y.moved, y.consolidated, y.preemptions_suffered));
    CHECK(every_turn->end == by_runs->end);
    REQUIRE(every_turn->pods.size() == by_runs->pods.size());
    for (std::size_t i = 0; i < every_turn->pods.size(); ++i) {
      CAPTURE(i);
      CHECK(every_turn->pods[i].first_start == by_runs->pods[i].first_start);
      CHECK(every_turn->pods[i].pending_seconds == by_runs->pods[i].pending_seconds);
    }
    REQUIRE(every_turn->timeline.size() == by_runs->timeline.size());
    for (std::size_t t = 0; t < every_turn->timeline.size(); ++t) {
      CHECK(every_turn->timeline[t].cluster_allocated_pct == by_runs->timeline[t].cluster_allocated_pct);
    }
    moves += x.moved;
    evictions += x.preemptions_suffered;
  }
  CHECK(moves > 0);      // consolidation moved pods,
  CHECK(evictions > 0);  // and reclaim evicted some, which waited again
}

TEST_CASE("replay: a queue refused a plan does not stop another queue's pod of the same ask") {
  // As above, but two whole-GPU pods arrive at 20: w1 of queue b first (quota 0: past its
  // deserved share it may not move queue a's halves, and it has none of its own), then w2 of
  // queue a. w1 finds no plan; w2, asking the same, moves s1 beside s4 and starts at once.
  quota::TimedWorkload w;
  w.pods = {half("s1", 100), half("s2", 10), half("s3", 10), half("s4", 100), whole_gpu("w1", "b", 20, 50),
            whole_gpu("w2", "a", 20, 50)};
  quota::ReplayOptions options;
  options.consolidation = true;
  auto r = quota::replay(one_node(2), {gpu_queue("a", 2), gpu_queue("b", 0)}, w, options);
  REQUIRE_MESSAGE(r.is_ok(), r.status().message());
  CHECK(r->moves == 1);
  for (const auto& q : r->queues) {
    CAPTURE(q.queue);
    if (q.queue == "a") {
      CHECK(q.consolidated == 1);
      CHECK(q.pending_seconds == std::vector<std::int64_t>{0, 0, 0, 0, 0});
    } else {
      CHECK(q.consolidated == 0);
      REQUIRE(q.pending_seconds.size() == 1);
      CHECK(q.pending_seconds[0] > 0);
    }
  }
}

TEST_CASE("replay: consolidation within a bound on moves per hour") {
  // Four GPUs, one half left on each at t=10 (as above, twice over); at 20 a pod asks for two
  // whole GPUs: two halves must move. A bound of one move an hour leaves it waiting for the
  // halves to leave at 100; a bound of two lets it start at 20.
  quota::TimedWorkload w;
  for (int i = 1; i <= 8; ++i) w.pods.push_back(half("s" + std::to_string(i), i % 2 == 1 ? 100 : 10));
  w.pods.push_back(whole_gpu("w", "a", 20, 50, 2));
  std::vector<NodeSpec> nodes;
  nodes.push_back(nvf("n", 4, 20000).spec());
  quota::ReplayOptions options;
  options.consolidation = true;
  options.max_moves_per_hour = 1;
  auto one = quota::replay(nodes, {gpu_queue("a", 4)}, w, options);
  REQUIRE_MESSAGE(one.is_ok(), one.status().message());
  CHECK(one->moves == 0);
  CHECK(one->queues[0].pending_seconds.back() == 80);
  options.max_moves_per_hour = 2;
  auto two = quota::replay(nodes, {gpu_queue("a", 4)}, w, options);
  REQUIRE(two.is_ok());
  CHECK(two->moves == 2);
  CHECK(two->queues[0].pending_seconds.back() == 0);
}

TEST_CASE("replay: the FGD study's policies run too, with the workload's typical pods as their target") {
  quota::TimedWorkload w;
  w.pods = {whole_gpu("a1", "a", 0, 100), whole_gpu("a2", "a", 0, 100), whole_gpu("a3", "a", 0, 50)};
  for (const char* name : {"fgd", "fgd-cpu", "fgd-lp", "study-best-fit"}) {
    quota::ReplayOptions options;
    options.policy = name;
    auto r = quota::replay(one_node_two_gpus(), {gpu_queue("a", 2)}, w, options);
    REQUIRE_MESSAGE(r.is_ok(), r.status().message());
    CHECK(r->queues[0].pending_seconds == std::vector<std::int64_t>{0, 0, 100});  // two GPUs: a3 waits for a departure
  }
  quota::ReplayOptions unknown;
  unknown.policy = "no-such-policy";
  CHECK_FALSE(quota::replay(one_node_two_gpus(), {gpu_queue("a", 2)}, w, unknown).is_ok());
}

TEST_CASE("replay: fair shares follow departures even when nothing waits") {
  // a1 runs 0..100, a2 36000..36100; between them queue a asks for nothing, so its fair share is 0.
  quota::TimedWorkload w;
  w.pods = {whole_gpu("a1", "a", 0, 100), whole_gpu("a2", "a", 36000, 100)};
  auto r = quota::replay(one_node_two_gpus(), {gpu_queue("a", 1), gpu_queue("b", 1)}, w, quota::ReplayOptions{});
  REQUIRE_MESSAGE(r.is_ok(), r.status().message());
  CHECK(r->queues[0].gpu_hours == doctest::Approx(200 / 3600.0));
  CHECK(r->queues[0].fair_share_gpu_hours == doctest::Approx(200 / 3600.0));  // not 10 hours of a stale share
  REQUIRE(r->timeline.size() >= 3);
  for (const auto& p : r->timeline) {
    if (p.time == 100) CHECK(p.fair_share[0] == 0);
  }
}

TEST_CASE("replay: nothing is evicted for a non-preemptible pod its queue's quota still refuses") {
  // Queue a (quota 1) on two GPUs: np1 (non-preemptible) and p (preemptible, lower priority) run
  // from 0 to 100. np2 (non-preemptible) arrives at 10: a's non-preemptible pods already hold its
  // quota, so np2 is refused whatever is evicted — p must run undisturbed, and np2 starts at 100.
  quota::TimedWorkload w;
  w.pods = {non_preemptible(whole_gpu("np1", "a", 0, 100)), whole_gpu("p", "a", 0, 100), non_preemptible(whole_gpu("np2", "a", 10, 50))};
  auto r = quota::replay(one_node_two_gpus(), {gpu_queue("a", 1)}, w, quota::ReplayOptions{});
  REQUIRE_MESSAGE(r.is_ok(), r.status().message());
  const auto& a = r->queues[0];
  CHECK(a.preemptions_suffered == 0);
  CHECK(a.started == 3);
  CHECK(a.pending_seconds == std::vector<std::int64_t>{0, 0, 90});
  CHECK(a.gpu_hours == doctest::Approx((100 + 100 + 50) / 3600.0));
}

TEST_CASE("replay: cycles fall on period boundaries; a pod that never fits never starts; unknown queues are refused") {
  quota::TimedWorkload w;
  w.pods = {whole_gpu("x", "a", 3, 10), whole_gpu("forever", "a", 4, std::nullopt), whole_gpu("big", "b", 5, 10)};
  w.pods[2].pod = PodBuilder("big").whole(4).spec();
  w.pods[2].pod.queue = "b";
  quota::ReplayOptions options;
  options.period = 10;
  auto r = quota::replay(one_node_two_gpus(), {gpu_queue("a", 2), gpu_queue("b", 2)}, w, options);
  REQUIRE_MESSAGE(r.is_ok(), r.status().message());
  CHECK(r->queues[0].pending_seconds == std::vector<std::int64_t>{7, 6});  // both start at the cycle at t=10
  CHECK(r->queues[1].never_started == 1);  // 4 GPUs on a 2-GPU node: waits forever, the replay still ends
  CHECK(r->queues[1].never_startable == 1);  // … and no quota could change that
  CHECK(r->queues[0].gpu_hours == doctest::Approx((10 + 10) / 3600.0));  // x 10..20, forever 10..20 (the end)
  CHECK(r->end == 20);

  w.pods[0].pod.queue = "nope";
  auto bad = quota::replay(one_node_two_gpus(), {gpu_queue("a", 2), gpu_queue("b", 2)}, w, options);
  REQUIRE_FALSE(bad.is_ok());
  CHECK(bad.status().message() == "pod x: queue \"nope\" is not a leaf Queue of the queue file");
  options.period = 0;
  CHECK_FALSE(quota::replay(one_node_two_gpus(), {gpu_queue("a", 2)}, {}, options).is_ok());
}

}  // namespace
}  // namespace fracpack::test

namespace fracpack::test {
namespace {

TEST_CASE("quota replay command: files in, the per-queue table and queues.csv out; bad input exits 2") {
  const QuotaFiles files = quota_files("qr", 1,
                                        "p1,1000,1024,1,1000,,LS,Running,0,100,0\n"
                                        "p2,1000,1024,1,1000,,BE,Running,10,50,10\n",
                                        1, 0);
  const auto out = std::filesystem::temp_directory_path() / fmt::format("fracpack-qr-out-{}", getpid());
  QuotaReplayOptions o;
  o.nodes = files.nodes.string();
  o.queues = files.queues.string();
  o.pods = files.pods.string();
  o.rules = files.rules.string();
  o.out = out.string();
  REQUIRE(run_quota_replay(o) == 0);
  std::ifstream csv(out / "queues.csv");
  std::string header, a, b;
  std::getline(csv, header);
  std::getline(csv, a);
  std::getline(csv, b);
  // p1 holds the only GPU from 0 to 100; p2 (queue b) waits from 10 to 100, then runs its 40 s.
  CHECK(a == "a,1,0,0,0,0,0,0,0.028,0.028,0.039,0.000,0,0,,,");  // no pod of a waited  // a's pod is non-preemptible: b (quota 0) cannot reclaim
  CHECK(b.rfind("b,1,0,0,90,90,90,90,0.011,", 0) == 0);
  CHECK(b.find(",trace/p2,90,0/1 nodes are available: 1 Insufficient idle GPUs.") != std::string::npos);
  std::ifstream timeline(out / "timeline.csv");
  std::string first;
  std::getline(timeline, first);
  CHECK(first == "time_s,cluster_allocated_pct,fragmentation_pct,a_allocated_gpus,a_fair_share_gpus,a_pending_gpus,b_allocated_gpus,"
                 "b_fair_share_gpus,b_pending_gpus");
  bool b_pending = false;  // p2's GPU counts in b's demand while it waits
  for (std::string row; std::getline(timeline, row);) b_pending = b_pending || row.ends_with(",1.000");
  CHECK(b_pending);
  CHECK(std::filesystem::exists(out / "cluster.svg"));
  CHECK(std::filesystem::file_size(out / "queue-a.svg") > 500);
  CHECK(std::filesystem::exists(out / "queue-b.svg"));
  std::filesystem::remove_all(out);

  QuotaReplayOptions missing_queue = o;
  missing_queue.rules = temp_file("qr-rules2.yaml", "rules: [{qos: LS, queue: a}, {qos: BE, queue: c}]").string();
  CHECK(run_quota_replay(missing_queue) == 2);  // pod p2: queue "c" is not a leaf Queue
  QuotaReplayOptions no_queues = o;
  no_queues.queues = files.nodes.string();
  CHECK(run_quota_replay(no_queues) == 2);
}

}  // namespace
}  // namespace fracpack::test

namespace fracpack::test {
namespace {

TEST_CASE("Pod objects as a replay workload: arrival from creationTimestamp, run time from the annotation, queue from the label") {
  auto pod = [](const std::string& name, const std::string& queue, const std::string& created, const char* run,
                const std::string& priority_class = "") {
    PodBuilder b(name);
    b.whole(1).label("kai.scheduler/queue", queue);
    b.obj["metadata"]["creationTimestamp"] = created;
    if (run != nullptr) b.annotation(std::string(quota::kRunSecondsAnnotation), run);
    if (!priority_class.empty()) b.priority_class(priority_class);
    return b.obj;
  };
  std::vector<json> objects{pod("late", "b", "2026-01-01T00:00:10Z", "30"), pod("early", "a", "2026-01-01T00:00:00Z", "100", "inference"),
                            pod("forever", "a", "2026-01-01T00:00:05Z", nullptr)};
  auto w = quota::timed_workload_from_objects(objects, "pods.yaml");
  REQUIRE_MESSAGE(w.is_ok(), w.status().message());
  REQUIRE(w->pods.size() == 3);
  CHECK(w->pods[0].pod.name == "early");
  CHECK(w->pods[0].run_seconds == 100);
  CHECK_FALSE(w->pods[0].pod.preemptible);  // KAI's inference class
  CHECK(w->pods[1].pod.name == "forever");
  CHECK_FALSE(w->pods[1].run_seconds.has_value());
  CHECK(w->pods[2].arrival - w->pods[0].arrival == 10);
  CHECK(w->pods[2].pod.queue == "b");

  auto bad_run = quota::timed_workload_from_objects({pod("x", "a", "2026-01-01T00:00:00Z", "soon")}, "pods.yaml");
  REQUIRE_FALSE(bad_run.is_ok());
  CHECK(bad_run.status().message() == "pods.yaml: pod default/x: annotation replay.fracpack.io/run-seconds = \"soon\" must be an "
                                      "integer number of seconds in 0…1099511627776");
  // A run time so long that arrival + run would overflow is refused, not wrapped.
  CHECK_FALSE(quota::timed_workload_from_objects({pod("x", "a", "2026-01-01T00:00:00Z", "9223372036854775807")}, "pods.yaml").is_ok());
  auto twice = quota::timed_workload_from_objects({pod("x", "a", "2026-01-01T00:00:00Z", "1"), pod("x", "b", "2026-01-01T00:00:09Z", "1")},
                                                  "pods.yaml");
  REQUIRE_FALSE(twice.is_ok());
  CHECK(twice.status().message() == "pods.yaml: pod default/x appears twice");
  json undated = pod("y", "a", "2026-01-01T00:00:00Z", "1");
  undated["metadata"].erase("creationTimestamp");
  auto no_time = quota::timed_workload_from_objects({undated}, "pods.yaml");
  REQUIRE_FALSE(no_time.is_ok());
  CHECK(no_time.status().message().find("metadata.creationTimestamp is required") != std::string::npos);
  CHECK_FALSE(quota::timed_workload_from_objects({nvf("n", 1, 1000).obj}, "pods.yaml").is_ok());  // no pods
  // A pod that does not decode is left out with a warning naming it, as place reports it Invalid.
  json invalid = pod("bad", "a", "2026-01-01T00:00:01Z", "1");
  invalid["metadata"]["annotations"]["gpu-fraction"] = "2";
  auto some = quota::timed_workload_from_objects({invalid, pod("ok", "a", "2026-01-01T00:00:00Z", "1")}, "pods.yaml");
  REQUIRE_MESSAGE(some.is_ok(), some.status().message());
  REQUIRE(some->pods.size() == 1);
  CHECK(some->pods[0].pod.name == "ok");
  REQUIRE(some->warnings.size() == 1);
  CHECK(some->warnings[0].starts_with("pods.yaml: pod default/bad: annotation \"gpu-fraction\""));
  CHECK(some->warnings[0].ends_with("; left out of the replay"));
  auto only_bad = quota::timed_workload_from_objects({invalid}, "pods.yaml");
  REQUIRE_FALSE(only_bad.is_ok());
  CHECK(only_bad.status().message() == "pods.yaml: no Pod objects that decode");
}

}  // namespace
}  // namespace fracpack::test
