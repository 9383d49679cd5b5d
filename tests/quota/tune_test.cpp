// The quota tuner on scenarios small enough to know the answer: it finds quotas that meet a
// feasible objective, reports an infeasible one with the closest candidate, gives the same answer
// at any parallelism, and writes Queue objects that read back as what it recommends.
#include <doctest/doctest.h>

#include <filesystem>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <regex>

#include "fracpack/k8s/object_stream.hpp"
#include "fracpack/k8s/yaml_emit.hpp"
#include "fracpack/sim/quota/metrics.hpp"
#include "fracpack/sim/quota/tune.hpp"
#include "fracpack/sim/quota_job.hpp"
#include "fracpack/queues/decode_queue.hpp"
#include "jobs/quota_inputs.hpp"
#include "support/cli_run.hpp"
#include "support/quota_scenarios.hpp"
#include "support/temp_files.hpp"

namespace fracpack::test {
namespace {

/// One 4-GPU node. Queue a runs three non-preemptible 1-GPU pods of 100 s at t=0; queue b one
/// preemptible 1-GPU pod for 10,000 s. With a's quota at 1 its pods run one after another
/// (pending 0, 100, 200 s); only a quota of 3 or more lets all three start at once. Demand puts
/// b far ahead (10,000 vs 300 GPU-seconds), so the demand-proportional start gives a no quota:
/// only the search finds the answer.
struct Scenario {
  std::vector<NodeSpec> nodes = one_node(4);
  std::vector<queues::QueueSpec> specs{gpu_queue("a", 1), gpu_queue("b", 3)};
  quota::TimedWorkload workload;
  Scenario() {
    workload.pods = {non_preemptible(whole_gpu("a1", "a", 0, 100)), non_preemptible(whole_gpu("a2", "a", 0, 100)),
                     non_preemptible(whole_gpu("a3", "a", 0, 100)), whole_gpu("b1", "b", 0, 10000)};
  }
  quota::Objective objective(const std::string& text) const {
    auto lw = quota::leaves_and_weights(specs);
    REQUIRE(lw.is_ok());
    auto o = quota::parse_objective(text, lw->first, lw->second);
    REQUIRE_MESSAGE(o.is_ok(), o.status().message());
    return *o;
  }
};

quota::TuneOptions deterministic(unsigned jobs) {
  quota::TuneOptions o;
  o.budget_seconds = 0;  // no clock in the answer
  o.max_rounds = 30;
  o.jobs = jobs;
  return o;
}

TEST_CASE("tune: the search raises a non-preemptible queue's quota until its pods stop waiting") {
  Scenario s;
  const auto objective = s.objective("max pending of a <= 0s");
  auto r = quota::tune(s.nodes, s.specs, s.workload, objective, deterministic(2));
  REQUIRE_MESSAGE(r.is_ok(), r.status().message());
  // The input: a's pods wait 0, 100 and 200 s.
  CHECK(r->input.metrics.queues[0].pending_max == 200);
  CHECK_FALSE(r->input.score.feasible());
  const quota::Candidate& best = r->candidates.front();
  REQUIRE(best.score.feasible());
  CHECK(best.settings[0].gpu_quota >= 3000);  // three GPUs for three non-preemptible pods
  CHECK(best.metrics.queues[0].pending_max == 0);
  CHECK(best.origin.rfind("round", 0) == 0);  // neither start point met it
  CHECK(r->evaluated > 2);
  CHECK(r->converged);
  // The recommended specs replay to the same answer.
  auto again = quota::replay(s.nodes, r->recommended, s.workload, quota::ReplayOptions{});
  REQUIRE(again.is_ok());
  CHECK(quota::metrics_of(*again, 4).queues[0].pending_max == 0);
  // Of the candidates that meet it, the one closest to the input is first: a at exactly 3 GPUs,
  // taken from b's 3, as the quotas already add up to the cluster's 4; weights as given.
  CHECK(best.settings[0].gpu_quota == 3000);
  CHECK(best.settings[1].gpu_quota == 1000);
  CHECK(best.settings[0].gpu_weight == s.specs[0].resource(queues::Resource::kGpu).over_quota_weight);
  for (const auto& c : r->candidates) CHECK(c.settings[0].gpu_quota + c.settings[1].gpu_quota <= 4000);

  // With oversubscription allowed, the closest answer keeps b's quota and adds to a's.
  auto options = deterministic(2);
  options.oversubscribe = true;
  auto over = quota::tune(s.nodes, s.specs, s.workload, objective, options);
  REQUIRE(over.is_ok());
  CHECK(over->candidates.front().settings[0].gpu_quota == 3000);
  CHECK(over->candidates.front().settings[1].gpu_quota == 3000);
}

TEST_CASE("tune: an objective no quota can meet is reported with the closest candidate") {
  Scenario s;
  // Two 4-GPU pods of a on a 4-GPU node: the second waits 100 s whatever the quotas.
  s.workload.pods = {non_preemptible(whole_gpu("a1", "a", 0, 100, 4)), non_preemptible(whole_gpu("a2", "a", 0, 100, 4))};
  const auto objective = s.objective("max pending of a <= 10s");
  auto r = quota::tune(s.nodes, s.specs, s.workload, objective, deterministic(2));
  REQUIRE_MESSAGE(r.is_ok(), r.status().message());
  const quota::Candidate& best = r->candidates.front();
  CHECK_FALSE(best.score.feasible());
  CHECK(best.metrics.queues[0].pending_max == 100);  // as close as it gets
  CHECK(best.score.violation == doctest::Approx(9.0));  // (100 − 10) ÷ 10
  const auto v = quota::violations(objective, best.metrics);
  REQUIRE(v.size() == 1);
  CHECK(v[0].find("max pending (s) of a 100 > 10") != std::string::npos);
  const std::string table = tune_table(*r);
  CHECK(table.find("CANNOT be met") != std::string::npos);
}

TEST_CASE("tune: an input promising more than the cluster is shown, never recommended") {
  // a unlimited (counts as all 4 GPUs) + b 3 = 7 on a 4-GPU node; b's four non-preemptible pods
  // need b's quota at 4, so the only allowed answer is a 0, b 4.
  Scenario s;
  s.specs = {gpu_queue("a", -1), gpu_queue("b", 3)};
  s.workload.pods.clear();
  for (int i = 0; i < 4; ++i) s.workload.pods.push_back(non_preemptible(whole_gpu(fmt::format("b{}", i), "b", 0, 100)));
  auto r = quota::tune(s.nodes, s.specs, s.workload, s.objective("max pending of b <= 0s"), deterministic(2));
  REQUIRE_MESSAGE(r.is_ok(), r.status().message());
  CHECK(r->input.not_allowed == "quotas add up to 7 GPUs, more than the cluster's 4");
  const quota::Candidate& best = r->candidates.front();
  CHECK(best.not_allowed.empty());
  CHECK(best.score.feasible());
  CHECK(best.settings[0].gpu_quota == 0);
  CHECK(best.settings[1].gpu_quota == 4000);
  for (const auto& c : r->candidates) {
    if (c.settings != r->input.settings) CHECK(c.not_allowed.empty());  // only the input may be out of bounds
  }
  CHECK(r->candidates.back().settings == r->input.settings);  // ranked last
}

TEST_CASE("tune: a spent budget stops the search between rounds and says so") {
  Scenario s;
  quota::TuneOptions options;
  options.budget_seconds = 1e-9;  // spent once the two start points are replayed
  auto r = quota::tune(s.nodes, s.specs, s.workload, s.objective("max pending of a <= 0s"), options);
  REQUIRE(r.is_ok());
  CHECK(r->budget_ran_out);
  CHECK_FALSE(r->converged);
  CHECK(r->rounds == 0);
  CHECK(r->evaluated == 2);  // the input and the demand-proportional start
  CHECK(tune_table(*r).find("stopped by the time budget (--budget)") != std::string::npos);
}

TEST_CASE("tune: the same answer with one worker or two") {
  Scenario s;
  const auto objective = s.objective("p95 pending of a <= 50s, then minimise gpu-hours of b");
  auto counted = deterministic(1);
  std::size_t calls = 0, last_replayed = 0;
  counted.on_round = [&](std::size_t round, std::size_t replayed, const quota::Candidate&, double) {
    CHECK(round == ++calls);
    CHECK(replayed >= last_replayed);
    last_replayed = replayed;
  };
  auto one = quota::tune(s.nodes, s.specs, s.workload, objective, counted);
  REQUIRE(one.is_ok());
  CHECK(calls == one->rounds);  // one progress report per round
  auto two = quota::tune(s.nodes, s.specs, s.workload, objective, deterministic(2));
  REQUIRE(one.is_ok());
  REQUIRE(two.is_ok());
  REQUIRE(one->candidates.size() == two->candidates.size());
  for (std::size_t k = 0; k < one->candidates.size(); ++k) {
    CHECK(one->candidates[k].settings == two->candidates[k].settings);
    CHECK(one->candidates[k].score.violation == two->candidates[k].score.violation);
  }
}

TEST_CASE("tune: settings go to the leaves; parents sum them; finite CPU quotas follow the GPU share") {
  auto leaf = [](const std::string& name, const std::string& parent, double gpu, std::int64_t cpu_quota) {
    queues::QueueSpec q = gpu_queue(name, gpu);
    q.parent = parent;
    q.resource(queues::Resource::kCpu).quota = cpu_quota;
    return q;
  };
  std::vector<queues::QueueSpec> specs{leaf("dept", "", 4, queues::kUnlimited), leaf("x", "dept", 2, 32000),
                                       leaf("y", "dept", 2, queues::kUnlimited), leaf("z", "", 0, 0)};
  const auto nodes = one_node(4);  // 4 GPUs, 64 CPUs
  auto out = quota::apply_settings(specs, {"x", "y", "z"}, {{1000, 500}, {2000, 3000}, {1000, 1000}}, nodes, true);
  REQUIRE(out.size() == 4);
  CHECK(out[1].resource(queues::Resource::kGpu).quota == 1000);
  CHECK(out[1].resource(queues::Resource::kGpu).over_quota_weight == 500);
  CHECK(out[1].resource(queues::Resource::kCpu).quota == 16000);  // 1 of 4 GPUs → a quarter of 64 CPUs
  CHECK(out[2].resource(queues::Resource::kCpu).quota == queues::kUnlimited);  // unlimited stays
  CHECK(out[3].resource(queues::Resource::kCpu).quota == 0);  // zero stays zero
  CHECK(out[0].resource(queues::Resource::kGpu).quota == 3000);  // dept = x + y
  auto kept = quota::apply_settings(specs, {"x", "y", "z"}, {{1000, 500}, {2000, 3000}, {1000, 1000}}, nodes, false);
  CHECK(kept[1].resource(queues::Resource::kCpu).quota == 32000);
  auto lw = quota::leaves_and_weights(specs);
  REQUIRE(lw.is_ok());
  CHECK(lw->first == std::vector<std::string>{"x", "y", "z"});
  CHECK(lw->second == std::vector<double>{1, 1, 1});
}

TEST_CASE("tune: recommended Queue objects drop server fields, carry the tuned terms and read back unchanged") {
  auto objects = k8s::read_objects(R"(
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata:
  name: a
  resourceVersion: "123"
  uid: 0b9c
  creationTimestamp: "2026-01-01T00:00:00Z"
  annotations: {kubectl.kubernetes.io/last-applied-configuration: "{}", team: "007"}
  labels: {owner: "true"}
spec:
  displayName: "Team A: inference"
  resources:
    gpu: {quota: 1, limit: -1, overQuotaWeight: 1}
    cpu: {quota: 8000, limit: -1, overQuotaWeight: 1}
    memory: {quota: -1, limit: -1, overQuotaWeight: 1}
status: {allocated: {gpu: "1"}}
)", "queues.yaml");
  REQUIRE(objects.is_ok());
  queues::QueueSpec tuned = gpu_queue("a", 2.5, 1.5);
  tuned.resource(queues::Resource::kCpu).quota = 20000;
  const auto out = recommended_queue_objects(*objects, {tuned});
  REQUIRE(out.size() == 1);
  const auto& q = out[0];
  CHECK_FALSE(q.contains("status"));
  CHECK_FALSE(q["metadata"].contains("resourceVersion"));
  CHECK_FALSE(q["metadata"].contains("uid"));
  CHECK_FALSE(q["metadata"].contains("creationTimestamp"));
  CHECK(q["metadata"]["annotations"] == nlohmann::json{{"team", "007"}});
  CHECK(q["spec"]["displayName"] == "Team A: inference");
  CHECK(q["spec"]["resources"]["gpu"]["quota"] == 2.5);
  CHECK(q["spec"]["resources"]["gpu"]["overQuotaWeight"] == 1.5);
  CHECK(q["spec"]["resources"]["cpu"]["quota"] == 20000);
  CHECK(q["spec"]["resources"]["memory"]["quota"] == -1);
  // YAML out, objects back in: strings that look like numbers or booleans stay strings.
  auto back = k8s::read_objects(k8s::to_yaml(out), "out.yaml");
  REQUIRE_MESSAGE(back.is_ok(), back.status().message());
  REQUIRE(back->size() == 1);
  CHECK((*back)[0]["metadata"] == q["metadata"]);
  CHECK((*back)[0]["metadata"]["annotations"]["team"] == "007");
  CHECK((*back)[0]["metadata"]["labels"]["owner"] == "true");
  CHECK((*back)[0]["spec"]["displayName"] == "Team A: inference");
  CHECK((*back)[0]["spec"]["resources"]["cpu"] == q["spec"]["resources"]["cpu"]);
  // And the queue decodes to what was recommended.
  auto decoded = queues::decode_queue((*back)[0]);
  REQUIRE(decoded.is_ok());
  CHECK(decoded->resource(queues::Resource::kGpu).quota == 2500);
  CHECK(decoded->resource(queues::Resource::kGpu).over_quota_weight == 1500);
}

TEST_CASE("tune: --node-fraction keeps nodes spread over the list") {
  std::vector<NodeSpec> nodes;
  for (int i = 0; i < 10; ++i) nodes.push_back(nvf(fmt::format("n{}", i), 1, 20000).spec());
  auto some = sample_nodes(nodes, 0.3);
  REQUIRE(some.is_ok());
  REQUIRE(some->size() == 3);
  CHECK((*some)[0].name == "n3");
  CHECK((*some)[1].name == "n6");
  CHECK((*some)[2].name == "n9");
  CHECK(sample_nodes(nodes, 1.0)->size() == 10);
  CHECK(sample_nodes(nodes, 0.05).status().message().find("keeps none of the 10 nodes") != std::string::npos);
  CHECK_FALSE(sample_nodes(nodes, 0).is_ok());
}

TEST_CASE("tune: the command exits 0 when met, 1 when not, 2 for bad input, and writes queues.yaml") {
  const QuotaFiles files = quota_files("qt", 4,
                                        "p1,1000,1024,1,1000,,LS,Running,0,100,0\n"
                                        "p2,1000,1024,1,1000,,LS,Running,0,100,0\n"
                                        "p3,1000,1024,1,1000,,BE,Running,0,5000,0\n",
                                        1, 3);
  const auto out = std::filesystem::temp_directory_path() / fmt::format("fracpack-qt-out-{}", getpid());
  QuotaTuneOptions o;
  o.nodes = files.nodes.string();
  o.queues = files.queues.string();
  o.pods = files.pods.string();
  o.rules = files.rules.string();
  o.objective = "max pending of a <= 0s";
  o.budget_seconds = 0;
  o.max_rounds = 20;
  o.out = out.string();
  REQUIRE(run_quota_tune(o) == 0);
  auto written = k8s::read_objects_file((out / "queues.yaml").string());
  REQUIRE_MESSAGE(written.is_ok(), written.status().message());
  REQUIRE(written->size() == 2);
  CHECK((*written)[0]["spec"]["resources"]["gpu"]["quota"] == 2);  // two non-preemptible pods at once
  CHECK(std::filesystem::exists(out / "candidates.csv"));
  CHECK(std::filesystem::exists(out / "recommended" / "queue-a.svg"));
  // Before (input/) and after (recommended/) on the same axes, the old quota drawn after.
  auto y_ticks = [](const std::string& svg) {  // the y axis' labels: text-anchor="end"
    std::vector<std::string> ticks;
    const std::regex tick("text-anchor=\"end\">([^<]*)</text>");
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), tick); it != std::sregex_iterator(); ++it) ticks.push_back((*it)[1]);
    return ticks;
  };
  const std::string before = read_file(out / "input" / "queue-a.svg");
  const std::string after = read_file(out / "recommended" / "queue-a.svg");
  REQUIRE(!before.empty());
  CHECK(y_ticks(before) == y_ticks(after));
  CHECK(y_ticks(after).size() >= 3);
  CHECK(after.find(">old quota (") != std::string::npos);
  CHECK(after.find(">new quota (2)<") != std::string::npos);
  CHECK(before.find("old quota") == std::string::npos);
  CHECK(after.find(">demand (allocated + pending)<") != std::string::npos);
  // allocated is the last line drawn: on top of the others.
  const auto allocated = after.find("<polyline fill=\"none\" stroke=\"#08306b\"");
  REQUIRE(allocated != std::string::npos);
  CHECK(after.find("<polyline", allocated + 1) == std::string::npos);
  CHECK(read_file(out / "recommended" / "cluster.svg").find("Fragmentation of idle GPU: the share") != std::string::npos);
  std::filesystem::remove_all(out);

  QuotaTuneOptions impossible = o;
  impossible.out.clear();
  impossible.objective = "never started of a <= 0, max pending of b <= 0";
  impossible.pods = trace_pods("qt-pods2.csv",
                               "p1,1000,1024,8,1000,,LS,Running,0,100,0\n"
                               "p3,1000,1024,1,1000,,BE,Running,0,5000,0\n")
                        .string();
  CHECK(run_quota_tune(impossible) == 1);  // 8 GPUs on a 4-GPU node: never startable

  QuotaTuneOptions bad = o;
  bad.out.clear();
  bad.objective = "p95 pending of nobody <= 1s";
  CHECK(run_quota_tune(bad) == 2);
  QuotaTuneOptions unwritable = o;
  unwritable.out = "/proc/fracpack-cannot-write-here";  // refused before the search, not after
  CHECK(run_quota_tune(unwritable) == 2);
  QuotaTuneOptions no_gpus = o;
  no_gpus.out.clear();
  no_gpus.nodes = temp_file("qt-cpu-nodes.csv", "sn,cpu_milli,memory_mib,gpu,model\nc0,64000,262144,0,\n").string();
  CHECK(run_quota_tune(no_gpus) == 2);
  QuotaTuneOptions no_pods = o;
  no_pods.out.clear();
  no_pods.pods = trace_pods("qt-no-pods.csv", "").string();
  CHECK(run_quota_tune(no_pods) == 2);
}

TEST_CASE("tune command line: --keep-cpu-memory leaves finite CPU quotas, without it they follow the GPU share") {
  const QuotaFiles files = quota_files("qt-cli", 4,
                                       "p1,1000,1024,1,1000,,LS,Running,0,100,0\n"
                                       "p2,1000,1024,1,1000,,LS,Running,0,100,0\n"
                                       "p3,1000,1024,1,1000,,BE,Running,0,5000,0\n",
                                       1, 3);
  // Queue a gets a finite CPU quota of 8 cores.
  std::string text = read_file(files.queues);
  text.replace(text.find("cpu: {quota: -1"), 15, "cpu: {quota: 8000");
  std::ofstream(files.queues) << text;
  auto cpu_quota_of_a = [&](const std::string& extra) {
    const auto out = std::filesystem::temp_directory_path() / fmt::format("fracpack-qt-cli-{}", getpid());
    std::filesystem::remove_all(out);
    const std::string command = fmt::format(
        "'{}' quota tune --nodes '{}' --queues '{}' --pods '{}' --rules '{}' --objective 'max pending of a <= 0s' --budget 0 "
        "--max-rounds 10 --out '{}' {} > /dev/null 2>&1",
        FRACPACK_BINARY, files.nodes.string(), files.queues.string(), files.pods.string(), files.rules.string(), out.string(), extra);
    REQUIRE(std::system(command.c_str()) == 0);
    auto written = k8s::read_objects_file((out / "queues.yaml").string());
    REQUIRE(written.is_ok());
    std::filesystem::remove_all(out);
    REQUIRE((*written)[0]["metadata"]["name"] == "a");
    CHECK((*written)[0]["spec"]["resources"]["gpu"]["quota"] == 2);  // two non-preemptible pods at once
    return (*written)[0]["spec"]["resources"]["cpu"]["quota"];
  };
  CHECK(cpu_quota_of_a("--keep-cpu-memory") == 8000);
  CHECK(cpu_quota_of_a("") == 32000);  // 2 of the node's 4 GPUs → half of its 64 cores
}

}  // namespace
}  // namespace fracpack::test

namespace fracpack::test {
namespace {

std::string quota_command(const QuotaFiles& files, const std::string& verb, const std::string& extra) {
  return fmt::format("'{}' quota {} --nodes '{}' --queues '{}' --pods '{}' --rules '{}' {}", FRACPACK_BINARY, verb,
                     files.nodes.string(), files.queues.string(), files.pods.string(), files.rules.string(), extra);
}

TEST_CASE("quota tune -o yaml writes only Queue objects to stdout, for kubectl apply; nothing when not met") {
  const QuotaFiles files = quota_files("qt-o", 4,
                                       "p1,1000,1024,1,1000,,LS,Running,0,100,0\n"
                                       "p2,1000,1024,1,1000,,LS,Running,0,100,0\n"
                                       "p3,1000,1024,1,1000,,BE,Running,0,5000,0\n",
                                       1, 3);
  const std::string search = "--budget 0 --max-rounds 10";
  auto [yaml, met] = output_of(quota_command(files, "tune", "--objective 'max pending of a <= 0s' " + search + " -o yaml 2>/dev/null"));
  CHECK(met == 0);
  auto objects = k8s::read_objects(yaml, "stdout");
  const std::string why = objects.is_ok() ? "" : objects.status().message() + "\n" + yaml;
  REQUIRE_MESSAGE(objects.is_ok(), why);
  REQUIRE(objects->size() == 2);
  for (const auto& o : *objects) {
    CHECK(o["kind"] == "Queue");
    CHECK(queues::decode_queue(o).is_ok());  // what kubectl apply would be given decodes strictly
  }
  CHECK((*objects)[0]["spec"]["resources"]["gpu"]["quota"] == 2);

  // The report went to stderr; stdout held YAML alone.
  auto [report, code] = output_of(quota_command(files, "tune", "--objective 'max pending of a <= 0s' " + search + " -o yaml 2>&1 >/dev/null"));
  CHECK(code == 0);
  CHECK(report.find("| candidate |") != std::string::npos);
  CHECK(report.find("Every metric per queue, the Queue file → each candidate") != std::string::npos);
  CHECK(report.find('\r') == std::string::npos);  // stderr is a pipe here: no progress line redrawn

  // 8 GPUs on a 4-GPU node: never startable, so no quota meets it.
  const QuotaFiles never = quota_files("qt-o-never", 4,
                                       "p1,1000,1024,8,1000,,LS,Running,0,100,0\n"
                                       "p3,1000,1024,1,1000,,BE,Running,0,5000,0\n",
                                       1, 3);
  const std::string impossible = "--objective 'never started of a <= 0, max pending of b <= 0' " + search;
  auto [none, unmet] = output_of(quota_command(never, "tune", impossible + " -o yaml 2>/dev/null"));
  CHECK(unmet == 1);
  CHECK(none.empty());
  auto [table, unmet_table] = output_of(quota_command(never, "tune", impossible + " 2>/dev/null"));
  CHECK(unmet_table == 1);
  CHECK(table.find("Recommended") == std::string::npos);
  CHECK(table.find("No recommendation: the objective is not met. The closest candidate's Queue objects") != std::string::npos);

  auto [json_text, json_code] = output_of(quota_command(never, "tune", impossible + " -o json 2>/dev/null"));
  CHECK(json_code == 1);
  auto doc = nlohmann::json::parse(json_text, nullptr, false);
  REQUIRE_FALSE(doc.is_discarded());
  CHECK(doc["met"] == false);
  CHECK_FALSE(doc.contains("recommended"));
  REQUIRE_FALSE(doc["candidates"].empty());
  CHECK_FALSE(doc["candidates"][0]["violations"].empty());
  CHECK(doc["input"]["queues"].size() == 2);
}

TEST_CASE("quota replay -o json and -o yaml print the table's numbers as one document") {
  const QuotaFiles files = quota_files("qr-o", 4,
                                       "p1,1000,1024,1,1000,,LS,Running,0,100,0\n"
                                       "p3,1000,1024,1,1000,,BE,Running,0,5000,0\n",
                                       1, 3);
  auto [json_text, code] = output_of(quota_command(files, "replay", "-o json 2>/dev/null"));
  REQUIRE(code == 0);
  auto doc = nlohmann::json::parse(json_text, nullptr, false);
  REQUIRE_FALSE(doc.is_discarded());
  CHECK(doc["kind"] == "QuotaReplay");
  REQUIRE(doc["queues"].size() == 2);
  CHECK(doc["queues"][0]["queue"] == "a");
  CHECK(doc["queues"][0]["started"] == 1);
  CHECK(doc["queues"][0]["pendingSeconds"]["max"] == 0);
  auto [yaml, yaml_code] = output_of(quota_command(files, "replay", "-o yaml 2>/dev/null"));
  REQUIRE(yaml_code == 0);
  auto back = k8s::read_objects(yaml, "stdout");
  REQUIRE_MESSAGE(back.is_ok(), back.status().message());
  CHECK((*back)[0]["queues"][1]["queue"] == "b");  // decimals stay text in YAML (object_stream.hpp), so not ==
  CHECK((*back)[0]["queues"][1]["started"] == doc["queues"][1]["started"]);
  CHECK((*back)[0]["cycles"] == doc["cycles"]);
  auto [table, table_code] = output_of(quota_command(files, "replay", "-o table 2>/dev/null"));
  CHECK(table_code == 0);
  CHECK(table.starts_with("Replayed "));
}

}  // namespace
}  // namespace fracpack::test
