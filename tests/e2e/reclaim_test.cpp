// Reclaim end to end through the real kube-scheduler v1.35.4 (kube-rig 1.35), whose preemption
// asks fracpack's Preempt verb which pods to evict (v1.20 never asks): a queue under its quota
// gets its GPU back from a sibling that borrowed it under a common parent — kube-scheduler deletes
// the victim fracpack names, and the waiting pod binds where it ran.
#include <doctest/doctest.h>

#include "support/builders.hpp"
#include "support/e2e_cluster.hpp"
#include "support/require_kube_rig.hpp"

namespace fracpack::test {
namespace {

/// kube-scheduler v1.35's configuration: fracpack as filter, prioritize, bind and preempt
/// extender of the kai-scheduler profile, DefaultPreemption on (v1's default).
constexpr const char* kPreemptingScheduler = R"(apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
percentageOfNodesToScore: 100
profiles:
  - schedulerName: kai-scheduler
extenders:
  - urlPrefix: "{fracpack}"
    filterVerb: filter
    prioritizeVerb: prioritize
    bindVerb: bind
    preemptVerb: preempt
    weight: 10
    enableHTTPS: false
    nodeCacheCapable: true
    ignorable: false
    httpTimeout: 50s
)";

json running_pod(const std::string& name, const std::string& queue, const std::string& start) {
  json p = gpu_pod(name, 1, queue);
  p["metadata"]["uid"] = "uid-" + name;
  p["spec"]["nodeName"] = "gpu-0";
  p["status"] = {{"phase", "Running"}, {"startTime", start}};
  return p;
}

TEST_CASE("kube-scheduler v1.35 preempts the victim fracpack names: q0's youngest pod, and q1's pod binds in its place") {
  auto rig = require_kube_rig_135();
  if (!rig) return;
  std::vector<json> objects{nvf("gpu-0", 2, 81920).obj, queue_object("dept", "", 2), queue_object("q0", "dept", 1),
                            queue_object("q1", "dept", 1), running_pod("old", "q0", "2026-01-01T10:00:00Z"),
                            running_pod("young", "q0", "2026-01-01T11:00:00Z")};
  Cluster::Options options;
  options.scheduler_config = kPreemptingScheduler;
  Cluster c(*rig, objects, options);
  json wants = gpu_pod("wants", 1, "q1");
  wants["spec"]["priorityClassName"] = "build-preemptible";  // kube-scheduler offers lower-priority pods only
  REQUIRE(c.api().create(wants) == 201);
  REQUIRE_MESSAGE(KubeRig::wait_until([&] { return c.api().node_of("default/wants") == "gpu-0"; }, std::chrono::seconds(40)),
                  "wants is not bound; " << c.api().failed_scheduling("default/wants"));
  const auto truth = c.truth();
  CHECK(truth.count("default/young") == 0);  // the victim is gone
  CHECK(truth.count("default/old") == 1);    // the older pod of the same priority stays
  // kube-scheduler asked fracpack: without its answer (before issue 38, none) nothing is evicted.
  const json metrics = c.fracpack_get("/metrics");
  REQUIRE(metrics.is_string());
  CHECK(metrics.get<std::string>().find(R"(fracpack_requests_total{front="http",verb="preempt",code="200"})") != std::string::npos);
  c.converged();
}

}  // namespace
}  // namespace fracpack::test
