// One reclaim asked of every front: `place`, the HTTP extender's Preempt and gRPC Preempt give
// the same victim (docs/queues.md rule 12). The cluster is the one KAI reclaims in and fracpack
// once did not: two sibling queues under a parent, one borrowing the other's GPU.
#include <set>

#include <httplib.h>

#include <grpcpp/grpcpp.h>

#include <doctest/doctest.h>

#include "fracpack/k8s/object_stream.hpp"
#include "fracpack/server/extender.hpp"
#include "fracpack/sim/place_job.hpp"
#include "fracpack/v1/extender.grpc.pb.h"
#include "plugin_api/grpc_front.hpp"
#include "plugin_api/http_front.hpp"
#include "support/builders.hpp"
#include "support/front_fixture.hpp"

namespace fracpack::test {
namespace {

/// One node with 2 GPUs; q0 and q1 (quota 1 each) under dept (quota 2); q0 runs `old` and
/// `young`; q1's `wants` (one GPU, a higher priority so kube-scheduler offers victims) waits.
std::vector<json> borrowed_cluster() {
  std::vector<json> out{nvf("n", 2, 80000).obj, queue_object("dept", "", 2), queue_object("q0", "dept", 1),
                        queue_object("q1", "dept", 1)};
  for (const auto& [name, start] : {std::pair{"old", "2026-01-01T10:00:00Z"}, std::pair{"young", "2026-01-01T11:00:00Z"}}) {
    json p = PodBuilder(name).uid(std::string("u-") + name).whole(1).priority_class("train").label("kai.scheduler/queue", "q0").bound_to("n").obj;
    p["status"]["startTime"] = start;
    out.push_back(p);
  }
  return out;
}

json wants() {
  return PodBuilder("wants").uid("u-wants").whole(1).priority_class("build-preemptible").label("kai.scheduler/queue", "q1").obj;
}

/// Loads the cluster into a front's core: objects by Apply, running pods by Sync.
void load(Extender& core) {
  std::vector<json> objects;
  std::vector<json> pods;
  for (const json& o : borrowed_cluster()) (o.value("kind", "") == "Pod" ? pods : objects).push_back(o);
  REQUIRE(core.apply(objects, nullptr).is_ok());
  std::vector<std::string> conflicts;
  REQUIRE(core.sync(pods, false, &conflicts).is_ok());
  REQUIRE(core.filter(wants(), {"n"})->passed.empty());
}

TEST_CASE("place, HTTP Preempt and gRPC Preempt name the same victim: q0's youngest pod") {
  std::vector<json> objects = borrowed_cluster();
  objects.push_back(wants());
  auto placed = run_place(k8s::with_origins(objects, "test"), PlaceOptions{});
  REQUIRE(placed.is_ok());
  REQUIRE(placed->unschedulable.size() == 1);
  REQUIRE(placed->unschedulable[0].preemption);
  CHECK(placed->unschedulable[0].preemption->victims == std::vector<std::string>{"default/young"});

  api::HttpOptions http_options;
  http_options.listen.max_body = 1u << 20;
  FrontFixture<api::HttpFront, api::HttpOptions> http(http_options);
  load(*http.core);
  httplib::Client client("127.0.0.1", http.port);
  const json args = {{"Pod", wants()},
                     {"NodeNameToMetaVictims", {{"n", {{"Pods", {{{"UID", "u-old"}}, {{"UID", "u-young"}}}}, {"NumPDBViolations", 0}}}}}};
  auto res = client.Post("/preempt", args.dump(), "application/json");
  REQUIRE(res);
  REQUIRE_MESSAGE(res->status == 200, res->body);
  const json answer = json::parse(res->body);
  CHECK(answer["NodeNameToMetaVictims"]["n"]["Pods"] == json::array({{{"UID", "u-young"}}}));

  api::GrpcOptions grpc_options;
  grpc_options.max_message_bytes = 1 << 20;
  FrontFixture<api::GrpcFront, api::GrpcOptions> grpc(grpc_options);
  load(*grpc.core);
  auto stub = v1::Extender::NewStub(grpc::CreateChannel(fmt::format("127.0.0.1:{}", grpc.port), grpc::InsecureChannelCredentials()));
  v1::ExtenderPreemptionArgs request;
  request.set_pod(wants().dump());
  auto& offered = (*request.mutable_node_name_to_victims())["n"];
  offered.add_pod_uids("u-old");
  offered.add_pod_uids("u-young");
  v1::ExtenderPreemptionResult result;
  grpc::ClientContext ctx;
  REQUIRE(stub->Preempt(&ctx, request, &result).ok());
  REQUIRE(result.node_name_to_victims().count("n") == 1);
  const auto& uids = result.node_name_to_victims().at("n").pod_uids();
  CHECK(std::vector<std::string>(uids.begin(), uids.end()) == std::vector<std::string>{"u-young"});
}

TEST_CASE("Preempt names no victim while the pod's PodGroup is within its preemptionDelay, then q0's youngest") {
  // KAI's FilterWithinPreemptionDelay (KAI #1886): for that long after the PodGroup's creation
  // its job evicts nobody.
  std::int64_t now = 1767268800;  // 2026-01-01T12:00:00Z, the PodGroup's creation
  ExtenderOptions options;
  options.clock = [&now] { return now; };
  auto opened = Extender::open(options);
  REQUIRE(opened.is_ok());
  Extender& core = **opened;
  std::vector<json> objects;
  std::vector<json> pods;
  for (const json& o : borrowed_cluster()) (o.value("kind", "") == "Pod" ? pods : objects).push_back(o);
  objects.push_back({{"apiVersion", "scheduling.run.ai/v2alpha2"},
                     {"kind", "PodGroup"},
                     {"metadata", {{"name", "w"}, {"namespace", "default"}, {"creationTimestamp", "2026-01-01T12:00:00Z"}}},
                     {"spec", {{"minMember", 1}, {"queue", "q1"}, {"preemptionDelay", "1h"}}}});
  REQUIRE(core.apply(objects, nullptr).is_ok());
  std::vector<std::string> conflicts;
  REQUIRE(core.sync(pods, false, &conflicts).is_ok());
  json pod = wants();
  pod["metadata"]["annotations"]["pod-group-name"] = "w";
  const std::map<std::string, std::vector<std::string>> offered{{"n", {"u-old", "u-young"}}};
  now += 59 * 60;
  auto early = core.preempt(pod, offered);
  REQUIRE(early.is_ok());
  CHECK(early->empty());
  now += 2 * 60;
  auto later = core.preempt(pod, offered);
  REQUIRE(later.is_ok());
  REQUIRE(later->count("n") == 1);
  CHECK(later->at("n") == std::vector<std::string>{"u-young"});
}

/// An extender core holding `objects` (by Apply) and the running pods `running` (by Sync).
std::unique_ptr<Extender> open_core(const std::vector<json>& objects, const std::vector<json>& running) {
  auto opened = Extender::open(ExtenderOptions{});
  REQUIRE(opened.is_ok());
  REQUIRE((*opened)->apply(objects, nullptr).is_ok());
  std::vector<std::string> conflicts;
  REQUIRE((*opened)->sync(running, false, &conflicts).is_ok());
  return std::move(*opened);
}

json pod_group(const std::string& name, const std::string& queue, int min_member) {
  return {{"apiVersion", "scheduling.run.ai/v2alpha2"},
          {"kind", "PodGroup"},
          {"metadata", {{"name", name}, {"namespace", "default"}}},
          {"spec", {{"minMember", min_member}, {"queue", queue}}}};
}

/// Four nodes of 2 GPUs, all held by q1's four running gangs of 2 (r3 the youngest, on n3); q0's
/// gang of 4 x 1 GPU waits.
TEST_CASE("Preempt for a gang names the gang's victims, whole jobs, for its first member, on the node it lands on") {
  std::vector<json> objects{queue_object("dept", "", 8), queue_object("q0", "dept", 4), queue_object("q1", "dept", 4),
                            pod_group("train", "q0", 4)};
  std::vector<json> running;
  for (int n = 0; n < 4; ++n) {
    objects.push_back(nvf(fmt::format("n{}", n), 2, 80000).obj);
    objects.push_back(pod_group(fmt::format("r{}", n), "q1", 2));
    for (const char* part : {"a", "b"}) {
      const std::string name = fmt::format("r{}-{}", n, part);
      json p = PodBuilder(name).uid("u-" + name).whole(1).priority_class("train").label("kai.scheduler/queue", "q1")
                   .gang(fmt::format("r{}", n)).bound_to(fmt::format("n{}", n)).obj;
      p["status"]["startTime"] = fmt::format("2026-01-01T1{}:00:00Z", n);
      running.push_back(p);
    }
  }
  auto opened = open_core(objects, running);
  Extender& core = *opened;
  std::vector<json> members;
  for (int i = 0; i < 4; ++i) {
    members.push_back(PodBuilder(fmt::format("train-{}", i)).uid(fmt::format("u-t{}", i)).whole(1).priority_class("build-preemptible")
                          .label("kai.scheduler/queue", "q0").gang("train").obj);
  }
  for (const json& m : members) CHECK(core.filter_all(m, 0)->passed.empty());  // seen: the gang does not fit
  std::map<std::string, std::vector<std::string>> offered;  // kube-scheduler offers every lower-priority pod
  for (const json& p : running) offered[p["spec"]["nodeName"]].push_back(p["metadata"]["uid"]);
  // The gang's first member alone is nominated, where it lands, with that node's victim job whole;
  // the other victims are the leader's to delete (Extender::evictions), not kube-scheduler's.
  std::map<std::string, std::vector<std::string>> answered;
  for (const json& m : members) {
    auto victims = core.preempt(m, offered);
    REQUIRE(victims.is_ok());
    if (victims->empty()) continue;
    CHECK((victims->begin()->first == "n2" || victims->begin()->first == "n3"));  // the two youngest jobs go
    answered[m["metadata"]["name"]] = victims->begin()->second;
  }
  REQUIRE(answered.size() == 1);
  CHECK(answered.begin()->first == "train-0");
  std::vector<std::string> uids = answered.begin()->second;
  std::sort(uids.begin(), uids.end());
  CHECK((uids == std::vector<std::string>{"u-r2-a", "u-r2-b"} || uids == std::vector<std::string>{"u-r3-a", "u-r3-b"}));
}

TEST_CASE("Preempt for a gang member still waiting for its siblings names nothing: the gang cannot run yet") {
  std::vector<json> objects{queue_object("q0", "", 4), queue_object("q1", "", 0), pod_group("train", "q0", 4), nvf("n0", 1, 80000).obj};
  json victim = PodBuilder("v").uid("u-v").whole(1).priority_class("train").label("kai.scheduler/queue", "q1").bound_to("n0").obj;
  auto opened = open_core(objects, {victim});
  Extender& core = *opened;
  const json member = PodBuilder("train-0").uid("u-t0").whole(1).priority_class("build-preemptible").label("kai.scheduler/queue", "q0")
                          .gang("train").obj;
  CHECK(core.filter_all(member, 0)->passed.empty());  // 1 of the 4 members it needs
  auto victims = core.preempt(member, {{"n0", {"u-v"}}});
  REQUIRE(victims.is_ok());
  CHECK(victims->empty());
  // Alone, as a pod of its own, it would take v's GPU: the gang is what holds it back.
  const json single = PodBuilder("solo").uid("u-solo").whole(1).priority_class("build-preemptible").label("kai.scheduler/queue", "q0").obj;
  CHECK(core.preempt(single, {{"n0", {"u-v"}}})->size() == 1);
}

}  // namespace
}  // namespace fracpack::test
