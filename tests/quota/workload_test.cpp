// The replay workload: rule files read with every mistake named, queues assigned in rule order,
// arrival and run times from the trace.
#include <doctest/doctest.h>

#include <fstream>

#include "fracpack/sim/quota/workload.hpp"
#include "support/builders.hpp"
#include "support/temp_files.hpp"
#include "support/trace_files.hpp"

namespace fracpack::test {
namespace {


trace::TracePod tpod(const std::string& name, const std::string& qos, std::int64_t created, std::optional<std::int64_t> scheduled,
                     std::optional<std::int64_t> deleted) {
  trace::TracePod p;
  p.name = name;
  p.qos = qos;
  p.cpu = MilliCpu(1000);
  p.memory = MiB(1024);
  p.num_gpu = 1;
  p.gpu_milli = MilliGpu(500);
  p.creation_time = created;
  p.scheduled_time = scheduled;
  p.deletion_time = deleted;
  return p;
}

TEST_CASE("quota rules: first match wins, by qos, name pattern and hash, with a default") {
  auto rules = quota::read_rules(temp_file("rules-ok.yaml", R"(
rules:
  - qos: [LS]
    queue: inference
    preemptible: false
  - namePattern: "research-.*"
    queue: research
  - hash: {buckets: 2, bucket: 0}
    queue: even
    priority: 60
default: {queue: rest}
)"));
  REQUIRE_MESSAGE(rules.is_ok(), rules.status().message());
  REQUIRE(rules->rules.size() == 3);
  CHECK(rules->rules[0].priority == 125);  // non-preemptible: KAI's inference priority
  CHECK(rules->rules[2].priority == 60);
  CHECK(quota::match(*rules, tpod("research-1", "LS", 0, 0, 1))->queue == "inference");  // rule order
  CHECK(quota::match(*rules, tpod("research-1", "BE", 0, 0, 1))->queue == "research");
  // Hash buckets split names deterministically; whatever is not in bucket 0 falls to the default.
  int even = 0;
  for (int i = 0; i < 200; ++i) {
    const auto* r = quota::match(*rules, tpod(fmt::format("p{}", i), "BE", 0, 0, 1));
    CHECK((r->queue == "even" || r->queue == "rest"));
    even += r->queue == "even" ? 1 : 0;
    CHECK(quota::match(*rules, tpod(fmt::format("p{}", i), "BE", 0, 0, 1)) == r);
  }
  CHECK(even > 60);
  CHECK(even < 140);
}

TEST_CASE("quota rules: name patterns run in linear time, whatever the pattern or the name") {
  // std::regex overflowed its stack on a 30,000-character name and backtracked for ever on
  // (a+)+$; RE2 does neither.
  const auto file = temp_file("rules-re2.yaml", "rules: [{namePattern: '(a+)+$', queue: nested}, {namePattern: 'openb-.*', queue: long}]\n"
                                                "default: {queue: other}\n");
  auto rules = quota::read_rules(file);
  REQUIRE_MESSAGE(rules.is_ok(), rules.status().message());
  CHECK(quota::match(*rules, tpod(std::string(5000, 'a') + "b", "BE", 0, 0, 1))->queue == "other");
  CHECK(quota::match(*rules, tpod(std::string(5000, 'a'), "BE", 0, 0, 1))->queue == "nested");
  CHECK(quota::match(*rules, tpod("openb-" + std::string(200000, 'x'), "BE", 0, 0, 1))->queue == "long");
}

TEST_CASE("quota rules: a queue name YAML reads as a number is still a name") {
  auto rules = quota::read_rules(temp_file("rules-num.yaml", "rules: [{qos: LS, queue: 60}]"));
  REQUIRE_MESSAGE(rules.is_ok(), rules.status().message());
  CHECK(rules->rules[0].queue == "60");
}

TEST_CASE("quota rules: every mistake is refused with the file and the rule") {
  const std::vector<std::pair<std::string, std::string>> bad{
      {"rules: []", "`rules` must list at least one rule"},
      {"rules: [{qos: LS}]", "rules[0].queue: a queue name is required"},
      {"rules: [{queue: q}]", "rules[0]: no condition"},
      {"rules: [{qos: LS, queue: q, color: red}]", "unknown key \"color\""},
      {"rules: [{namePattern: '([', queue: q}]", "not a valid RE2 regular expression"},
      {"rules: [{namePattern: '(a)\\1', queue: q}]", "not a valid RE2 regular expression"},  // no backreferences
      {"rules: [{hash: {buckets: 0, bucket: 0}, queue: q}]", "hash.buckets: must be an integer in 1..1000000"},
      {"rules: [{hash: {buckets: 3, bucket: 3}, queue: q}]", "hash.bucket: must be an integer in 0..2"},
      {"rules: [{qos: LS, queue: q, preemptible: false, priority: 50}]", "priority 50: KAI treats priority ≥ 100 as non-preemptible"},
      {"rules: [{qos: LS, queue: q, preemptible: 'no'}]", "preemptible: must be true or false"},
      {"rules: [{qos: [], queue: q}]", "qos: lists no value"},
      {"rule: [{qos: LS, queue: q}]", "unknown key \"rule\""},
  };
  for (const auto& [text, message] : bad) {
    CAPTURE(text);
    const auto path = temp_file("rules-bad.yaml", text);
    auto r = quota::read_rules(path);
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().code() == Code::kInvalidArgument);
    CHECK_MESSAGE(r.status().message().find(message) != std::string::npos, r.status().message());
    CHECK(r.status().message().find(path.string()) != std::string::npos);
  }
}

TEST_CASE("timed workload: arrival, run time, queue and preemptibility per pod; unmatched pods and idle rules reported") {
  auto rules = quota::read_rules(temp_file("rules-t.yaml", "rules: [{qos: LS, queue: inference, preemptible: false}, {qos: Guaranteed, queue: g}]"));
  REQUIRE(rules.is_ok());
  std::vector<trace::TracePod> pods{tpod("b", "LS", 100, 130, 400), tpod("a", "LS", 100, std::nullopt, 250),
                                    tpod("c", "LS", 50, 60, std::nullopt)};
  auto w = quota::timed_workload(pods, *rules);
  REQUIRE_MESSAGE(w.is_ok(), w.status().message());
  REQUIRE(w->pods.size() == 3);
  CHECK(w->pods[0].pod.name == "c");  // by arrival, then name
  CHECK_FALSE(w->pods[0].run_seconds.has_value());  // never deleted: runs to the end
  CHECK(w->pods[1].pod.name == "a");
  CHECK(w->pods[1].run_seconds == 150);  // never started in the trace: deletion − creation
  CHECK(w->pods[2].run_seconds == 270);  // deletion − scheduled
  CHECK(w->pods[2].pod.queue == "inference");
  CHECK_FALSE(w->pods[2].pod.preemptible);
  CHECK(w->pods[2].pod.priority == 125);
  REQUIRE(w->warnings.size() == 1);
  CHECK(w->warnings[0].find("rules[1] (queue g) matches no pod") != std::string::npos);

  auto unmatched = quota::timed_workload({tpod("x", "BE", 0, 0, 1)}, *rules);
  REQUIRE_FALSE(unmatched.is_ok());
  CHECK(unmatched.status().message() == "pod x (qos BE): no rule matches it and the rule file has no `default`");
  auto backwards = quota::timed_workload({tpod("y", "LS", 100, 90, 200)}, *rules);
  REQUIRE_FALSE(backwards.is_ok());
  CHECK(backwards.status().message().find("pod y: times run backwards") == 0);
}

TEST_CASE("timed workload: the shipped three-queue rules over the real default trace") {
  auto dir = require_shared_data();
  if (!dir) return;
  auto rules = quota::read_rules(std::filesystem::path(FRACPACK_SOURCE_DIR) / "examples" / "quota-rules.yaml");
  REQUIRE_MESSAGE(rules.is_ok(), rules.status().message());
  auto pods = trace::read_pods(*dir / "alibaba-gpu-v2023" / "openb_pod_list_default.csv");
  REQUIRE(pods.is_ok());
  auto w = quota::timed_workload(*pods, *rules);
  REQUIRE_MESSAGE(w.is_ok(), w.status().message());
  std::map<std::string, int> per_queue;
  for (const auto& p : w->pods) ++per_queue[p.pod.queue];
  CHECK(per_queue["inference"] == 4647);  // LS pods in the list
  CHECK(per_queue["training"] == 3398);   // BE
  CHECK(per_queue["research"] == 107);    // Burstable and Guaranteed, by default
  for (std::size_t i = 1; i < w->pods.size(); ++i) CHECK(w->pods[i - 1].arrival <= w->pods[i].arrival);
}

}  // namespace
}  // namespace fracpack::test
