// Reclaim end to end through the real kube-scheduler v1.35.4 (kube-rig 1.35), whose preemption
// asks fracpack's Preempt verb which pods to evict (v1.20 never asks): a queue under its quota
// gets its GPU back from a sibling that borrowed it under a common parent — kube-scheduler deletes
// the victim fracpack names, and the waiting pod binds where it ran. A gang reclaims as a whole
// job (docs/queues.md rule 12, item 7): whole running jobs go, and all its members bind.
#include <set>

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

json running_pod(const std::string& name, const std::string& queue, const std::string& start, const std::string& node = "gpu-0") {
  json p = gpu_pod(name, 1, queue);
  p["metadata"]["uid"] = "uid-" + name;
  p["spec"]["nodeName"] = node;
  p["status"] = {{"phase", "Running"}, {"startTime", start}};
  return p;
}

/// Waits until fracpack's watch holds every running pod: kube-scheduler asks Preempt once per
/// failed attempt, and retries only on a cluster event, so a Preempt answered before the watch
/// showed the victims would leave the pod waiting (noted on issue 38).
void caught_up(Cluster& c) {
  REQUIRE_MESSAGE(KubeRig::wait_until([&] { return c.held() == c.truth(); }, std::chrono::seconds(30)),
                  "fracpack holds " << json(c.held()).dump() << "; the API server has " << json(c.truth()).dump());
}

json pod_group(const std::string& name, const std::string& queue, int min_member) {
  return {{"apiVersion", "scheduling.run.ai/v2alpha2"},
          {"kind", "PodGroup"},
          {"metadata", {{"name", name}, {"namespace", "default"}}},
          {"spec", {{"minMember", min_member}, {"queue", queue}}}};
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
  caught_up(c);
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

TEST_CASE("a gang of 4 x 1 GPU under its quota reclaims whole jobs from an over-quota sibling: all four bind") {
  auto rig = require_kube_rig_135();
  if (!rig) return;
  // Four nodes of 2 GPUs, all held by q1 (quota 4, holding 8): four running gangs of 2, one per
  // node, r3 the youngest. q0 (quota 4, holding 0) submits a gang of 4 x 1 GPU.
  std::vector<json> objects{queue_object("dept", "", 8), queue_object("q0", "dept", 4), queue_object("q1", "dept", 4),
                            pod_group("train", "q0", 4)};
  for (int n = 0; n < 4; ++n) {
    objects.push_back(nvf(fmt::format("gpu-{}", n), 2, 81920).obj);
    const std::string job = fmt::format("r{}", n);
    objects.push_back(pod_group(job, "q1", 2));
    for (const char* part : {"a", "b"}) {
      json p = running_pod(job + "-" + part, "q1", fmt::format("2026-01-01T1{}:00:00Z", n), fmt::format("gpu-{}", n));
      p["metadata"]["annotations"]["pod-group-name"] = job;
      objects.push_back(p);
    }
  }
  Cluster::Options options;
  options.scheduler_config = kPreemptingScheduler;
  Cluster c(*rig, objects, options);
  caught_up(c);
  for (int i = 0; i < 4; ++i) {
    json p = gpu_pod(fmt::format("train-{}", i), 1, "q0");
    p["metadata"]["annotations"]["pod-group-name"] = "train";
    p["spec"]["priorityClassName"] = "build-preemptible";  // kube-scheduler offers lower-priority pods only
    REQUIRE(c.api().create(p) == 201);
  }
  REQUIRE_MESSAGE(KubeRig::wait_until([&] {
    for (int i = 0; i < 4; ++i) {
      if (c.api().node_of(fmt::format("default/train-{}", i)).empty()) return false;
    }
    return true;
  }, std::chrono::seconds(60)), "not all of train bound; " << c.api().failed_scheduling("default/train-0"));
  const auto truth = c.truth();
  // The two youngest jobs went whole (r3, r2); the older ones kept both their pods.
  for (const char* gone : {"default/r3-a", "default/r3-b", "default/r2-a", "default/r2-b"}) CHECK(truth.count(gone) == 0);
  for (const char* kept : {"default/r0-a", "default/r0-b", "default/r1-a", "default/r1-b"}) CHECK(truth.count(kept) == 1);
  std::set<std::string> nodes;
  for (int i = 0; i < 4; ++i) nodes.insert(truth.at(fmt::format("default/train-{}", i)));
  CHECK(nodes == std::set<std::string>{"gpu-2", "gpu-3"});
  // kube-scheduler offers the fewest pods that make room for one member on a node (one of a
  // job's two); fracpack deletes the rest of each victim job itself, unless kube-scheduler's
  // preemption for another member got there first (without that, the gang never binds).
  c.converged();
}

}  // namespace
}  // namespace fracpack::test
