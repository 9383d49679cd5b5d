// The gRPC front, in-process on port 0: every method of fracpack.v1.Extender and .Cluster, the
// status-code table of extender.proto with its rich details, protobuf garbage, health checking,
// reflection, TLS and mutual TLS, and many clients binding one small cluster at once.
#include <sys/wait.h>

#include <atomic>
#include <functional>
#include <set>
#include <thread>

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <doctest/doctest.h>

#include "fracpack/v1/cluster.grpc.pb.h"
#include "fracpack/v1/extender.grpc.pb.h"
#include "google/rpc/error_details.pb.h"
#include "google/rpc/status.pb.h"
#include "plugin_api/client.hpp"
#include "plugin_api/grpc_front.hpp"
#include "plugin_api/grpc_status.hpp"
#include "support/builders.hpp"
#include "support/front_fixture.hpp"
#include "support/kube_payloads.hpp"
#include "support/raw_connection.hpp"
#include "support/tls_files.hpp"
#include "support/temp_files.hpp"

namespace fracpack::test {
namespace {

api::GrpcOptions grpc_options(api::TlsFiles tls, const std::function<void(api::GrpcOptions&)>& tweak) {
  api::GrpcOptions options;
  options.tls = std::move(tls);
  options.max_message_bytes = 1 << 20;
  if (tweak) tweak(options);
  return options;
}

struct Server : FrontFixture<api::GrpcFront, api::GrpcOptions> {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::Extender::Stub> extender;
  std::unique_ptr<v1::Cluster::Stub> cluster;

  explicit Server(api::TlsFiles tls = {}, const std::function<void(api::GrpcOptions&)>& tweak = {})
      : FrontFixture(grpc_options(tls, tweak)) {
    if (tls.cert.empty()) {
      channel = grpc::CreateChannel(address(), grpc::InsecureChannelCredentials());
      extender = v1::Extender::NewStub(channel);
      cluster = v1::Cluster::NewStub(channel);
    }
  }
  [[nodiscard]] std::string address() const { return fmt::format("127.0.0.1:{}", port); }

  void apply(std::initializer_list<json> objects) const {
    v1::ApplyRequest req;
    for (const auto& o : objects) req.add_objects(o.dump());
    v1::ApplyResponse res;
    grpc::ClientContext ctx;
    auto st = cluster->Apply(&ctx, req, &res);
    REQUIRE_MESSAGE(st.ok(), st.error_message());
  }
  grpc::Status filter(const json& pod, std::initializer_list<std::string> nodes, v1::ExtenderFilterResult* out) const {
    v1::ExtenderArgs args;
    args.set_pod(pod.dump());
    for (const auto& n : nodes) args.add_node_names(n);
    grpc::ClientContext ctx;
    return extender->Filter(&ctx, args, out);
  }
  grpc::Status bind(const std::string& ns, const std::string& name, const std::string& node, v1::ExtenderBindingResult* out) const {
    v1::ExtenderBindingArgs args;
    args.set_pod_namespace(ns);
    args.set_pod_name(name);
    args.set_node(node);
    grpc::ClientContext ctx;
    return extender->Bind(&ctx, args, out);
  }
};

/// A unary call with raw request bytes: what a client with the wrong .proto (or an attacker) sends.
std::pair<grpc::Status, std::string> raw_unary(grpc::Channel& channel, const std::string& method, const std::string& bytes) {
  grpc::GenericStub stub(std::shared_ptr<grpc::Channel>(&channel, [](grpc::Channel*) {}));
  grpc::CompletionQueue cq;
  grpc::ClientContext ctx;
  grpc::Slice slice(bytes);
  grpc::ByteBuffer request(&slice, 1);
  auto call = stub.PrepareUnaryCall(&ctx, method, request, &cq);
  call->StartCall();
  grpc::ByteBuffer response;
  grpc::Status status;
  call->Finish(&response, &status, reinterpret_cast<void*>(1));
  void* tag = nullptr;
  bool ok = false;
  REQUIRE(cq.Next(&tag, &ok));
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  std::vector<grpc::Slice> slices;
  std::string out;
  if (status.ok() && response.Dump(&slices).ok()) {
    for (const auto& s : slices) out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return {status, out};
}

/// The google.rpc detail of type T in a status, if any.
template <class T>
std::optional<T> detail(const grpc::Status& status) {
  google::rpc::Status rich;
  if (!rich.ParseFromString(status.error_details())) return std::nullopt;
  CHECK(rich.code() == static_cast<int>(status.error_code()));
  for (const auto& any : rich.details()) {
    T out;
    if (any.UnpackTo(&out)) return out;
  }
  return std::nullopt;
}

json team_queue(double limit) {
  return {{"apiVersion", "scheduling.run.ai/v2"},
          {"kind", "Queue"},
          {"metadata", {{"name", "team"}}},
          {"spec",
           {{"resources",
             {{"gpu", {{"quota", limit}, {"limit", limit}}}, {"cpu", {{"quota", -1}, {"limit", -1}}}, {"memory", {{"quota", -1}, {"limit", -1}}}}}}}};
}

TEST_CASE("Apply, Filter, Prioritize, Bind, Explain, Snapshot, Release, Remove over gRPC") {
  Server s;
  s.apply({kube_node("h200-a", 8, "143771"), kube_node("h200-b", 8, "143771")});
  json pod = kube_pod("chat-0", R"({"nvidia.com/container.server.gpu-memory.request": "40Gi"})");
  v1::ExtenderFilterResult f;
  REQUIRE(s.filter(pod, {"h200-a", "h200-b", "ghost"}, &f).ok());
  CHECK(std::vector<std::string>(f.node_names().begin(), f.node_names().end()) == std::vector<std::string>{"h200-a", "h200-b"});
  CHECK(f.failed_and_unresolvable_nodes().count("ghost") == 1);

  v1::ExtenderArgs args;
  args.set_pod(pod.dump());
  args.add_node_names("h200-b");
  args.add_node_names("h200-a");
  v1::HostPriorityList p;
  grpc::ClientContext pctx;
  REQUIRE(s.extender->Prioritize(&pctx, args, &p).ok());
  REQUIRE(p.host_priorities_size() == 2);
  CHECK(p.host_priorities(0).host() == "h200-b");  // in the order sent
  for (const auto& hp : p.host_priorities()) CHECK((hp.score() >= 0 && hp.score() <= 10));

  v1::ExtenderBindingResult b;
  REQUIRE(s.bind("team-a", "chat-0", "h200-b", &b).ok());
  const auto& alloc = b.allocation();
  CHECK(alloc.pod() == "team-a/chat-0");
  CHECK(alloc.node() == "h200-b");
  REQUIRE(alloc.gpu_indices_size() == 1);
  CHECK(alloc.gpu_memory_mib(0) == 40960);
  CHECK(alloc.annotations().at("nvidia.com/container.server.gpus.devices") == std::to_string(alloc.gpu_indices(0)));
  CHECK(alloc.annotations().count("nvidia.com/container.server.gpu-compute.portion") == 1);

  v1::ExplainRequest explain;
  explain.set_pod(kube_pod("huge", R"({"nvidia.com/container.server.gpu-memory.request": "200Gi"})").dump());
  v1::ExplainResponse why;
  grpc::ClientContext ectx;
  REQUIRE(s.cluster->Explain(&ectx, explain, &why).ok());
  CHECK(why.summary().find("0/2 nodes are available") == 0);
  REQUIRE(why.nodes_size() == 2);
  CHECK(why.nodes(0).node() == "h200-a");
  CHECK_FALSE(why.nodes(0).reasons().empty());

  v1::SnapshotResponse snap;
  grpc::ClientContext sctx;
  REQUIRE(s.cluster->Snapshot(&sctx, v1::SnapshotRequest(), &snap).ok());
  REQUIRE(snap.bindings_size() == 1);
  CHECK(snap.bindings(0).pod() == "team-a/chat-0");
  CHECK(snap.bindings(0).node() == "h200-b");
  CHECK(snap.nodes_size() == 2);

  v1::ReleaseRequest release;
  release.set_pod_namespace("team-a");
  release.set_pod_name("chat-0");
  v1::ReleaseResponse released;
  grpc::ClientContext rctx;
  REQUIRE(s.cluster->Release(&rctx, release, &released).ok());
  CHECK(s.core->snapshot().bindings.empty());
  grpc::ClientContext again;
  CHECK(s.cluster->Release(&again, release, &released).ok());  // idempotent: was NOT_FOUND the second time

  v1::RemoveRequest remove;
  remove.set_kind("Node");
  remove.set_name("h200-a");
  v1::RemoveResponse removed;
  grpc::ClientContext mctx;
  REQUIRE(s.cluster->Remove(&mctx, remove, &removed).ok());
  CHECK(s.core->snapshot().nodes.size() == 1);
}

TEST_CASE("Filter with full Nodes learns them; Sync replaces the ledger and reports conflicts") {
  Server s;
  v1::ExtenderArgs args;
  args.set_pod(kube_pod("p", R"({"gpu-fraction": "0.5"})").dump());
  args.add_nodes(kube_node("fresh", 2, "81559").dump());
  v1::ExtenderFilterResult f;
  grpc::ClientContext ctx;
  REQUIRE(s.extender->Filter(&ctx, args, &f).ok());
  CHECK(f.node_names_size() == 1);
  CHECK(s.core->snapshot().nodes.size() == 1);

  v1::SyncRequest sync;
  sync.add_bound_pods(PodBuilder("x").gpu_memory("60Gi").annotation("nvidia.com/container.main.gpus.devices", "0").bound_to("fresh").obj.dump());
  sync.add_bound_pods(PodBuilder("y").gpu_memory("60Gi").annotation("nvidia.com/container.main.gpus.devices", "0").bound_to("fresh").obj.dump());
  v1::SyncResponse synced;
  grpc::ClientContext sctx;
  REQUIRE(s.cluster->Sync(&sctx, sync, &synced).ok());
  REQUIRE(synced.conflicts_size() == 1);
  CHECK(synced.conflicts(0).find("default/y") == 0);
}

TEST_CASE("a Sync that lists no pods keeps every binding unless it says cluster_empty") {
  Server s;
  s.apply({nvf("a", 2, 80000).obj});
  v1::SyncRequest one;
  one.add_bound_pods(PodBuilder("x").whole(1).bound_to("a").obj.dump());
  v1::SyncResponse synced;
  grpc::ClientContext ctx;
  REQUIRE(s.cluster->Sync(&ctx, one, &synced).ok());
  REQUIRE(s.core->snapshot().bindings.size() == 1);
  // Bytes that parse as a SyncRequest with nothing in it (an unknown field 9): no bound_pods.
  auto [st, body] = raw_unary(*s.channel, "/fracpack.v1.Cluster/Sync", std::string("\x48\x01", 2));
  CHECK(st.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(st.error_message().find("cluster_empty") != std::string::npos);
  CHECK(s.core->snapshot().bindings.size() == 1);
  v1::SyncRequest empty;
  empty.set_cluster_empty(true);
  grpc::ClientContext ectx;
  REQUIRE(s.cluster->Sync(&ectx, empty, &synced).ok());
  CHECK(s.core->snapshot().bindings.empty());
}

TEST_CASE("all_nodes: Filter without names answers the best nodes; misuse is INVALID_ARGUMENT") {
  Server s;
  s.apply({nvf("a", 2, 80000).obj, nvf("b", 1, 16000).obj});
  v1::ExtenderArgs args;
  args.set_pod(PodBuilder("p").gpu_memory("10Gi").obj.dump());
  args.set_all_nodes(true);
  args.set_max_nodes(1);
  v1::ExtenderFilterResult f;
  grpc::ClientContext ctx;
  REQUIRE(s.extender->Filter(&ctx, args, &f).ok());
  REQUIRE(f.node_names_size() == 1);
  CHECK(f.node_names(0) == "b");  // pack: the smaller GPU leaves less idle memory
  auto expect_bad = [&](v1::ExtenderArgs bad, const char* field, bool prioritize) {
    CAPTURE(field);
    grpc::ClientContext c;
    v1::ExtenderFilterResult fr;
    v1::HostPriorityList hp;
    auto st = prioritize ? s.extender->Prioritize(&c, bad, &hp) : s.extender->Filter(&c, bad, &fr);
    CHECK(st.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    auto detail_of = detail<google::rpc::BadRequest>(st);
    REQUIRE(detail_of);
    CHECK(detail_of->field_violations(0).field() == field);
  };
  v1::ExtenderArgs both = args;
  both.add_node_names("a");
  expect_bad(both, "all_nodes", false);
  v1::ExtenderArgs negative = args;
  negative.set_max_nodes(-1);
  expect_bad(negative, "max_nodes", false);
  expect_bad(args, "all_nodes", true);  // Prioritize scores names
  v1::ExtenderArgs stray;
  stray.set_pod(args.pod());
  stray.add_node_names("a");
  stray.set_max_nodes(3);
  expect_bad(stray, "max_nodes", false);
}

TEST_CASE("every refusal maps to its gRPC code, with QuotaFailure and BadRequest details") {
  Server s;
  s.apply({nvf("a", 1, 24600).obj, nvf("q", 4, 80000).obj});
  v1::ExtenderFilterResult f;
  v1::ExtenderBindingResult b;

  SUBCASE("a pod that is not JSON: INVALID_ARGUMENT naming the field") {
    v1::ExtenderArgs args;
    args.set_pod("{\"metadata\": ");
    args.add_node_names("a");
    grpc::ClientContext ctx;
    auto st = s.extender->Filter(&ctx, args, &f);
    CHECK(st.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    auto bad = detail<google::rpc::BadRequest>(st);
    REQUIRE(bad);
    CHECK(bad->field_violations(0).field() == "pod");
  }
  SUBCASE("a pod with a bad annotation: INVALID_ARGUMENT whose message names pod, field and rule") {
    auto st = s.filter(PodBuilder("bad").annotation("gpu-fraction", "1.5").obj, {"a"}, &f);
    CHECK(st.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK(st.error_message().find("default/bad") != std::string::npos);
    CHECK(st.error_message().find("gpu-fraction") != std::string::npos);
  }
  SUBCASE("an infeasible pod is an OK answer") {
    auto st = s.filter(PodBuilder("big").gpu_memory("40Gi").obj, {"a"}, &f);
    CHECK(st.ok());
    CHECK(f.node_names().empty());
    CHECK(f.failed_and_unresolvable_nodes().at("a").find("GPUs smaller than the memory request") != std::string::npos);
  }
  SUBCASE("NOT_FOUND: an unknown node, a pod no Filter saw, a release of a pod never bound") {
    REQUIRE(s.filter(PodBuilder("p").gpu_memory("1Gi").obj, {"a"}, &f).ok());
    CHECK(s.bind("default", "p", "ghost", &b).error_code() == grpc::StatusCode::NOT_FOUND);
    CHECK(s.bind("default", "never", "a", &b).error_code() == grpc::StatusCode::NOT_FOUND);
    v1::ReleaseRequest release;
    release.set_pod_name("nobody");
    v1::ReleaseResponse r;
    grpc::ClientContext ctx;
    CHECK(s.cluster->Release(&ctx, release, &r).error_code() == grpc::StatusCode::NOT_FOUND);
    v1::RemoveRequest remove;
    remove.set_kind("Queue");
    remove.set_name("nobody");
    v1::RemoveResponse removed;
    grpc::ClientContext rctx;
    CHECK(s.cluster->Remove(&rctx, remove, &removed).error_code() == grpc::StatusCode::NOT_FOUND);
  }
  SUBCASE("ABORTED for a lost race, ALREADY_EXISTS for a pod bound elsewhere") {
    for (const char* name : {"p1", "p2", "p3"}) REQUIRE(s.filter(PodBuilder(name).gpu_memory("12Gi").obj, {"a"}, &f).ok());
    REQUIRE(s.bind("default", "p1", "a", &b).ok());
    REQUIRE(s.bind("default", "p2", "a", &b).ok());
    auto lost = s.bind("default", "p3", "a", &b);
    CHECK(lost.error_code() == grpc::StatusCode::ABORTED);
    CHECK(lost.error_message().find("no longer fits node a") != std::string::npos);
    CHECK(s.bind("default", "p1", "a", &b).ok());  // idempotent
    CHECK(s.bind("default", "p1", "q", &b).error_code() == grpc::StatusCode::ALREADY_EXISTS);
    CHECK(api::from_grpc(lost) == Code::kUnschedulable);
  }
  SUBCASE("FAILED_PRECONDITION with a PreconditionFailure for a Bind that can never fit that node") {
    REQUIRE(s.filter(PodBuilder("huge").gpu_memory("40Gi").obj, {"a"}, &f).ok());  // a has one 24 GB GPU
    auto never = s.bind("default", "huge", "a", &b);
    CHECK(never.error_code() == grpc::StatusCode::FAILED_PRECONDITION);  // not ABORTED: retrying cannot help
    CHECK(never.error_message().find("can never fit node a") != std::string::npos);
    auto why = detail<google::rpc::PreconditionFailure>(never);
    REQUIRE(why);
    CHECK(why->violations(0).type() == "UnschedulableAndUnresolvable");
    CHECK(why->violations(0).subject() == "node:a");
    CHECK(api::from_grpc(never) == Code::kUnschedulableAndUnresolvable);  // the client maps it back
    CHECK(api::from_grpc(never.error_code()) == Code::kFailedPrecondition);
    auto client = api::connect_grpc(s.address(), {});
    REQUIRE(client.is_ok());
    CHECK((*client)->bind("default", "huge", "", "a").code() == Code::kUnschedulableAndUnresolvable);
  }
  SUBCASE("RESOURCE_EXHAUSTED with a QuotaFailure naming the queue") {
    s.apply({team_queue(1)});
    REQUIRE(s.filter(PodBuilder("two").whole(2).label("kai.scheduler/queue", "team").obj, {"q"}, &f).ok());
    CHECK(f.failed_nodes().at("q").find("queue team") == 0);
    auto st = s.bind("default", "two", "q", &b);
    CHECK(st.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
    auto quota = detail<google::rpc::QuotaFailure>(st);
    REQUIRE(quota);
    CHECK(quota->violations(0).subject() == "queue:team");
    CHECK(quota->violations(0).description().find("raise gpu.limit of queue team") != std::string::npos);
  }
  SUBCASE("a request that is missing its names: INVALID_ARGUMENT with the field") {
    auto st = s.bind("default", "", "a", &b);
    CHECK(st.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    auto bad = detail<google::rpc::BadRequest>(st);
    REQUIRE(bad);
    CHECK(bad->field_violations(0).field() == "pod_name");
  }
}

TEST_CASE("every Code survives to_grpc and back through from_grpc, as docs/grpc.md's table says") {
  const std::pair<Code, grpc::StatusCode> table[] = {
      {Code::kOk, grpc::StatusCode::OK},
      {Code::kInvalidArgument, grpc::StatusCode::INVALID_ARGUMENT},
      {Code::kNotFound, grpc::StatusCode::NOT_FOUND},
      {Code::kResourceExhausted, grpc::StatusCode::RESOURCE_EXHAUSTED},
      {Code::kUnschedulable, grpc::StatusCode::ABORTED},
      {Code::kUnschedulableAndUnresolvable, grpc::StatusCode::FAILED_PRECONDITION},
      {Code::kFailedPrecondition, grpc::StatusCode::FAILED_PRECONDITION},
      {Code::kAlreadyExists, grpc::StatusCode::ALREADY_EXISTS},
      {Code::kInternal, grpc::StatusCode::INTERNAL},
  };
  for (const auto& [code, wire] : table) {
    CAPTURE(code_name(code));
    const grpc::Status sent = api::to_grpc(code == Code::kOk ? Status::ok() : Status(code, "why"));
    CHECK(sent.error_code() == wire);
    CHECK(api::from_grpc(sent) == code);
  }
}

TEST_CASE("a gRPC status message is bounded whatever the Status says") {
  const grpc::Status sent = api::to_grpc(Status(Code::kNotFound, std::string(20'000, 'x')));
  CHECK(sent.error_message().size() < 1'100);
  CHECK(sent.error_message().ends_with("…(20000 characters)"));
}

TEST_CASE("a 10,000-character pod name is quoted short: the answer fits gRPC's default metadata limit") {
  Server s;
  s.apply({nvf("a", 1, 24600).obj});
  v1::ExtenderFilterResult f;
  auto st = s.filter(PodBuilder(std::string(10'000, 'p')).obj, {"a"}, &f);
  CHECK(st.error_code() == grpc::StatusCode::INVALID_ARGUMENT);  // was 10,101 characters
  CHECK(st.error_message().size() < 300);
  CHECK(st.error_message().find("…(10000 characters)") != std::string::npos);
  auto bad = detail<google::rpc::BadRequest>(st);
  REQUIRE(bad);
  CHECK(bad->field_violations(0).description().size() < 300);
}

TEST_CASE("protobuf garbage gets INVALID_ARGUMENT and the server keeps serving") {
  Server s;
  s.apply({nvf("a", 1, 80000).obj});
  for (const char* method : {"/fracpack.v1.Extender/Filter", "/fracpack.v1.Extender/Bind", "/fracpack.v1.Cluster/Apply",
                             "/fracpack.v1.Cluster/Sync"}) {
    CAPTURE(method);
    auto [st, body] = raw_unary(*s.channel, method, std::string("\xff\xff\xff\xff\x0f garbage \x00\x01", 17));
    CHECK(st.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  }
  v1::ExtenderArgs deep;
  deep.set_pod(R"({"metadata":{"name":"deep"},"x":)" + std::string(150000, '[') + std::string(150000, ']') + "}");
  deep.add_node_names("a");
  v1::ExtenderFilterResult deep_result;
  grpc::ClientContext deep_ctx;
  auto deep_status = s.extender->Filter(&deep_ctx, deep, &deep_result);
  CHECK(deep_status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(deep_status.error_message() == "pod: nests deeper than 128 levels; Kubernetes objects are far shallower");
  auto [unknown, body] = raw_unary(*s.channel, "/fracpack.v1.Extender/Schedule", "");
  CHECK(unknown.error_code() == grpc::StatusCode::UNIMPLEMENTED);
  auto [huge, body2] = raw_unary(*s.channel, "/fracpack.v1.Extender/Filter", std::string(2u << 20, 'x'));
  CHECK(huge.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);  // above the message limit
  v1::ExtenderFilterResult f;
  CHECK(s.filter(PodBuilder("still").gpu_memory("1Gi").obj, {"a"}, &f).ok());
  CHECK(f.node_names_size() == 1);
}

TEST_CASE("health checking answers SERVING; reflection lists both services") {
  Server s;
  // grpc.health.v1.HealthCheckRequest{service} encoded by hand: field 1, length-delimited.
  for (const std::string service : {"", "fracpack.v1.Extender", "fracpack.v1.Cluster"}) {
    CAPTURE(service);
    std::string request;
    if (!service.empty()) request = std::string("\x0a", 1) + static_cast<char>(service.size()) + service;
    auto [st, body] = raw_unary(*s.channel, "/grpc.health.v1.Health/Check", request);
    REQUIRE(st.ok());
    CHECK(body == std::string("\x08\x01", 2));  // status: SERVING
  }
  auto [missing, body] = raw_unary(*s.channel, "/grpc.health.v1.Health/Check", std::string("\x0a\x03xyz", 5));
  CHECK(missing.error_code() == grpc::StatusCode::NOT_FOUND);

  // grpc.reflection.v1alpha.ServerReflectionRequest{list_services: ""}: field 7, empty string.
  grpc::GenericStub stub(s.channel);
  grpc::CompletionQueue cq;
  grpc::ClientContext ctx;
  auto call = stub.PrepareCall(&ctx, "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", &cq);
  void* tag = nullptr;
  bool ok = false;
  call->StartCall(reinterpret_cast<void*>(1));
  REQUIRE(cq.Next(&tag, &ok));
  REQUIRE(ok);
  grpc::Slice slice(std::string("\x3a\x00", 2));
  grpc::ByteBuffer request(&slice, 1);
  call->Write(request, reinterpret_cast<void*>(2));
  REQUIRE(cq.Next(&tag, &ok));
  grpc::ByteBuffer response;
  call->Read(&response, reinterpret_cast<void*>(3));
  REQUIRE(cq.Next(&tag, &ok));
  REQUIRE(ok);
  std::vector<grpc::Slice> slices;
  REQUIRE(response.Dump(&slices).ok());
  std::string text;
  for (const auto& sl : slices) text.append(reinterpret_cast<const char*>(sl.begin()), sl.size());
  CHECK(text.find("fracpack.v1.Extender") != std::string::npos);
  CHECK(text.find("fracpack.v1.Cluster") != std::string::npos);
  CHECK(text.find("grpc.health.v1.Health") != std::string::npos);
  call->WritesDone(reinterpret_cast<void*>(4));
  REQUIRE(cq.Next(&tag, &ok));
  grpc::Status status;
  call->Finish(&status, reinterpret_cast<void*>(5));
  REQUIRE(cq.Next(&tag, &ok));
  CHECK(status.ok());
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
}

TEST_CASE("a second gRPC server on a port already served fails to start") {
  Server first;
  auto opened = Extender::open(ExtenderOptions{});
  REQUIRE(opened.is_ok());
  api::Metrics metrics;
  api::GrpcOptions options;
  options.address = first.address();
  api::GrpcFront second(**opened, metrics, options);
  auto started = second.start();
  REQUIRE_FALSE(started.is_ok());
  CHECK(started.status().message().find(first.address()) != std::string::npos);
}

TEST_CASE("TLS files are checked before gRPC starts: a key of another certificate is said as such, naming both") {
  TlsFiles files;
  CHECK(api::check_tls_files({}).is_ok());
  CHECK(api::check_tls_files({files.server_cert, files.server_key, ""}).is_ok());
  CHECK(api::check_tls_files({files.server_cert, files.server_key, files.ca}).is_ok());
  auto refused = [](const api::TlsFiles& tls, std::initializer_list<std::string> says) {
    const Status st = api::check_tls_files(tls);
    CHECK(st.code() == Code::kInvalidArgument);
    for (const auto& s : says) CHECK_MESSAGE(st.message().find(s) != std::string::npos, st.message(), " lacks ", s);
  };
  refused({files.server_cert, files.client_key, ""}, {"--tls-key " + files.client_key + " does not match the certificate in --tls-cert " + files.server_cert});
  refused({files.dir.string() + "/missing.pem", files.server_key, ""}, {"cannot read", "missing.pem"});
  refused({files.server_key, files.server_key, ""}, {"no PEM certificate", files.server_key});  // a key where the certificate goes
  refused({files.server_cert, files.server_cert, ""}, {"no PEM private key", files.server_cert});
  refused({files.server_cert, files.server_key, files.server_key}, {"--tls-client-ca", "no PEM certificate"});
  const Status named = api::check_tls_files({files.server_cert, files.client_key, ""}, {"--http-tls-cert", "--http-tls-key", "--x"});
  CHECK(named.message().find("--http-tls-key " + files.client_key + " does not match the certificate in --http-tls-cert") == 0);
  refused({files.server_cert, "", ""}, {"both a certificate and its key"});
  const std::string garbage = (files.dir / "garbage.pem").string();
  std::ofstream(garbage) << "-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n";
  refused({garbage, files.server_key, ""}, {"no PEM certificate", garbage});

  auto opened = Extender::open(ExtenderOptions{});
  REQUIRE(opened.is_ok());
  api::Metrics metrics;
  api::GrpcOptions options;
  options.tls = {files.server_cert, files.stranger_key, ""};
  api::GrpcFront front(**opened, metrics, options);
  auto started = front.start();
  REQUIRE_FALSE(started.is_ok());
  CHECK(started.status().message().find("does not match") != std::string::npos);
  CHECK(started.status().message().find("port is in use") == std::string::npos);  // what it said before

  // serve checks them once for both fronts (HTTPS too), before the state file exists.
  const std::string state = (files.dir / "state.db").string();
  const std::string log = (files.dir / "serve.log").string();
  const std::string command = fmt::format("timeout 20 '{}' serve --http 127.0.0.1:24161 --tls-cert '{}' --tls-key '{}' --state '{}' > '{}' 2>&1",
                                          FRACPACK_BINARY, files.server_cert, files.client_key, state, log);
  const int status = std::system(command.c_str());
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 2);
  const std::string said = read_file(log);
  CHECK_MESSAGE(said.find("--tls-key " + files.client_key + " does not match") != std::string::npos, said);
  CHECK(!std::filesystem::exists(state));
}

TEST_CASE("a gRPC connection that never handshakes, or stops calling, is closed; one that calls is served") {
  using namespace std::chrono_literals;
  Server s({}, [](api::GrpcOptions& o) {
    o.handshake_timeout = 300ms;
    o.idle_timeout = 500ms;
  });
  const auto start = std::chrono::steady_clock::now();
  RawConnection silent(s.port);
  std::string read = "the server's settings frame";
  while (!read.empty() && read != "timeout" && read != "error") read = silent.read_some();  // then its close
  CHECK(read.empty());
  CHECK(std::chrono::steady_clock::now() - start < 10s);
  // A caller that calls is served; once it stops, its connection is closed (the channel goes idle).
  s.apply({nvf("a", 1, 80000).obj});
  v1::ExtenderFilterResult out;
  const grpc::Status first = s.filter(kube_pod("p"), {"a"}, &out);
  REQUIRE_MESSAGE(first.ok(), first.error_message());
  CHECK(s.channel->GetState(false) == GRPC_CHANNEL_READY);
  for (int i = 0; i < 100 && s.channel->GetState(false) == GRPC_CHANNEL_READY; ++i) std::this_thread::sleep_for(100ms);
  CHECK(s.channel->GetState(false) == GRPC_CHANNEL_IDLE);
  REQUIRE(s.filter(kube_pod("p"), {"a"}, &out).ok());  // and it reconnects when it calls again
}

TEST_CASE("TLS and mutual TLS: the client that trusts the CA and shows a certificate gets in, others do not") {
  TlsFiles files;  // a CA, a server certificate for 127.0.0.1, a client certificate; and a stranger's
  SUBCASE("server TLS") {
    Server s({files.server_cert, files.server_key, ""});
    REQUIRE(s.core->apply({nvf("a", 1, 80000).obj}, nullptr).is_ok());
    auto good = api::connect("grpc://" + s.address(), {files.ca, "", "", ""});
    REQUIRE(good);
    auto nodes = (*good)->node_names();
    REQUIRE_MESSAGE(nodes.is_ok(), nodes.status().message());
    CHECK(*nodes == std::vector<std::string>{"a"});
    auto plain = api::connect(s.address());  // plaintext to a TLS port
    REQUIRE(plain);
    CHECK_FALSE((*plain)->node_names().is_ok());
    auto stranger = api::connect(s.address(), {files.stranger_ca, "", "", ""});  // does not trust this server
    REQUIRE(stranger);
    CHECK_FALSE((*stranger)->node_names().is_ok());
  }
  SUBCASE("mutual TLS") {
    Server s({files.server_cert, files.server_key, files.ca});
    auto good = api::connect(s.address(), {files.ca, files.client_cert, files.client_key, ""});
    REQUIRE(good);
    auto nodes = (*good)->node_names();
    CHECK_MESSAGE(nodes.is_ok(), nodes.status().message());
    auto anonymous = api::connect(s.address(), {files.ca, "", "", ""});  // no client certificate
    REQUIRE(anonymous);
    CHECK_FALSE((*anonymous)->node_names().is_ok());
    auto forged = api::connect(s.address(), {files.ca, files.stranger_cert, files.stranger_key, ""});  // signed by another CA
    REQUIRE(forged);
    CHECK_FALSE((*forged)->node_names().is_ok());
  }
  SUBCASE("bad TLS files are named errors, not crashes") {
    auto opened = Extender::open(ExtenderOptions{});
    REQUIRE(opened.is_ok());
    api::Metrics metrics;
    api::GrpcOptions options;
    options.tls = {files.server_cert, "/nonexistent/key.pem", ""};
    auto started = api::GrpcFront(**opened, metrics, options).start();
    REQUIRE_FALSE(started.is_ok());
    CHECK(started.status().message().find("--tls-key /nonexistent/key.pem") != std::string::npos);
    options.tls = {files.server_cert, "", ""};
    CHECK_FALSE(api::GrpcFront(**opened, metrics, options).start().is_ok());
  }
}

TEST_CASE("many gRPC clients Filter and Bind one small cluster at once: nothing overcommits, refusals are clean") {
  Server s;
  // 3 nodes × 2 GPUs of 24,000 MiB; pods of 5 or 7 GiB, some time-slicing and some MPS: far more
  // than fits, so threads race for the last gaps.
  s.apply({nvf("a", 2, 24000).obj, nvf("b", 2, 24000).obj, nvf("c", 2, 24000).obj});
  constexpr int kThreads = 8;
  constexpr int kPodsPerThread = 40;
  std::atomic<int> bound{0};
  std::atomic<int> refused{0};
  std::atomic<int> unclean{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto client = api::connect(s.address());
      if (!client) {
        ++unclean;
        return;
      }
      for (int i = 0; i < kPodsPerThread; ++i) {
        PodBuilder pod(fmt::format("t{}-p{}", t, i));
        pod.gpu_memory(i % 2 == 0 ? "5Gi" : "7Gi");
        if (i % 3 == 0) pod.sm_sharing();
        const std::string text = pod.obj.dump();
        auto f = (*client)->filter(text, {"a", "b", "c"});
        if (!f) {
          ++unclean;
          continue;
        }
        if (f->node_names.empty()) {
          ++refused;
          continue;
        }
        Status st = (*client)->bind("default", fmt::format("t{}-p{}", t, i), "", f->node_names[static_cast<std::size_t>(i) % f->node_names.size()]);
        if (st.is_ok()) {
          ++bound;
        } else if (st.code() == Code::kUnschedulable && st.message().find("no longer fits") != std::string::npos) {
          ++refused;
        } else {
          ++unclean;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(unclean == 0);
  CHECK(bound + refused == kThreads * kPodsPerThread);
  CHECK(bound > 0);
  CHECK(refused > 0);
  const LedgerSnapshot snap = s.core->snapshot();
  CHECK(snap.bindings.size() == static_cast<std::size_t>(bound.load()));
  // No GPU over memory, and no GPU mixes time-slicing and sm-sharing pods: a pod's mode is known
  // from its name (every third is sm-sharing).
  for (const auto& node : snap.nodes) {
    for (const auto& gpu : node.gpus) {
      CAPTURE(node.name);
      CAPTURE(gpu.index);
      CHECK(gpu.used <= gpu.memory);
      std::set<bool> modes;
      for (const auto& holder : gpu.holders) modes.insert(std::stoi(holder.substr(holder.find("-p") + 2)) % 3 == 0);
      CHECK(modes.size() <= 1);
      if (!modes.empty()) CHECK(gpu.state == (*modes.begin() ? GpuState::kSharedSmSharing : GpuState::kSharedTimeSlicing));
    }
  }
}

}  // namespace
}  // namespace fracpack::test
