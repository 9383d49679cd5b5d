// `fracpack bench density` input checks: every bad flag is refused before any run, naming the flag.
#include <doctest/doctest.h>

#include <fstream>

#include "fracpack/sim/density.hpp"
#include "fracpack/sim/density_job.hpp"
#include "fracpack/server/extender.hpp"
#include "fracpack/sim/place_job.hpp"
#include "fracpack/sim/workload_file.hpp"
#include "support/builders.hpp"
#include "support/temp_files.hpp"

namespace fracpack::test {
namespace {


TEST_CASE("density job: seeds as ranges and lists, with every mistake named") {
  CHECK(*parse_seeds("42-44, 50") == std::vector<std::uint64_t>{42, 43, 44, 50});
  CHECK(*parse_seeds("7") == std::vector<std::uint64_t>{7});
  const std::vector<std::pair<std::string, std::string>> bad{
      {"51-42", "range 51-42 runs backwards"},
      {"abc", "\"abc\" is not a seed"},
      {"-5", "\"-5\" is not a seed"},
      {"1-2-3", "\"1-2-3\" is not a seed"},
      {"", "no seed given"},
      {"42,42", "seed 42 is listed twice"},
      {"1-5,3", "seed 3 is listed twice"},
      {"1-100000", "more than 10000 seeds"},
      {"0-5000,6000-11000", "more than 10000 seeds"},
  };
  for (const auto& [text, message] : bad) {
    CAPTURE(text);
    auto s = parse_seeds(text);
    REQUIRE_FALSE(s.is_ok());
    CHECK(s.status().message().rfind("--seeds: ", 0) == 0);
    CHECK_MESSAGE(s.status().message().find(message) != std::string::npos, s.status().message());
  }
}

TEST_CASE("density job: policies by our names or the study's labels, each once") {
  CHECK(*parse_policy_list("FGD, BestFit,fgd-lp") == std::vector<std::string>{"fgd", "study-best-fit", "fgd-lp"});
  // An unknown name is refused here, before any trace is read, with the list of known ones.
  for (const char* text : {"fgd-lp,nonsense", "05-BestFit-x"}) {
    auto unknown = parse_policy_list(text);
    REQUIRE_FALSE(unknown.is_ok());
    CHECK(unknown.status().message().rfind("--policy: unknown policy \"", 0) == 0);
    CHECK(unknown.status().message().find("fgd-lp") != std::string::npos);
  }
  CHECK(*parse_policy_list("06-FGD,fgd-cpu,DotProd") == std::vector<std::string>{"fgd", "fgd-cpu", "dot-product"});
  auto twice = parse_policy_list("fgd,06-FGD");
  REQUIRE_FALSE(twice.is_ok());
  CHECK(twice.status().message() == "--policy: fgd is listed twice (\"06-FGD\" names it again)");
  CHECK_FALSE(parse_policy_list(" , ").is_ok());
}

TEST_CASE("density job: bad --out, --published, --tune or policy fail before any run") {
  const auto nodes = temp_file("nodes.csv", "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,2,T4\n");
  const auto pods = temp_file("pods.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\na,1000,1024,1,500\n");
  DensityJobOptions base;
  base.nodes_csv = nodes.string();
  base.pods_csv = pods.string();
  base.seeds = "1";
  base.progress = false;
  base.out_dir = (std::filesystem::temp_directory_path() / fmt::format("fracpack-job-out-{}", getpid())).string();
  CHECK(run_density_job(base) == 0);
  CHECK(std::filesystem::exists(std::filesystem::path(base.out_dir) / "allo.csv"));

  auto with = [&](auto change) {
    DensityJobOptions o = base;
    change(o);
    return run_density_job(o);
  };
  CHECK(with([&](DensityJobOptions& o) { o.out_dir = nodes.string(); }) == 2);  // a file is in the way
  CHECK(with([&](DensityJobOptions& o) { o.out_dir = "/proc/fracpack-x"; }) == 2);
  CHECK(with([&](DensityJobOptions& o) { o.published = nodes.string(); }) == 2);  // not the published layout
  CHECK(with([&](DensityJobOptions& o) { o.tune = 0; }) == 2);
  CHECK(with([&](DensityJobOptions& o) { o.policies = "nonsense"; }) == 2);
  CHECK(with([&](DensityJobOptions& o) { o.pods_csv = temp_file("cpu.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\nc,1,1,0,0\n").string(); }) == 2);
  std::filesystem::remove_all(base.out_dir);
}

TEST_CASE("density: pods that can never run are reported before the runs") {
  const auto nodes = temp_file("n2.csv", "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,2,T4\n");
  const auto pods = temp_file("p2.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\na,1000,1024,1,500,A10\nb,1000,1024,1,500,\n");
  auto trace = density::load_trace(nodes, pods);
  REQUIRE(trace.is_ok());
  auto warnings = density::trace_warnings(*trace);
  REQUIRE(warnings.size() == 1);
  CHECK_MESSAGE(warnings[0].find("1 of 2 pods (50.0 % of the list's GPU demand) fit no node") == 0, warnings[0]);
}

}  // namespace
}  // namespace fracpack::test

namespace fracpack::test {
namespace {

TEST_CASE("fgd, fgd-cpu and fgd-lp outside the harness: place takes the workload from its pods, serve from --workload") {
  // place: the half-GPU pod completes the half-used GPU under each (the workload: these pods).
  std::vector<json> objects{nvf("a", 2, 20000).obj, nvf("b", 2, 20000).obj,
                            PodBuilder("half").fraction("0.5").bound_to("b").annotation("nvidia.com/container.main.gpus.devices", "1").obj,
                            PodBuilder("p").fraction("0.5").obj, PodBuilder("w").whole(1).obj};
  for (const char* name : {"fgd", "fgd-cpu", "fgd-lp"}) {
    CAPTURE(name);
    PlaceOptions options;
    options.policy = name;
    auto report = run_place(k8s::with_origins(objects, "test"), options);
    REQUIRE_MESSAGE(report.is_ok(), report.status().message());
    bool found = false;
    for (const auto& p : report->placements) {
      if (p.pod != "default/p") continue;
      found = true;
      CHECK(p.node == "b");
      CHECK(p.choice.gpus == std::vector<int>{1});
    }
    CHECK(found);
  }

  // serve: without a workload the policy is refused with what to give; with one it filters.
  ExtenderOptions without;
  without.policy = "fgd-cpu";
  auto refused = Extender::open(without);
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.status().message().find("--workload FILE") != std::string::npos);

  const auto csv = temp_file("workload.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\nx,1000,1024,1,500\ny,1000,1024,1,1000\n");
  auto workload = read_workload(csv.string());
  REQUIRE_MESSAGE(workload.is_ok(), workload.status().message());
  CHECK(workload->size() == 2);
  const auto yaml = temp_file("workload.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: s}\nspec:\n  containers:\n"
                                               "  - name: main\n    resources: {requests: {cpu: '1'}}\n"
                                               "---\napiVersion: v1\nkind: Node\nmetadata: {name: ignored}\n");
  CHECK_FALSE(read_workload(yaml.string()).is_ok());  // a CPU-only pod is no GPU workload
  // An invalid pod in a sample of shapes is left out with a warning when warnings are taken.
  const auto mixed = temp_file("workload-mixed.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: bad, annotations: {gpu-fraction: '2'}}\n"
                                                      "spec:\n  containers:\n  - name: main\n"
                                                      "---\napiVersion: v1\nkind: Pod\nmetadata: {name: good, annotations: {gpu-fraction: '0.5'}}\n"
                                                      "spec:\n  containers:\n  - name: main\n");
  CHECK(read_workload(mixed.string()).status().message().find("bad") != std::string::npos);
  std::vector<std::string> warnings;
  auto sampled = read_workload(mixed.string(), DecodeConfig{}, &warnings);
  REQUIRE_MESSAGE(sampled.is_ok(), sampled.status().message());
  CHECK(sampled->size() == 1);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("pod default/bad") != std::string::npos);
  CHECK(warnings[0].ends_with("left out of the target workload"));
  ExtenderOptions with;
  with.policy = "fgd-cpu";
  with.workload = std::make_shared<const std::vector<TypicalPod>>(*workload);
  auto core = Extender::open(with);
  REQUIRE_MESSAGE(core.is_ok(), core.status().message());
  REQUIRE((*core)->apply({nvf("a", 2, 20000).obj}, nullptr).is_ok());
  auto f = (*core)->filter(PodBuilder("q").fraction("0.5").obj, {"a"});
  REQUIRE(f.is_ok());
  CHECK(f->passed == std::vector<std::string>{"a"});
}

}  // namespace
}  // namespace fracpack::test
