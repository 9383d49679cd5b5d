// Reading generated scenarios, running one through `fracpack place`, and comparing the outcome
// with KAI's expected results (pkg/scheduler/test_utils/test_utils.go, MatchExpectedAndRealTasks).
#include <fstream>

#include <fmt/format.h>

#include "fracpack/k8s/object_stream.hpp"
#include "fracpack/sim/place_job.hpp"
#include "kai_conformance/kai_scenario.hpp"

namespace fracpack::test::kai {
namespace {

std::string base_name(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

TaskOutcome held(const std::string& status, const Placement& p) {
  return {status, p.node, p.choice.gpus, p.choice.hold == GpuHold::kFraction};
}

}  // namespace

std::string Scenario::id() const { return fmt::format("{}#{}", base_name(source), index); }

std::vector<Scenario> read_scenarios(const std::string& path) {
  std::ifstream in(path);
  const json file = json::parse(in);
  std::vector<Scenario> out;
  for (const json& s : file.at("scenarios")) {
    Scenario scenario;
    scenario.source = file.at("source").get<std::string>();
    scenario.action = file.at("action").get<std::string>();
    scenario.index = s.at("index").get<std::size_t>();
    scenario.line = s.value("line", 0);
    scenario.name = s.value("name", "");
    scenario.function = s.value("function", "");
    scenario.topology = s.at("topology");
    scenario.metadata = s.value("metadata", json::object());
    out.push_back(std::move(scenario));
  }
  return out;
}

std::map<std::string, TaskOutcome> run_through_place(const Translation& translation, const std::string& action) {
  std::map<std::string, TaskOutcome> out;
  for (const Task& t : translation.tasks) out[t.key] = {t.state == "Pending" ? "Pending" : t.state, "", {}, false};
  PlaceOptions options;
  auto actions = cycle::parse_actions(action);
  if (!actions) {
    for (auto& [key, o] : out) o.status = "Error: " + actions.status().message();
    return out;
  }
  options.actions = *actions;
  auto report = run_place(k8s::with_origins(translation.objects, "kai"), options);
  if (!report) {
    for (auto& [key, o] : out) o.status = "Error: " + report.status().message();
    return out;
  }
  for (const Placement& p : report->bound) out[p.pod] = held(out[p.pod].status, p);
  for (const Placement& p : report->placements) out[p.pod] = held("Binding", p);
  for (const NotPlaced& np : report->unschedulable) {
    if (!np.preemption) continue;
    out[np.pod] = {"Pipelined", np.preemption->node, {}, false};
    for (const std::string& victim : np.preemption->victims) out[victim].status = "Releasing";
    for (const Placement& m : np.preemption->moved) out[m.pod] = held("Pipelined", m);  // KAI pipelines a moved pod
  }
  for (const BindingConflict& c : report->conflicts) out[c.pod].status = "Conflict: " + c.reason;
  return out;
}

namespace {

/// KAI's check of one task against its expected result.
void compare_task(const Task& task, const json& expected, const std::map<std::string, TaskOutcome>& outcomes,
                  std::map<std::string, std::map<std::string, int>>& gpu_of_group, std::vector<std::string>& out) {
  const TaskOutcome& got = outcomes.at(task.key);
  const std::string want = expected.value("Status", "");
  if (got.status != want) out.push_back(fmt::format("{}: {} where KAI has {}", task.pod, got.status, want));
  const std::string node = expected.value("NodeName", "");
  if (!node.empty() && got.node != dns(node) && want != "Pending") out.push_back(fmt::format("{}: on node {} where KAI has {}", task.pod, got.node, node));
  // Shared tasks expected in one GPU group must share their GPU (KAI checks it only where the
  // task reports the expected group names; fracpack has indices, so the mapping is checked).
  const json& groups = expected.value("GPUGroups", json::array());
  const bool validate = !expected.value("DontValidateGPUGroup", false);
  if (!validate || !got.shared || groups.empty() || got.gpus.size() != groups.size()) return;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    auto [it, fresh] = gpu_of_group[got.node].try_emplace(groups[i].get<std::string>(), got.gpus[i]);
    if (!fresh && it->second != got.gpus[i]) {
      out.push_back(fmt::format("{}: on GPU {} where KAI puts GPU group {} (GPU {})", task.pod, got.gpus[i], it->first, it->second));
    }
  }
}

}  // namespace

std::vector<std::string> compare(const Scenario& scenario, const Translation& translation,
                                 const std::map<std::string, TaskOutcome>& outcomes) {
  std::vector<std::string> out;
  std::map<std::string, std::map<std::string, int>> gpu_of_group;  // node → expected group → GPU
  const json& jobs = scenario.topology.value("JobExpectedResults", json::object());
  for (const auto& [job, expected] : jobs.items()) {
    bool found = false;
    for (const Task& t : translation.tasks) {
      if (t.job != job) continue;
      found = true;
      compare_task(t, expected, outcomes, gpu_of_group, out);
    }
    if (!found) out.push_back(fmt::format("job {} is not in the scenario", job));
  }
  // A task KAI's test names that the scenario does not have is skipped, as KAI skips it.
  const json& tasks = scenario.topology.value("TaskExpectedResults", json::object());
  for (const auto& [pod, expected] : tasks.items()) {
    for (const Task& t : translation.tasks) {
      if (t.pod == pod) compare_task(t, expected, outcomes, gpu_of_group, out);
    }
  }
  return out;
}

}  // namespace fracpack::test::kai
