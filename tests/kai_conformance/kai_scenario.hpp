// One of KAI's action test scenarios (test_utils.TestTopologyBasic, as tests/kai_conformance/
// generator writes it) turned into the Kubernetes objects fracpack reads, and fracpack's outcome
// compared with what KAI's test expects. How KAI's test builder fills what a scenario leaves out
// (pkg/scheduler/test_utils: nodes_fake, jobs_fake, tasks_fake, test_utils_builder.go) is
// followed field by field; docs/kai-compatibility.md says what is and is not translated.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fracpack::test::kai {

using nlohmann::json;

/// One scenario of one KAI test file.
struct Scenario {
  std::string source;  ///< the KAI test file, e.g. pkg/scheduler/actions/reclaim/reclaim_test.go
  std::string action;  ///< allocate, reclaim, preempt, consolidation
  std::size_t index = 0;
  int line = 0;
  std::string name;
  std::string function;  ///< the Go function holding the literal
  json topology;  ///< the TestTopologyBasic literal
  json metadata;  ///< its TestTopologyMetadata siblings (RoundsUntilMatch, ...)

  /// "reclaim_test.go#12": how the difference lists name a scenario.
  [[nodiscard]] std::string id() const;
};

/// Every scenario of one generated file (tests/kai_conformance/scenarios/*.json).
std::vector<Scenario> read_scenarios(const std::string& path);

/// A KAI test name as a Kubernetes name (a DNS subdomain): lowercase, and '_' or any other
/// character outside [a-z0-9.-] becomes '-' ("q0_running_job0" → "q0-running-job0").
std::string dns(std::string name);

/// One task (pod) of the scenario: its job and the state it starts in.
struct Task {
  std::string job;
  std::string pod;    ///< KAI's task name "<job>-<index>"; fracpack's pod is dns() of it
  std::string key;    ///< "namespace/name"
  std::string state;  ///< KAI's pod_status: Pending, Running, ...
};

/// The scenario as Kubernetes objects, or why it cannot be.
struct Translation {
  std::vector<json> objects;  ///< Nodes, Queues, PodGroups, Pods
  std::vector<Task> tasks;
  /// What fracpack does not model, or KAI's builder does that has no Kubernetes form (MIG, DRA,
  /// NUMA, pods that are releasing, ...): empty when the scenario runs.
  std::vector<std::string> untranslated;
};

/// `now`: seconds since the epoch, what KAI's builder calls time.Now() (job ages, start times).
Translation translate(const Scenario& scenario, std::int64_t now);

/// What became of one task: KAI's pod_status name, and where it is.
struct TaskOutcome {
  std::string status;     ///< Running, Pending, Binding, Pipelined, Releasing
  std::string node;
  std::vector<int> gpus;  ///< device indices it holds when shared (fractions)
  bool shared = false;
};

/// Runs the scenario through `fracpack place` with KAI's action `action` alone (PlaceOptions::
/// actions), as KAI's test runs that action alone: every task's outcome by pod key. Placed pods
/// are Binding; a pod another action placed is Pipelined on its node, its victims Releasing and
/// the pods moved for it Pipelined where they move (KAI's statuses after those actions).
std::map<std::string, TaskOutcome> run_through_place(const Translation& translation, const std::string& action);

/// Where fracpack's outcome differs from the scenario's expected results (KAI's
/// MatchExpectedAndRealTasks: status of every task, node when named, the GPU groups a shared
/// task is expected on). Empty: they agree.
std::vector<std::string> compare(const Scenario& scenario, const Translation& translation,
                                 const std::map<std::string, TaskOutcome>& outcomes);

}  // namespace fracpack::test::kai
