// Who may call what: every verb of the JSON front and every RPC of the gRPC front, tried with no
// credentials, wrong credentials and the right ones (access.hpp).
#include <httplib.h>

#include <fstream>

#include <grpcpp/grpcpp.h>

#include <doctest/doctest.h>

#include "fracpack/v1/cluster.grpc.pb.h"
#include "fracpack/v1/extender.grpc.pb.h"
#include "plugin_api/access.hpp"
#include "plugin_api/client.hpp"
#include "plugin_api/certificate_name.hpp"
#include "plugin_api/grpc_front.hpp"
#include "plugin_api/http_front.hpp"
#include "support/builders.hpp"
#include "support/kube_payloads.hpp"
#include "support/raw_connection.hpp"
#include "support/temp_files.hpp"
#include "support/tls_files.hpp"

namespace fracpack::test {
namespace {

constexpr const char* kTokens =
    "# token,user,uid,groups\n"
    "sched-token-0123456789,kube-scheduler,1\n"
    "admin-token-0123456789,admin,2,\"ops,fracpack\"\n"
    "\n"
    "other-token-0123456789,stranger\n";

struct TokenFile {
  std::string path;
  explicit TokenFile(const std::string& text = kTokens) : path(temp_file(fmt::format("tokens-{}", std::rand()), text).string()) {}
  ~TokenFile() { std::remove(path.c_str()); }
  TokenFile(const TokenFile&) = delete;
  TokenFile& operator=(const TokenFile&) = delete;
};

std::shared_ptr<const api::AccessPolicy> policy(const TokenFile& file, bool certificates = false,
                                                std::vector<std::string> schedulers = {"kube-scheduler"}) {
  auto loaded = api::AccessPolicy::load({file.path, certificates, std::move(schedulers), {"admin"}});
  REQUIRE_MESSAGE(loaded.is_ok(), loaded.status().message());
  return std::make_shared<const api::AccessPolicy>(std::move(*loaded));
}

/// Who calls: the Authorization header sent, and whether the verb should be allowed.
struct Caller {
  const char* name;
  std::string authorization;
  int schedule;  ///< expected HTTP status class for a scheduler verb: 0 allowed, else 401/403
  int read;
};

const std::vector<Caller> kCallers = {
    {"nobody", "", 401, 401},
    {"a wrong token", "Bearer not-a-token", 401, 401},
    {"a token in the wrong scheme", "Basic sched-token-0123456789", 401, 401},
    {"a stranger", "Bearer other-token-0123456789", 403, 403},
    {"the scheduler", "Bearer sched-token-0123456789", 0, 0},
    {"the administrator", "Bearer admin-token-0123456789", 403, 0},
};

TEST_CASE("the token file: kube-apiserver's format read; bad lines refused with file and line; tokens compared whole") {
  TokenFile good;
  auto p = policy(good);
  CHECK(p->enabled());
  CHECK(p->check("", "Bearer sched-token-0123456789", api::Permission::kSchedule, "filter").allowed());
  CHECK(p->check("", "bearer sched-token-0123456789", api::Permission::kSchedule, "filter").allowed());  // RFC 9110 §11.1
  CHECK(p->check("", "BEARER\tsched-token-0123456789", api::Permission::kSchedule, "filter").allowed());
  CHECK_FALSE(p->check("", "Bearersched-token-0123456789", api::Permission::kSchedule, "filter").allowed());
  CHECK_FALSE(p->check("", "Basic sched-token-0123456789", api::Permission::kSchedule, "filter").allowed());
  CHECK_FALSE(p->check("", "Bearer sched-token-012345678", api::Permission::kSchedule, "filter").allowed());  // a prefix
  CHECK_FALSE(p->check("", "Bearer sched-token-01234567890", api::Permission::kSchedule, "filter").allowed());
  const auto refused = p->check("", "Bearer sched-token-01234567890", api::Permission::kSchedule, "filter");
  CHECK(refused.message.find("sched-token") == std::string::npos);  // never echoes the token
  CHECK(p->check("", "Bearer admin-token-0123456789", api::Permission::kAdminister, "Apply").allowed());
  CHECK(p->check("admin", "", api::Permission::kAdminister, "Apply").allowed());  // a certificate name
  const auto denied = p->check("", "Bearer other-token-0123456789", api::Permission::kAdminister, "Apply");
  CHECK(denied.outcome == api::AccessDecision::Outcome::kForbidden);
  CHECK(denied.message == "Apply: caller \"stranger\" may not administer here (--allow-admin names who may)");
  for (const auto& [text, error] : std::vector<std::pair<std::string, std::string>>{
           {"tok-only\n", "line 1: expected token,user"},
           {"a,b\n\n,c\n", "line 3: expected token,user"},
           {"a,b\na,c\n", "line 2: a token given twice"},
           {"# nothing\n", "no token in it"}}) {
    TokenFile bad(text);
    auto loaded = api::AccessPolicy::load({bad.path, false, {}, {}});
    REQUIRE_FALSE(loaded.is_ok());
    CHECK_MESSAGE(loaded.status().message().find(error) != std::string::npos, loaded.status().message());
    CHECK(loaded.status().message().find(bad.path) != std::string::npos);
  }
  CHECK_FALSE(api::AccessPolicy::load({"/nonexistent/tokens", false, {}, {}}).is_ok());
  // No allow-list for the scheduler verbs: every authenticated caller may schedule, nobody administers.
  auto open_list = policy(good, false, {});
  CHECK(open_list->check("", "Bearer other-token-0123456789", api::Permission::kSchedule, "filter").allowed());
  CHECK_FALSE(api::AccessPolicy{}.enabled());
  CHECK(api::AccessPolicy{}.check("", "", api::Permission::kAdminister, "Apply").allowed());
}

struct HttpServer {
  std::unique_ptr<Extender> core;
  api::Metrics metrics;
  std::unique_ptr<api::HttpFront> front;
  int port = 0;
  HttpServer(std::shared_ptr<const api::AccessPolicy> access, api::TlsFiles tls = {}) {
    auto opened = Extender::open(ExtenderOptions{});
    REQUIRE(opened.is_ok());
    core = std::move(*opened);
    REQUIRE(core->apply({nvf("a", 1, 81920).obj}, nullptr).is_ok());
    api::HttpOptions options;
    options.listen.tls = std::move(tls);
    options.access = std::move(access);
    front = std::make_unique<api::HttpFront>(*core, metrics, options);
    auto started = front->start();
    REQUIRE_MESSAGE(started.is_ok(), started.status().message());
    port = *started;
  }
};

TEST_CASE("JSON front: every verb with no, wrong and right credentials; probes stay open") {
  TokenFile tokens;
  HttpServer s(policy(tokens));
  const std::string pod = json{{"Pod", kube_pod("p")}, {"NodeNames", {"a"}}}.dump();
  struct Verb {
    const char* method;
    const char* path;
    std::string body;
    bool read;
  };
  const std::vector<Verb> verbs = {
      {"POST", "/filter", pod, false},
      {"POST", "/prioritize", pod, false},
      {"POST", "/bind", R"({"PodName":"p","PodNamespace":"team-a","Node":"a"})", false},
      {"POST", "/preempt", json{{"Pod", kube_pod("p")}}.dump(), false},
      {"POST", "/explain", json{{"Pod", kube_pod("p")}}.dump(), true},
      {"GET", "/snapshot", "", true},
      {"GET", "/debug/verify", "", true},
      {"GET", "/metrics", "", true},
  };
  httplib::Client c("127.0.0.1", s.port);
  for (const auto& caller : kCallers) {
    for (const auto& v : verbs) {
      CAPTURE(caller.name);
      CAPTURE(v.path);
      httplib::Headers headers;
      if (!caller.authorization.empty()) headers.emplace("Authorization", caller.authorization);
      auto res = std::string(v.method) == "GET" ? c.Get(v.path, headers) : c.Post(v.path, headers, v.body, "application/json");
      REQUIRE(res);
      const int expected = v.read ? caller.read : caller.schedule;
      if (expected == 0) {
        CHECK(res->status != 401);
        CHECK(res->status != 403);
      } else {
        CHECK(res->status == expected);
        CHECK_FALSE(json::parse(res->body, nullptr, false).value("Error", "").empty());
        if (expected == 401) CHECK(res->get_header_value("WWW-Authenticate") == "Bearer realm=\"fracpack\"");
      }
    }
  }
  // Refused binds changed nothing; the scheduler's bind (after its Filter) did.
  CHECK(s.core->snapshot().bindings.size() == 1);
  for (const char* probe : {"/healthz", "/readyz"}) CHECK(c.Get(probe)->status == 200);
}

TEST_CASE("JSON front: a caller without credentials is refused on its header; its body is never read") {
  TokenFile tokens;
  HttpServer s(policy(tokens));
  httplib::Client c("127.0.0.1", s.port);
  // An 8 MB body announced, none sent: the answer comes at once (a server that read first would
  // wait for the body until its deadline), and the connection closes.
  auto res = c.Get("/healthz");  // warm: the server is up
  REQUIRE(res);
  RawConnection raw(s.port, nullptr, 10);
  REQUIRE(raw.send("POST /bind HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 8000000\r\n\r\n"));
  const std::string answer = raw.read_some();
  CHECK(answer.rfind("HTTP/1.1 401", 0) == 0);
  CHECK(answer.find("WWW-Authenticate: Bearer") != std::string::npos);
  // A HEAD refused is refused without a body, as every HEAD answer (RFC 9110 §9.3.2).
  RawConnection head(s.port, nullptr, 10);
  REQUIRE(head.send("HEAD /snapshot HTTP/1.1\r\nHost: x\r\n\r\n"));
  const std::string refused = head.read_all();
  CHECK(refused.rfind("HTTP/1.1 401", 0) == 0);
  CHECK(refused.substr(refused.size() - 4) == "\r\n\r\n");
  // With the token, the same route reads its body as before.
  auto bound = c.Post("/bind", {{"Authorization", "Bearer sched-token-0123456789"}}, R"({"PodName":"x","PodNamespace":"y","Node":"a"})",
                      "application/json");
  REQUIRE(bound);
  CHECK(bound->status == 200);
}

TEST_CASE("JSON front over mutual TLS: the certificate names the caller; a name not allowed is 403") {
  TlsFiles pki;
  TokenFile tokens;
  const std::string filter = json{{"Pod", kube_pod("p")}, {"NodeNames", {"a"}}}.dump();
  for (const auto& [allowed, expected] : std::vector<std::pair<std::string, int>>{{"client", 200}, {"kube-scheduler", 403}}) {
    CAPTURE(allowed);
    HttpServer s(policy(tokens, true, {allowed}), {pki.server_cert, pki.server_key, pki.ca});
    httplib::SSLClient c("127.0.0.1", s.port, pki.client_cert, pki.client_key);
    c.set_ca_cert_path(pki.ca.c_str());
    c.enable_server_certificate_verification(true);
    auto res = c.Post("/filter", filter, "application/json");
    REQUIRE_MESSAGE(res, httplib::to_string(res.error()));
    CHECK(res->status == expected);
  }
}

TEST_CASE("a certificate with two common names names nobody, whichever comes first (both fronts)") {
  TlsFiles pki;
  TokenFile tokens;
  HttpServer s(policy(tokens, true, {"client"}), {pki.server_cert, pki.server_key, pki.ca});
  const std::string filter = json{{"Pod", kube_pod("p")}, {"NodeNames", {"a"}}}.dump();
  for (const std::string subject : {"/CN=client/CN=nobody", "/CN=nobody/CN=client", "/O=no-cn"}) {
    CAPTURE(subject);
    const auto [cert, key] = pki.client_with_subject(fmt::format("odd-{}", subject.size()), subject);
    const std::string pem = read_file(cert);
    CHECK(api::certificate_name_of_pem(pem).empty());
    httplib::SSLClient c("127.0.0.1", s.port, cert, key);
    c.set_ca_cert_path(pki.ca.c_str());
    c.enable_server_certificate_verification(true);
    auto res = c.Post("/filter", filter, "application/json");
    REQUIRE_MESSAGE(res, httplib::to_string(res.error()));
    CHECK(res->status == 401);
  }
  CHECK(api::certificate_name_of_pem(read_file(pki.client_cert)) == "client");
  // gRPC: the same name from the same certificate.
  auto opened = Extender::open(ExtenderOptions{});
  REQUIRE(opened.is_ok());
  api::Metrics metrics;
  api::GrpcOptions options;
  options.tls = {pki.server_cert, pki.server_key, pki.ca};
  options.access = policy(tokens, true, {"client"});
  api::GrpcFront front(**opened, metrics, options);
  auto port = front.start();
  REQUIRE(port.is_ok());
  const std::string address = fmt::format("127.0.0.1:{}", *port);
  auto named = api::connect(address, {pki.ca, pki.client_cert, pki.client_key, ""});
  REQUIRE(named);
  CHECK((*named)->node_names().is_ok());
  const auto [cert, key] = pki.client_with_subject("odd-grpc", "/CN=client/CN=nobody");
  auto twice = api::connect(address, {pki.ca, cert, key, ""});
  REQUIRE(twice);
  const auto refused = (*twice)->node_names();
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.status().message().find("authenticate") != std::string::npos);
}

TEST_CASE("client CA and tokens together: a certificate is optional, a token is enough, nothing is not") {
  TlsFiles pki;
  TokenFile tokens;
  HttpServer s(policy(tokens, true, {"kube-scheduler", "client"}), {pki.server_cert, pki.server_key, pki.ca, true});
  const std::string filter = json{{"Pod", kube_pod("p")}, {"NodeNames", {"a"}}}.dump();
  for (const auto& [cert, token, expected] : std::vector<std::tuple<bool, const char*, int>>{
           {true, "", 200}, {false, "sched-token-0123456789", 200}, {false, "", 401}, {false, "other-token-0123456789", 403}}) {
    CAPTURE(cert);
    CAPTURE(token);
    httplib::SSLClient c("127.0.0.1", s.port, cert ? pki.client_cert : "", cert ? pki.client_key : "");
    c.set_ca_cert_path(pki.ca.c_str());
    c.enable_server_certificate_verification(true);
    if (*token != '\0') c.set_bearer_token_auth(token);
    auto res = c.Post("/filter", filter, "application/json");
    REQUIRE_MESSAGE(res, httplib::to_string(res.error()));
    CHECK(res->status == expected);
  }
  // A certificate another CA signed still fails the handshake: shown, it must verify.
  httplib::SSLClient forged("127.0.0.1", s.port, pki.stranger_cert, pki.stranger_key);
  forged.set_ca_cert_path(pki.ca.c_str());
  forged.set_bearer_token_auth("sched-token-0123456789");
  auto res = forged.Post("/filter", filter, "application/json");
  CHECK_FALSE((res && res->status == 200));
}

TEST_CASE("gRPC front: every RPC with no, wrong and right credentials") {
  TokenFile tokens;
  auto opened = Extender::open(ExtenderOptions{});
  REQUIRE(opened.is_ok());
  api::Metrics metrics;
  api::GrpcOptions options;
  options.access = policy(tokens);
  api::GrpcFront front(**opened, metrics, options);
  auto port = front.start();
  REQUIRE(port.is_ok());
  auto channel = grpc::CreateChannel(fmt::format("127.0.0.1:{}", *port), grpc::InsecureChannelCredentials());
  auto extender = v1::Extender::NewStub(channel);
  auto cluster = v1::Cluster::NewStub(channel);
  using Call = std::function<grpc::Status(grpc::ClientContext&)>;
  v1::ApplyRequest apply;
  apply.add_objects(nvf("a", 1, 81920).obj.dump());
  v1::ExtenderArgs args;
  args.set_pod(kube_pod("p").dump());
  args.add_node_names("a");
  v1::ReleaseRequest release;
  release.set_pod_name("p");
  v1::RemoveRequest remove;
  remove.set_kind("Node");
  remove.set_name("ghost");
  v1::ExplainRequest explain;
  explain.set_pod(kube_pod("p").dump());
  const std::vector<std::tuple<const char*, bool, bool, Call>> rpcs = {  // name, needs admin, read only
      {"Apply", true, false, [&](auto& ctx) { v1::ApplyResponse r; return cluster->Apply(&ctx, apply, &r); }},
      {"Remove", true, false, [&](auto& ctx) { v1::RemoveResponse r; return cluster->Remove(&ctx, remove, &r); }},
      {"Release", true, false, [&](auto& ctx) { v1::ReleaseResponse r; return cluster->Release(&ctx, release, &r); }},
      {"Sync", true, false, [&](auto& ctx) { v1::SyncResponse r; return cluster->Sync(&ctx, v1::SyncRequest{}, &r); }},
      {"Explain", false, true, [&](auto& ctx) { v1::ExplainResponse r; return cluster->Explain(&ctx, explain, &r); }},
      {"Snapshot", false, true, [&](auto& ctx) { v1::SnapshotResponse r; return cluster->Snapshot(&ctx, v1::SnapshotRequest{}, &r); }},
      {"Filter", false, false, [&](auto& ctx) { v1::ExtenderFilterResult r; return extender->Filter(&ctx, args, &r); }},
      {"Prioritize", false, false, [&](auto& ctx) { v1::HostPriorityList r; return extender->Prioritize(&ctx, args, &r); }},
      {"Bind", false, false, [&](auto& ctx) { v1::ExtenderBindingResult r; v1::ExtenderBindingArgs b; b.set_pod_name("p"); b.set_node("a"); return extender->Bind(&ctx, b, &r); }},
      {"Preempt", false, false, [&](auto& ctx) { v1::ExtenderPreemptionResult r; v1::ExtenderPreemptionArgs p; p.set_pod(kube_pod("p").dump()); return extender->Preempt(&ctx, p, &r); }},
  };
  for (const auto& caller : kCallers) {
    for (const auto& [name, admin_only, read_only, call] : rpcs) {
      CAPTURE(caller.name);
      CAPTURE(name);
      grpc::ClientContext ctx;
      if (!caller.authorization.empty()) ctx.AddMetadata("authorization", caller.authorization);
      const grpc::Status st = call(ctx);
      const bool is_admin = std::string(caller.name) == "the administrator";
      int expected = read_only ? caller.read : caller.schedule;
      if (admin_only) expected = caller.schedule == 401 ? 401 : is_admin ? 0 : 403;
      if (expected == 0) {
        CHECK(st.error_code() != grpc::StatusCode::UNAUTHENTICATED);
        CHECK(st.error_code() != grpc::StatusCode::PERMISSION_DENIED);
      } else {
        CHECK(st.error_code() == (expected == 401 ? grpc::StatusCode::UNAUTHENTICATED : grpc::StatusCode::PERMISSION_DENIED));
      }
    }
  }
  // Only the administrator's Apply went through: one node, no ghost removed, nothing else.
  CHECK((*opened)->snapshot().nodes.size() == 1);
  // Two authorization values: which one counts must not depend on the reader.
  grpc::ClientContext twice;
  twice.AddMetadata("authorization", "Bearer admin-token-0123456789");
  twice.AddMetadata("authorization", "Bearer other-token-0123456789");
  v1::SyncResponse synced;
  CHECK(cluster->Sync(&twice, v1::SyncRequest{}, &synced).error_code() == grpc::StatusCode::UNAUTHENTICATED);
  CHECK((*opened)->snapshot().nodes.size() == 1);
}

}  // namespace
}  // namespace fracpack::test

namespace fracpack::test {
namespace {

/// `fracpack serve ARGS` run to its exit (they must make it refuse to start): its status and stderr.
std::pair<int, std::string> serve_refusal(const std::string& args) {
  const auto log = temp_file(fmt::format("serve-{}.log", std::rand()), "");
  const int rc = std::system(fmt::format("{} serve --state :memory: {} 2>{} >/dev/null", FRACPACK_BINARY, args, log.string()).c_str());
  std::string text = read_file(log);
  std::filesystem::remove(log);
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, text};
}

TEST_CASE("serve refuses to listen beyond loopback with authentication off, unless told to") {
  for (const char* args : {"--http 0.0.0.0:0", "--grpc 0.0.0.0:0", "--http :0"}) {
    CAPTURE(args);
    const auto [rc, log] = serve_refusal(args);
    CHECK(rc == 2);
    CHECK(log.find("listening beyond loopback with authentication off") != std::string::npos);
  }
  const auto [rc, log] = serve_refusal("--http 127.0.0.1:0 --allow-admin admin");
  CHECK(rc == 2);
  CHECK(log.find("--allow-scheduler and --allow-admin name authenticated callers") != std::string::npos);
}

TEST_CASE("serve refuses bearer tokens in plaintext beyond loopback") {
  TokenFile tokens;
  for (const char* listen : {"--http 0.0.0.0:0", "--grpc 0.0.0.0:0"}) {
    CAPTURE(listen);
    const auto [rc, log] = serve_refusal(fmt::format("{} --token-file {}", listen, tokens.path));
    CHECK(rc == 2);
    CHECK(log.find("--token-file without --tls-cert would carry bearer tokens over the network in plaintext") != std::string::npos);
  }
}

}  // namespace
}  // namespace fracpack::test
