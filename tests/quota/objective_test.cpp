// The tuner's objective: what each phrase parses to, which phrases are refused and why, and how
// candidates are scored and compared.
#include <doctest/doctest.h>

#include <cmath>

#include "fracpack/sim/quota/objective.hpp"

namespace fracpack::quota {
namespace {

const std::vector<std::string> kQueues{"inference", "training", "team-1"};
const std::vector<double> kWeights{2, 1, 1};

Objective parsed(const std::string& text) {
  auto o = parse_objective(text, kQueues, kWeights);
  REQUIRE_MESSAGE(o.is_ok(), o.status().message());
  return *o;
}

std::string refused(const std::string& text) {
  auto o = parse_objective(text, kQueues, kWeights);
  REQUIRE_FALSE(o.is_ok());
  return o.status().message();
}

// "The phrases": objectives as an administrator would say them, like the examples in
// docs/quota-tuning.md, "The objective".
TEST_CASE("objective: the issue's phrases parse to constraints and a goal with bounds in base units") {
  const Objective a = parsed("p95 pending of inference <= 60s, then maximise allocation");
  REQUIRE(a.constraints.size() == 1);
  CHECK(a.constraints[0].ref.metric == Metric::kPendingP95);
  CHECK(a.constraints[0].ref.queue == "inference");
  CHECK(a.constraints[0].at_most);
  CHECK(a.constraints[0].bound == 60);
  REQUIRE(a.goal);
  CHECK(a.goal->ref.metric == Metric::kAllocation);
  CHECK(a.goal->maximise);

  const Objective b = parsed("every queue's share of GPU-hours within 10 % of its weight");
  REQUIRE(b.constraints.size() == 1);
  CHECK(b.constraints[0].ref.metric == Metric::kShareError);
  CHECK(b.constraints[0].ref.queue.empty());  // every queue: the worst one
  CHECK(b.constraints[0].bound == 10);
  CHECK(b.target_share == std::vector<double>{0.5, 0.25, 0.25});

  const Objective c = parsed("Max pending of team-1 ≤ 2h and never started of training at most 0; p99 pending >= 1.5 min. "
                             "Then minimize preemptions of training");
  REQUIRE(c.constraints.size() == 3);
  CHECK(c.constraints[0].ref.metric == Metric::kPendingMax);
  CHECK(c.constraints[0].ref.queue == "team-1");
  CHECK(c.constraints[0].bound == 7200);
  CHECK(c.constraints[1].ref.metric == Metric::kNeverStarted);
  CHECK(c.constraints[1].bound == 0);
  CHECK(c.constraints[2].ref.metric == Metric::kPendingP99);
  CHECK_FALSE(c.constraints[2].at_most);
  CHECK(c.constraints[2].bound == 90);
  REQUIRE(c.goal);
  CHECK_FALSE(c.goal->maximise);
  CHECK(c.goal->ref.metric == Metric::kPreemptions);
  CHECK(c.goal->ref.queue == "training");
}

TEST_CASE("objective: each mistake is refused with the clause and the word at fault") {
  CHECK(refused("p95 pending of inferense <= 60s").find("\"inferense\" is neither a queue nor a metric word") != std::string::npos);
  CHECK(refused("p95 pending of inference <= 60 parsecs").find("\"parsecs\"") != std::string::npos);
}

TEST_CASE("objective: ill-formed clauses name what is missing or contradictory") {
  CHECK(refused("pending of inference <= 60s").find("p50, p95, p99 or max") != std::string::npos);
  CHECK(refused("p95 pending of inference 60s").find("no comparison") != std::string::npos);
  CHECK(refused("p95 pending of inference <=").find("no bound") != std::string::npos);
  CHECK(refused("allocation >= 50 h").find("time unit") != std::string::npos);
  CHECK(refused("allocation of inference >= 50").find("no queue") != std::string::npos);
  CHECK(refused("maximise allocation, minimise preemptions").find("two goals") != std::string::npos);
  CHECK(refused("maximise allocation >= 50").find("takes no bound") != std::string::npos);
  CHECK(refused("p95 pending of inference and training <= 60").find("no comparison") != std::string::npos);
  CHECK(refused("p95 pending of inference training <= 60").find("two queues") != std::string::npos);
  CHECK(refused("p95 preemptions <= 3").find("applies to pending time") != std::string::npos);
  CHECK(refused("").find("empty") != std::string::npos);
  CHECK(refused("allocation >= 50 # comment").find("unexpected '#' at character 18") != std::string::npos);
  CHECK(refused("max pending ⩽ 5s").find("unexpected '⩽' at character 13; comparisons are") != std::string::npos);
  CHECK(refused("max pending = 5s").find("comparisons are <=, <, >=, >") != std::string::npos);
  CHECK(refused("max pending <= -5s").find("bounds are ≥ 0") != std::string::npos);
  CHECK(refused("max pending <= 1e400s").find("is not a finite number") != std::string::npos);
}

TEST_CASE("objective: numbers in 1e3 notation; < and > are strict") {
  const Objective o = parsed("max pending of inference < 1e3 s, allocation > 50");
  REQUIRE(o.constraints.size() == 2);
  CHECK(o.constraints[0].bound == 1000);
  CHECK(o.constraints[0].strict);
  ReplayMetrics m;
  m.queues = {QueueMetrics{}, QueueMetrics{}, QueueMetrics{}};
  m.queues[0].queue = "inference";
  m.queues[0].pending_max = 1000;  // not below 1000
  m.allocation_pct = 60;
  CHECK_FALSE(score(o, m).feasible());
  REQUIRE(violations(o, m).size() == 1);
  CHECK(violations(o, m)[0].find("1000 ≥ 1000") != std::string::npos);
  m.queues[0].pending_max = 999;
  CHECK(score(o, m).feasible());
  m.allocation_pct = 50;  // not above 50
  CHECK_FALSE(score(o, m).feasible());
}

TEST_CASE("objective: queue names that are also grammar words") {
  const std::vector<std::string> odd{"d", "pending", "and", "then"};
  auto parse = [&](const std::string& text) {
    auto o = parse_objective(text, odd, {1, 1, 1, 1});
    REQUIRE_MESSAGE(o.is_ok(), o.status().message());
    return *o;
  };
  const Objective unit = parse("max pending <= 1 d");  // a day, for the worst queue
  CHECK(unit.constraints[0].ref.queue.empty());
  CHECK(unit.constraints[0].bound == 86400);
  const Objective queue_d = parse("max pending of d <= 2d");
  CHECK(queue_d.constraints[0].ref.queue == "d");
  CHECK(queue_d.constraints[0].bound == 172800);
  const Objective queue_pending = parse("p95 pending of pending <= 1s");
  CHECK(queue_pending.constraints[0].ref.queue == "pending");
  const Objective joined = parse("never started of and <= 0 and max pending of then <= 5 then maximise allocation");
  REQUIRE(joined.constraints.size() == 2);
  CHECK(joined.constraints[0].ref.queue == "and");
  CHECK(joined.constraints[1].ref.queue == "then");
  CHECK(joined.goal);
}

TEST_CASE("objective: \"then\" starts a clause without a comma") {
  const Objective o = parsed("max pending of inference <= 60s then maximise allocation");
  CHECK(o.constraints.size() == 1);
  REQUIRE(o.goal);
  CHECK(o.goal->ref.metric == Metric::kAllocation);
}

TEST_CASE("objective: scores add each constraint's excess over its bound; the goal breaks ties") {
  const Objective o = parsed("p95 pending of inference <= 60s, never started <= 0, then maximise allocation");
  ReplayMetrics m;
  m.queues.resize(3);
  m.queues[0].queue = "inference";
  m.queues[0].pending_p95 = 90;  // 30 s over 60: 0.5
  m.queues[1].queue = "training";
  m.queues[1].never_started = 2;  // 2 over 0, divided by max(0, 1): 2
  m.queues[2].queue = "team-1";
  m.allocation_pct = 40;
  const Score s = score(o, m);
  CHECK(s.violation == doctest::Approx(2.5));
  CHECK(s.goal == 40);
  CHECK_FALSE(s.feasible());
  const auto v = violations(o, m);
  REQUIRE(v.size() == 2);
  CHECK(v[0].find("p95 pending (s) of inference 90 > 60") != std::string::npos);
  CHECK(v[1].find("never started, worst queue 2 > 0") != std::string::npos);

  m.queues[0].pending_p95 = 60;
  m.queues[1].never_started = 0;
  const Score met = score(o, m);
  CHECK(met.feasible());
  CHECK(better(o, met, s));
  CHECK_FALSE(better(o, s, met));
  ReplayMetrics denser = m;
  denser.allocation_pct = 41;
  CHECK(better(o, score(o, denser), met));  // both feasible: the goal decides
  CHECK_FALSE(better(o, met, met));          // equal scores are not better

  // Pods that never start make a pending time infinite: any finite violation is better.
  m.queues[0].pending_p95 = kWaitsForever;
  const Score never = score(o, m);
  CHECK(std::isinf(never.violation));
  CHECK(better(o, s, never));
  CHECK_FALSE(better(o, never, s));
  CHECK_FALSE(better(o, never, never));
  CHECK(violations(o, m)[0].find("never (pods that a node could hold never start)") != std::string::npos);
}

TEST_CASE("objective: share error is measured against the stated weights, not the candidate's") {
  const Objective o = parsed("share within 10% of weight");
  ReplayMetrics m;
  m.queues = {QueueMetrics{}, QueueMetrics{}, QueueMetrics{}};
  m.queues[0].queue = "inference";
  m.queues[0].share_pct = 55;  // target 50: 10 % off
  m.queues[1].queue = "training";
  m.queues[1].share_pct = 25;
  m.queues[2].queue = "team-1";
  m.queues[2].share_pct = 20;  // target 25: 20 % off — the worst
  CHECK(value_of(o, o.constraints[0].ref, m) == doctest::Approx(20));
  CHECK(score(o, m).violation == doctest::Approx(1.0));  // (20 − 10) ÷ 10
  m.queues[2].share_pct = 23;
  m.queues[1].share_pct = 26;
  m.queues[0].share_pct = 51;
  CHECK(score(o, m).feasible());
}

}  // namespace
}  // namespace fracpack::quota
