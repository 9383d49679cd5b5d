// End to end through the real kube-scheduler (v1.20.5, in kube-rig) with `fracpack serve
// --kube-api` as its extender: the example workload lands where `fracpack place` puts it, or
// stays Pending with fracpack's reason in its FailedScheduling event; pods that finish or are
// deleted give their GPUs back to the next pods; pods another scheduler bound are adopted; a
// cordoned node is not chosen; a Queue edit changes admission; a dropped and compacted watch and a
// kill -9 of fracpack mid-burst both end with the ledger equal to the API server's truth.
#include <set>

#include <doctest/doctest.h>
#include <grpcpp/grpcpp.h>

#include "fracpack/k8s/object_stream.hpp"
#include "fracpack/sim/place_job.hpp"
#include "fracpack/v1/extender.grpc.pb.h"
#include "plugin_api/http_server.hpp"
#include "support/builders.hpp"
#include "support/device_agent.hpp"
#include "support/require_kube_rig.hpp"
#include "support/server_process.hpp"
#include "support/e2e_cluster.hpp"
#include "support/tls_files.hpp"

namespace fracpack::test {
namespace {

TEST_CASE("the example workload through kube-scheduler and fracpack ends where fracpack place puts it") {
  auto rig = require_kube_rig();
  if (!rig) return;
  std::vector<json> cluster = read_example("cluster.yaml");
  std::vector<json> workload = read_example("workload.yaml");
  std::vector<json> all = cluster;
  all.insert(all.end(), workload.begin(), workload.end());
  auto report = run_place(k8s::with_origins(all, "example"), PlaceOptions{});
  REQUIRE(report.is_ok());

  Cluster c(*rig, cluster);
  std::map<std::string, json> pods;
  std::set<std::string> namespaces;
  for (const auto& o : workload) {
    if (o["kind"] == "Pod") pods[key_of(o)] = o;
    namespaces.insert(o["metadata"].value("namespace", "default"));
  }
  for (const auto& ns : namespaces) c.api().create({{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}});
  for (const auto& o : workload) {
    if (o["kind"] == "PodGroup") REQUIRE(c.api().create(o) == 201);
  }
  // One pod at a time, in place's decision order: kube-scheduler then meets the same ledger. A
  // gang's members are created together (fracpack holds them back until the gang is whole).
  std::set<std::string> created;
  for (const auto& p : report->placements) {
    CAPTURE(p.pod);
    const json& object = pods.at(p.pod);
    const std::string gang = object["metadata"].value("annotations", json::object()).value("pod-group-name", "");
    for (const auto& [key, other] : pods) {
      const bool same_gang = !gang.empty() && other["metadata"].value("annotations", json::object()).value("pod-group-name", "") == gang;
      if ((key == p.pod || same_gang) && created.insert(key).second) REQUIRE(c.api().create(other) == 201);
    }
    REQUIRE_MESSAGE(KubeRig::wait_until([&] { return !c.api().node_of(p.pod).empty(); }, std::chrono::seconds(15)),
                    "not bound; its event: " << c.api().failed_scheduling(p.pod));
    CHECK(c.api().node_of(p.pod) == p.node);
    const json annotations = c.api().pod(p.pod)["metadata"].value("annotations", json::object());
    for (const auto& [k, v] : annotations.items()) {
      // The ledger's index: in fracpack.io/gpus behind a reservation pod (gpus.devices then names the
      // GPU it reported); in gpus.devices for a fraction beside the example's running ones, which
      // have no reservation pod.
      if (k.ends_with(".gpus.devices")) CHECK(annotations.value("fracpack.io/gpus", v.get<std::string>()) == fmt::format("{}", fmt::join(p.choice.gpus, ",")));
    }
    const json bindings_list = c.fracpack_get("/snapshot");  // a named copy: a temporary's member would dangle in the loop
    for (const auto& b : bindings_list["bindings"]) {
      if (b["pod"] == p.pod) CHECK(b["gpus"].get<std::vector<int>>() == p.choice.gpus);
    }
  }
  // The rest stay Pending, with fracpack's reason in their FailedScheduling event.
  for (const auto& np : report->unschedulable) {
    CAPTURE(np.pod);
    REQUIRE(c.api().create(pods.at(np.pod)) == 201);
    REQUIRE(KubeRig::wait_until([&] { return !c.api().failed_scheduling(np.pod).empty(); }, std::chrono::seconds(15)));
    const std::string event = c.api().failed_scheduling(np.pod);
    CAPTURE(event);
    CHECK(c.api().node_of(np.pod).empty());
    if (np.status == "OverLimit" || np.status == "NonPreemptibleOverQuota" || np.status == "Invalid") {
      // The queue's or the validation's words.
      std::string words = np.reason;
    if (const auto origin = words.rfind(" ("); origin != std::string::npos && words.find(", object ", origin) != std::string::npos) {
      words.erase(origin);  // place says where in its input it read the pod
    }
    CHECK(event.find(words) != std::string::npos);
    } else {  // each category fracpack gave, with kube-scheduler's own counts
      CHECK(event.find("node(s) had GPUs smaller than the memory request") != std::string::npos);
    }
  }
  c.converged();
}

TEST_CASE("pods that finish or are deleted give their GPUs back: the next pods bind on them within a second") {
  auto rig = require_kube_rig();
  if (!rig) return;
  Cluster c(*rig, small_cluster(1, 2));
  // A leader retires no reservation pod in its term's first 5 s (a Binding its predecessor sent
  // may still land: docs/ha.md); b's is deleted after that, as in any term but a new one.
  const auto term_settled = std::chrono::steady_clock::now() + std::chrono::seconds(6);
  REQUIRE(c.api().create(gpu_pod("a", 1)) == 201);
  REQUIRE(c.api().create(fraction_pod("b", "40Gi")) == 201);
  REQUIRE(KubeRig::wait_until([&] { return !c.api().node_of("default/a").empty() && !c.api().node_of("default/b").empty(); },
                              std::chrono::seconds(10)));
  REQUIRE(c.api().create(gpu_pod("c", 1)) == 201);  // both GPUs are taken: c waits
  REQUIRE(KubeRig::wait_until([&] { return !c.api().failed_scheduling("default/c").empty(); }, std::chrono::seconds(10)));
  using std::chrono::milliseconds;
  auto since = [](auto start) { return std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - start).count(); };
  // a completes (the kubelet would write Succeeded): its GPU goes to c.
  REQUIRE(c.api().send("PATCH", "/api/v1/namespaces/default/pods/a/status", {{"status", {{"phase", "Succeeded"}}}},
                       "application/merge-patch+json") == 200);
  const auto start = std::chrono::steady_clock::now();
  REQUIRE(KubeRig::wait_until([&] { return c.held().count("default/a") == 0; }, std::chrono::seconds(5)));
  const auto released = since(start);
  REQUIRE(KubeRig::wait_until([&] { return !c.api().node_of("default/c").empty(); }, std::chrono::seconds(10)));
  const auto rebound = since(start);
  // b is deleted: its shared GPU is idle again, and a whole-GPU pod takes it.
  REQUIRE(c.api().create(gpu_pod("d", 1)) == 201);
  REQUIRE(KubeRig::wait_until([&] { return !c.api().failed_scheduling("default/d").empty(); }, std::chrono::seconds(10)));
  std::this_thread::sleep_until(term_settled);
  REQUIRE(c.api().delete_pod("default/b") == 200);
  const auto again = std::chrono::steady_clock::now();
  REQUIRE(KubeRig::wait_until([&] { return c.held().count("default/b") == 0; }, std::chrono::seconds(5)));
  const auto released_again = since(again);
  REQUIRE(KubeRig::wait_until([&] { return !c.api().node_of("default/d").empty(); }, std::chrono::seconds(10)));
  const auto rebound_again = since(again);
  MESSAGE("completion: the ledger let go in ", released, " ms, the next pod bound in ", rebound, " ms; deletion: ", released_again,
          " ms and ", rebound_again, " ms");
  // The ledger lets go within a second; kube-scheduler then retries the waiting pod after its
  // backoff (1 s, the least v1.20 takes, and up to 1 s more for its backoff queue's flush), and it
  // binds at once. (The bound on the second part is loose: it is kube-scheduler's, not ours.)
  CHECK(released < 1000);
  CHECK(released_again < 1000);
  CHECK(rebound < 5000);
  CHECK(rebound_again < 5000);
  c.converged();
}

TEST_CASE("kube-scheduler calls fracpack over mutual TLS (enableHTTPS, tlsConfig): pods bind; plaintext and strangers get nothing") {
  auto rig = require_kube_rig();
  if (!rig) return;
  Cluster c(*rig, small_cluster(1, 2), {}, /*https=*/true);
  REQUIRE(c.api().create(gpu_pod("a", 1)) == 201);
  REQUIRE(c.api().create(fraction_pod("b", "40Gi")) == 201);
  CHECK(KubeRig::wait_until([&] { return !c.api().node_of("default/a").empty() && !c.api().node_of("default/b").empty(); },
                            std::chrono::seconds(20)));
  c.converged();
  httplib::Client plain("127.0.0.1", c.fracpack_port());
  plain.set_read_timeout(5, 0);
  auto res = plain.Get("/snapshot");
  CHECK_FALSE((res && res->status == 200));
}

TEST_CASE("a pod another scheduler bound is adopted; a cordoned node is no longer chosen") {
  auto rig = require_kube_rig();
  if (!rig) return;
  Cluster c(*rig, small_cluster(2, 2));
  // Bound by hand (spec.nodeName preset, as another scheduler would): both GPUs of gpu-0.
  json foreign = gpu_pod("foreign", 2);
  foreign["spec"]["nodeName"] = "gpu-0";
  foreign["spec"]["schedulerName"] = "other-scheduler";
  REQUIRE(c.api().create(foreign) == 201);
  REQUIRE_MESSAGE(KubeRig::wait_until([&] { return c.held().count("default/foreign") == 1; }, std::chrono::seconds(5)),
                  c.fracpack_get("/snapshot").dump() << c.api().pod("default/foreign").dump());
  bool not_ours = false;
  const json bindings_list = c.fracpack_get("/snapshot");  // a named copy: a temporary's member would dangle in the loop
  for (const auto& b : bindings_list["bindings"]) {
    if (b["pod"] == "default/foreign") not_ours = !b["ours"].get<bool>();
  }
  CHECK(not_ours);  // another scheduler's: in no queue
  REQUIRE(c.api().create(gpu_pod("mine", 1)) == 201);
  REQUIRE(KubeRig::wait_until([&] { return !c.api().node_of("default/mine").empty(); }, std::chrono::seconds(10)));
  CHECK(c.api().node_of("default/mine") == "gpu-1");  // gpu-0's GPUs are the foreign pod's
  // gpu-1 is cordoned: the next pod waits, though gpu-1 has a GPU left.
  REQUIRE(c.api().send("PATCH", "/api/v1/nodes/gpu-1", {{"spec", {{"unschedulable", true}}}}, "application/merge-patch+json") == 200);
  REQUIRE(KubeRig::wait_until([&] {
    const json e = c.fracpack_get("/snapshot");
    return e.is_object();
  }, std::chrono::seconds(2)));
  REQUIRE(c.api().create(gpu_pod("next", 1)) == 201);
  REQUIRE(KubeRig::wait_until([&] { return !c.api().failed_scheduling("default/next").empty(); }, std::chrono::seconds(10)));
  CHECK(c.api().node_of("default/next").empty());
  // Uncordoned: it binds there.
  REQUIRE(c.api().send("PATCH", "/api/v1/nodes/gpu-1", {{"spec", {{"unschedulable", false}}}}, "application/merge-patch+json") == 200);
  REQUIRE(KubeRig::wait_until([&] { return c.api().node_of("default/next") == "gpu-1"; }, std::chrono::seconds(10)));
  c.converged();
}

TEST_CASE("a Queue edit changes admission at once") {
  auto rig = require_kube_rig();
  if (!rig) return;
  std::vector<json> objects = small_cluster(1, 4);
  objects.pop_back();
  objects.push_back(queue_object("team", "", 1, 1));  // limit 1 GPU
  Cluster c(*rig, objects);
  REQUIRE(c.api().create(gpu_pod("one", 1)) == 201);
  REQUIRE(KubeRig::wait_until([&] { return !c.api().node_of("default/one").empty(); }, std::chrono::seconds(10)));
  REQUIRE(c.api().create(gpu_pod("two", 1)) == 201);
  REQUIRE(KubeRig::wait_until([&] { return c.api().failed_scheduling("default/two").find("above its limit 1") != std::string::npos; },
                              std::chrono::seconds(10)));
  // The limit is raised. kube-scheduler does not watch Queues and would retry the pod only on
  // its next cluster event or after 60 s in its unschedulable queue; fracpack touches it.
  REQUIRE(c.api().send("PATCH", "/apis/scheduling.run.ai/v2/queues/team",
                       {{"spec", {{"resources", {{"gpu", {{"quota", 1}, {"limit", 3}, {"overQuotaWeight", 1}}}}}}}},
                       "application/merge-patch+json") == 200);
  REQUIRE(KubeRig::wait_until([&] { return !c.api().node_of("default/two").empty(); }, std::chrono::seconds(15)));
  const std::string metrics = c.fracpack_get("/metrics").get<std::string>();
  CHECK(metrics.find("fracpack_pods_nudged_total 0") == std::string::npos);
  c.converged();
}

TEST_CASE("watches dropped and history compacted during a burst: the relist leaves the ledger equal to the API server's truth") {
  auto rig = require_kube_rig();
  if (!rig) return;
  Cluster c(*rig, small_cluster(4, 8));
  for (int i = 0; i < 24; ++i) REQUIRE(c.api().create(fraction_pod(fmt::format("p{:02}", i), fmt::format("{}Gi", 8 + i % 5 * 8))) == 201);
  REQUIRE_MESSAGE(KubeRig::wait_until([&] { return c.truth().size() == 24; }, std::chrono::seconds(20)),
                  c.truth().size() << " bound; " << c.api().get("/api/v1/pods").dump().substr(0, 3000));
  // Pause every watch, change pods meanwhile, compact the history: on resume every watch gets
  // 410 Gone, and fracpack (like the scheduler) lists again.
  REQUIRE(c.api().send("POST", "/rig/pause-watches?seconds=3") == 200);
  for (int i = 0; i < 12; ++i) REQUIRE(c.api().delete_pod(fmt::format("default/p{:02}", i * 2)) == 200);
  json outside = gpu_pod("outside", 1);  // bound behind the scheduler's back, during the pause
  outside["spec"]["nodeName"] = "gpu-3";
  REQUIRE(c.api().create(outside) == 201);
  REQUIRE(c.api().send("POST", "/rig/compact") == 200);
  REQUIRE(c.api().send("POST", "/rig/pause-watches?seconds=0") == 200);
  c.converged(std::chrono::seconds(20));
  const json metrics = c.fracpack_get("/metrics");
  REQUIRE(metrics.is_string());
  CHECK(metrics.get<std::string>().find("fracpack_watch_relists_total{kind=\"Pod\"} 0") == std::string::npos);  // it relisted
  // Dropped watches resume from where they were.
  REQUIRE(c.api().send("POST", "/rig/drop-watches") == 200);
  for (int i = 0; i < 6; ++i) REQUIRE(c.api().create(fraction_pod(fmt::format("q{:02}", i), "16Gi")) == 201);
  REQUIRE(KubeRig::wait_until([&] { return c.truth().size() == 12 + 1 + 6; }, std::chrono::seconds(20)));
  c.converged();
  // Every pod created while fracpack watched was timed from its creation to the ledger (the 24,
  // then the 6; "outside" came with a list, which carries no change time).
  const std::string text = c.fracpack_get("/metrics").get<std::string>();
  const std::string name = "fracpack_watch_lag_seconds_count{kind=\"Pod\"} ";
  const auto at = text.find(name);
  REQUIRE(at != std::string::npos);
  CHECK(std::stoi(text.substr(at + name.size())) >= 24 + 6);
}

TEST_CASE("fracpack killed -9 mid-burst restarts into the same truth, nothing double-held or lost") {
  auto rig = require_kube_rig();
  if (!rig) return;
  Cluster c(*rig, small_cluster(4, 8));
  for (int i = 0; i < 40; ++i) {
    REQUIRE(c.api().create(fraction_pod(fmt::format("p{:02}", i), fmt::format("{}Gi", 8 + i % 4 * 8))) == 201);
    if (i == 20) c.kill_fracpack();  // binds in flight are cut off
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  c.start_fracpack();
  // The pods whose extender calls failed meanwhile wait in kube-scheduler's unschedulable queue.
  const bool all = all_bound_nudging(c, 40);
  std::string unbound;
  for (int i = 0; i < 40 && !all; ++i) {
    const std::string key = fmt::format("default/p{:02}", i);
    if (c.api().node_of(key).empty()) unbound += key + ": " + c.api().failed_scheduling(key) + "; ";
  }
  REQUIRE_MESSAGE(all, c.truth().size() << " of 40 bound; " << unbound);
  c.converged();
  // No GPU holds more than it has: the ledger was rebuilt from the API server and the state file.
  const json nodes_list = c.fracpack_get("/snapshot");  // a named copy: a temporary's member would dangle in the loop
  for (const auto& n : nodes_list["nodes"]) {
    for (const auto& g : n["gpus"]) CHECK(g["usedMiB"].get<std::int64_t>() <= g["memoryMiB"].get<std::int64_t>());
  }
}


TEST_CASE("two replicas, one leader: the leader killed -9 mid-burst, the follower takes over, nothing lost or double-held") {
  auto rig = require_kube_rig();
  if (!rig) return;
  Cluster c(*rig, small_cluster(4, 8), {}, false, 2);
  const std::string first = c.leader();
  for (int i = 0; i < 40; ++i) {
    REQUIRE(c.api().create(fraction_pod(fmt::format("p{:02}", i), fmt::format("{}Gi", 8 + i % 4 * 8))) == 201);
    if (i == 20) REQUIRE(c.kill_leader() == first);  // binds in flight are cut off
  }
  const auto killed = std::chrono::steady_clock::now();
  REQUIRE(KubeRig::wait_until([&] { return !c.leader().empty() && c.leader() != first; }, std::chrono::seconds(15)));
  const auto took_over = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - killed).count();
  MESSAGE("the follower took the lead " << took_over << " ms after the leader was killed (lease duration 3 s)");
  // The pods whose extender calls failed meanwhile wait in kube-scheduler's unschedulable queue.
  const bool all = all_bound_nudging(c, 40);
  REQUIRE_MESSAGE(all, c.truth().size() << " of 40 bound");
  c.converged();  // the new leader's ledger equals the API server's truth, verified from scratch
  const json nodes_list = c.fracpack_get("/snapshot");  // a named copy: a temporary's member would dangle in the loop
  for (const auto& n : nodes_list["nodes"]) {
    for (const auto& g : n["gpus"]) CHECK(g["usedMiB"].get<std::int64_t>() <= g["memoryMiB"].get<std::int64_t>());
  }
}

TEST_CASE("gRPC Bind, following the API server, creates the pod's Binding there as the JSON Bind does") {
  auto rig = require_kube_rig();
  if (!rig) return;
  const int grpc_port = free_port();
  // Pods of "by-hand" are fracpack's (its queues apply) but no kube-scheduler profile's: only the
  // gRPC client below binds them.
  Cluster c(*rig, small_cluster(1, 2),
            {"--grpc", fmt::format("127.0.0.1:{}", grpc_port), "--scheduler-name", "kai-scheduler", "--scheduler-name", "by-hand"});
  auto stub = v1::Extender::NewStub(grpc::CreateChannel(fmt::format("127.0.0.1:{}", grpc_port), grpc::InsecureChannelCredentials()));
  auto filter = [&](const json& pod) {  // as a scheduler does: a Bind follows the pod's Filter
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::ExtenderArgs args;
    args.set_pod(pod.dump());
    args.add_node_names("gpu-0");
    v1::ExtenderFilterResult out;
    return stub->Filter(&ctx, args, &out).ok() && out.node_names_size() == 1;
  };
  auto bind = [&](const std::string& name, v1::ExtenderBindingResult& result) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::ExtenderBindingArgs args;
    args.set_pod_name(name);
    args.set_pod_namespace("default");
    args.set_node("gpu-0");
    return stub->Bind(&ctx, args, &result);
  };
  json pod = gpu_pod("by-grpc", 1);
  pod["spec"]["schedulerName"] = "by-hand";
  REQUIRE(c.api().create(pod) == 201);
  v1::ExtenderBindingResult result;
  grpc::Status st;
  REQUIRE(KubeRig::wait_until([&] { return filter(pod); }, std::chrono::seconds(10)));  // once fracpack is ready
  st = bind("by-grpc", result);
  REQUIRE_MESSAGE(st.ok(), st.error_code() << ": " << st.error_message());
  CHECK(KubeRig::wait_until([&] { return c.api().node_of("default/by-grpc") == "gpu-0"; }, std::chrono::seconds(5)));
  const json annotations = c.api().pod("default/by-grpc").value(json::json_pointer("/metadata/annotations"), json::object());
  CHECK(annotations.contains("fracpack.io/gpus"));  // written with the Binding
  // A pod the API server does not have: the Binding is refused, and nothing stays held.
  json ghost = gpu_pod("ghost", 1);
  ghost["spec"]["schedulerName"] = "by-hand";
  REQUIRE(c.api().create(ghost) == 201);
  REQUIRE(KubeRig::wait_until([&] {  // fracpack's watch has it pending
    const json m = c.fracpack_get("/metrics");
    return m.is_string() && m.get<std::string>().find("\nfracpack_pods_pending 1\n") != std::string::npos;
  }, std::chrono::seconds(10)));
  REQUIRE(filter(ghost));
  // fracpack does not see it go (resumed below, long before 30 s): the API server refuses the
  // Binding, and the ledger's bind is undone by the Bind itself, not by the watch.
  REQUIRE(c.api().send("POST", "/rig/pause-watches?seconds=30") == 200);
  REQUIRE(c.api().delete_pod("default/ghost") == 200);
  st = bind("ghost", result);
  CHECK(st.error_code() == grpc::StatusCode::NOT_FOUND);
  CHECK(c.held().count("default/ghost") == 0);
  const std::string metrics = c.fracpack_get("/metrics").get<std::string>();
  CHECK(metrics.find("fracpack_api_bind_errors_total{code=\"NotFound\"} 1") != std::string::npos);
  REQUIRE(c.api().send("POST", "/rig/pause-watches?seconds=0") == 200);
  c.converged();
}

TEST_CASE("a gang binds all its members or none: room for 3 of 4 binds none, room for 4 binds all") {
  auto rig = require_kube_rig();
  if (!rig) return;
  std::vector<json> objects = small_cluster(3, 8);
  objects.push_back({{"apiVersion", "scheduling.run.ai/v2alpha2"},
                     {"kind", "PodGroup"},
                     {"metadata", {{"name", "train"}, {"namespace", "default"}}},
                     {"spec", {{"minMember", 4}, {"queue", "team"}}}});
  Cluster c(*rig, objects);
  for (int i = 0; i < 4; ++i) {
    json p = gpu_pod(fmt::format("member-{}", i), 8);
    p["metadata"]["annotations"]["pod-group-name"] = "train";
    REQUIRE(c.api().create(p) == 201);
  }
  // Whichever member kube-scheduler tries carries the reason (its queue order is not ours).
  REQUIRE(KubeRig::wait_until([&] {
    for (int i = 0; i < 4; ++i) {
      if (c.api().failed_scheduling(fmt::format("default/member-{}", i)).find("does not fit as a whole") != std::string::npos) return true;
    }
    return false;
  }, std::chrono::seconds(30)));
  std::this_thread::sleep_for(std::chrono::seconds(2));
  for (int i = 0; i < 4; ++i) CHECK(c.api().node_of(fmt::format("default/member-{}", i)).empty());
  CHECK(c.held().empty());  // nothing held for a gang that does not fit
  // A fourth node: the gang fits, and binds whole.
  const json node = nvf("gpu-3", 8, 81920).obj;
  REQUIRE(c.api().create(node) == 201);  // a create keeps no status: the kubelet would write it
  REQUIRE(c.api().send("PATCH", "/api/v1/nodes/gpu-3/status", {{"status", node["status"]}}, "application/merge-patch+json") == 200);
  REQUIRE_MESSAGE(KubeRig::wait_until([&] { return c.truth().size() == 4; }, std::chrono::seconds(30)),
                  c.truth().size() << " of 4 bound; " << c.api().failed_scheduling("default/member-0"));
  std::set<std::string> nodes;
  for (const auto& [pod, bound_to] : c.truth()) nodes.insert(bound_to);
  CHECK(nodes.size() == 4);
  c.converged();
}

TEST_CASE("a PodGroup's sub-groups bind together, the one that requires a rack inside one rack") {
  auto rig = require_kube_rig();
  if (!rig) return;
  std::vector<json> objects = small_cluster(3, 8);  // gpu-0 in rack r1 (the tighter), gpu-1 and gpu-2 in r2
  for (int n = 0; n < 3; ++n) objects[static_cast<std::size_t>(n)]["metadata"]["labels"]["rack"] = n == 0 ? "r1" : "r2";
  objects.push_back({{"apiVersion", "scheduling.run.ai/v2alpha2"},
                     {"kind", "PodGroup"},
                     {"metadata", {{"name", "serve"}, {"namespace", "default"}}},
                     {"spec",
                      {{"queue", "team"},
                       {"subGroups",
                        {{{"name", "workers"}, {"minMember", 2}, {"topologyConstraint", {{"requiredTopologyLevel", "rack"}}}},
                         {{"name", "leader"}, {"minMember", 1}}}}}}});
  Cluster c(*rig, objects);
  auto member = [](const std::string& name, int gpus, const std::string& sub) {
    json p = gpu_pod(name, gpus);
    p["metadata"]["annotations"]["pod-group-name"] = "serve";
    p["metadata"]["labels"]["kai.scheduler/subgroup-name"] = sub;
    return p;
  };
  REQUIRE(c.api().create(member("worker-0", 8, "workers")) == 201);
  REQUIRE(c.api().create(member("worker-1", 8, "workers")) == 201);
  // The leader is missing: the workers wait, saying for what.
  REQUIRE_MESSAGE(KubeRig::wait_until([&] {
    return c.api().failed_scheduling("default/worker-0").find("sub-group leader has 0 of the 1 members") != std::string::npos ||
           c.api().failed_scheduling("default/worker-1").find("sub-group leader has 0 of the 1 members") != std::string::npos;
  }, std::chrono::seconds(30)), "worker-0: " << c.api().failed_scheduling("default/worker-0")
                                  << "; worker-1: " << c.api().failed_scheduling("default/worker-1"));
  CHECK(c.truth().empty());
  REQUIRE(c.api().create(member("leader-0", 1, "leader")) == 201);
  REQUIRE_MESSAGE(KubeRig::wait_until([&] { return c.truth().size() == 3; }, std::chrono::seconds(30)),
                  c.truth().size() << " of 3 bound; " << c.api().failed_scheduling("default/worker-0"));
  const auto truth = c.truth();
  CHECK(truth.at("default/worker-0") != "gpu-0");  // r1 holds one 8-GPU worker, not two
  CHECK(truth.at("default/worker-1") != "gpu-0");
  CHECK(truth.at("default/worker-0") != truth.at("default/worker-1"));
  CHECK(truth.at("default/leader-0") == "gpu-0");
  c.converged();
}

json pod_group(const std::string& name, int min_member) {
  return {{"apiVersion", "scheduling.run.ai/v2alpha2"},
          {"kind", "PodGroup"},
          {"metadata", {{"name", name}, {"namespace", "default"}}},
          {"spec", {{"minMember", min_member}, {"queue", "team"}}}};
}

TEST_CASE("a gang that lost a member below its minMember is evicted after the staleness grace period; one completing is not") {
  auto rig = require_kube_rig();
  if (!rig) return;
  std::vector<json> objects = small_cluster(2, 4);
  objects.push_back(pod_group("lost", 2));
  objects.push_back(pod_group("done", 2));
  Cluster c(*rig, objects, {"--staleness-grace-period", "2s"});
  for (const std::string group : {"lost", "done"}) {
    for (int i = 0; i < 2; ++i) {
      json p = gpu_pod(fmt::format("{}-{}", group, i), 1);
      p["metadata"]["annotations"]["pod-group-name"] = group;
      REQUIRE(c.api().create(p) == 201);
    }
  }
  REQUIRE_MESSAGE(all_bound_nudging(c, 4), c.truth().size() << " of 4 bound");
  // done-0 completes (the kubelet would write Succeeded); lost-1 is deleted, and nothing makes it
  // again: lost-0 runs alone in a gang of minMember 2.
  REQUIRE(c.api().send("PATCH", "/api/v1/namespaces/default/pods/done-0/status", {{"status", {{"phase", "Succeeded"}}}},
                       "application/merge-patch+json") == 200);
  const auto start = std::chrono::steady_clock::now();
  REQUIRE(c.api().delete_pod("default/lost-1") == 200);
  REQUIRE_MESSAGE(KubeRig::wait_until([&] { return c.api().pod("default/lost-0").is_null(); }, std::chrono::seconds(20)),
                  "lost-0 was not evicted");
  const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  MESSAGE("lost-0 evicted ", waited, " ms after its gang lost lost-1 (grace period 2 s)");
  CHECK(waited >= 2000);  // not before the grace period
  // done-1 runs on beside its Succeeded member: the gang is completing, not broken.
  std::this_thread::sleep_for(std::chrono::seconds(3));
  CHECK(c.api().node_of("default/done-1") != "");
  const json metrics = c.fracpack_get("/metrics");
  REQUIRE(metrics.is_string());
  CHECK(metrics.get<std::string>().find("fracpack_stale_gang_evictions_total 1\n") != std::string::npos);
  c.converged();
}

TEST_CASE("shared GPUs are held on the node by reservation pods in KAI's format, which go when their GPU is idle") {
  auto rig = require_kube_rig();
  if (!rig) return;
  Cluster c(*rig, small_cluster(1, 2), {"--reservation-timeout", "2"});
  auto bound = [&](const std::string& key) {
    return KubeRig::wait_until([&] { return !c.api().node_of(key).empty(); }, std::chrono::seconds(15));
  };
  // f1 and f2 share one GPU; f3 is too big to join them and takes the other.
  for (const auto& [name, memory] : std::vector<std::pair<std::string, std::string>>{{"f1", "30Gi"}, {"f2", "30Gi"}, {"f3", "60Gi"}}) {
    REQUIRE(c.api().create(fraction_pod(name, memory)) == 201);
    REQUIRE_MESSAGE(bound("default/" + name), name << ": " << c.api().failed_scheduling("default/" + name));
  }
  auto reservations = reservation_pods(c.api());
  REQUIRE(reservations.size() == 2);
  for (const auto& [group, r] : reservations) {
    CAPTURE(r.dump());
    CHECK(r.value(json::json_pointer("/metadata/name"), "").starts_with("gpu-reservation-gpu-0-"));
    CHECK(r.value(json::json_pointer("/metadata/labels/app"), "") == "kai-resource-reservation");
    CHECK(r.value(json::json_pointer("/metadata/annotations/karpenter.sh~1do-not-disrupt"), "") == "true");
    CHECK(r.value(json::json_pointer("/spec/nodeName"), "") == "gpu-0");
    CHECK(r.value(json::json_pointer("/spec/serviceAccountName"), "") == "kai-resource-reservation");
    CHECK(r.value(json::json_pointer("/spec/containers/0/resources/limits/nvidia.com~1gpu"), "") == "1");
    CHECK(r.value(json::json_pointer("/spec/containers/0/resources/requests/nvidia.com~1gpu"), "") == "1");
    CHECK(!r.value(json::json_pointer("/metadata/annotations/run.ai~1reserve_for_gpu_index"), "").empty());
  }
  const auto [g1, d1] = group_and_device(c.api(), "default/f1");
  const auto [g2, d2] = group_and_device(c.api(), "default/f2");
  const auto [g3, d3] = group_and_device(c.api(), "default/f3");
  CHECK(g1 == g2);
  CHECK(g1 != g3);
  REQUIRE(reservations.contains(g1));
  REQUIRE(reservations.contains(g3));
  // Each fraction names the GPU its reservation pod reported, not the ledger's index.
  const json::json_pointer reported("/metadata/annotations/run.ai~1reserve_for_gpu_index");
  CHECK(d1 == reservations[g1].value(reported, "?"));
  CHECK(d2 == d1);
  CHECK(d3 == reservations[g3].value(reported, "?"));
  CHECK(d1 != d3);
  // f3 goes: its GPU is idle, its reservation pod is deleted, and a whole-GPU pod takes the GPU.
  REQUIRE(c.api().delete_pod("default/f3") == 200);
  REQUIRE_MESSAGE(KubeRig::wait_until([&] { return reservation_pods(c.api()).size() == 1; }, std::chrono::seconds(15)),
                  reservation_pods(c.api()).size() << " reservation pods");
  CHECK(reservation_pods(c.api()).contains(g1));
  REQUIRE(c.api().create(gpu_pod("w", 1)) == 201);
  REQUIRE_MESSAGE(bound("default/w"), c.api().failed_scheduling("default/w"));
  // A restart keeps the groups: a new fraction joins f1's GPU behind the same reservation pod.
  c.kill_fracpack();
  c.start_fracpack();
  REQUIRE(c.api().create(fraction_pod("f4", "10Gi")) == 201);
  REQUIRE_MESSAGE(bound("default/f4"), c.api().failed_scheduling("default/f4"));
  CHECK(group_and_device(c.api(), "default/f4") == std::make_pair(g1, d1));
  CHECK(reservation_pods(c.api()).size() == 1);
  c.converged();
  // A reservation pod that never reports its GPU: the Bind fails saying so, nothing is bound, and
  // the reservation pod is deleted; once GPUs are given again, the pod binds.
  REQUIRE(c.api().delete_pod("default/w") == 200);
  // Until fracpack's watch shows w gone, a Filter of f5 finds no room; kube-scheduler would then
  // park f5 until its next cluster event or 60 s (docs/kube-scheduler.md, "The watch"), which is
  // not this test.
  REQUIRE(KubeRig::wait_until([&] { return c.held().count("default/w") == 0; }, std::chrono::seconds(5)));
  c.agent().pause(true);
  REQUIRE(c.api().create(fraction_pod("f5", "60Gi")) == 201);
  REQUIRE_MESSAGE(KubeRig::wait_until([&] {
    return c.api().failed_scheduling("default/f5").find("did not report its GPU") != std::string::npos;
  }, std::chrono::seconds(15)), c.api().failed_scheduling("default/f5"));
  CHECK(c.api().node_of("default/f5").empty());
  c.agent().pause(false);
  // kube-scheduler retries f5 after its backoff, which doubles per failure up to 10 s.
  REQUIRE_MESSAGE(KubeRig::wait_until([&] { return !c.api().node_of("default/f5").empty(); }, std::chrono::seconds(60)),
                  c.api().failed_scheduling("default/f5"));
  REQUIRE(KubeRig::wait_until([&] { return reservation_pods(c.api()).size() == 2; }, std::chrono::seconds(5)));
  for (const auto& [group, r] : reservation_pods(c.api())) CHECK(!r.value(reported, "").empty());
  c.converged();
}

}  // namespace
}  // namespace fracpack::test
