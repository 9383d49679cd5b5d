// kube-scheduler's bindVerb: the JSON front's Bind creates the pod's Binding in the API server (a
// fake one here, answering as the real one does), with the GPU annotations, and undoes the
// ledger's bind when the API server refuses it.
#include <httplib.h>

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "plugin_api/http_front.hpp"
#include "plugin_api/kube_binder.hpp"
#include "support/builders.hpp"
#include "support/kube_payloads.hpp"

namespace fracpack::test {
namespace {

/// A stand-in for the API server's pods/binding and pods/<name> endpoints.
struct FakeApiServer {
  httplib::Server server;
  std::thread thread;
  int port = 0;
  std::mutex mu;
  std::vector<json> bindings;          ///< bodies received
  int answer = 201;                    ///< status for the next Binding
  std::string node_of_pod;             ///< spec.nodeName served by GET pods/<name>

  FakeApiServer() {
    server.Post(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+)/binding)", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard lock(mu);
      CHECK(req.get_header_value("Authorization") == "Bearer s3cret");
      json b = json::parse(req.body);
      b["path"] = {req.matches[1].str(), req.matches[2].str()};
      bindings.push_back(b);
      res.status = answer;
      if (answer != 201) {
        res.set_content(json{{"kind", "Status"}, {"message", fmt::format("refused with {}", answer)}, {"code", answer}}.dump(), "application/json");
      } else {
        res.set_content(json{{"kind", "Status"}, {"status", "Success"}}.dump(), "application/json");
      }
    });
    server.Get(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+))", [this](const httplib::Request&, httplib::Response& res) {
      std::lock_guard lock(mu);
      res.set_content(json{{"kind", "Pod"}, {"spec", {{"nodeName", node_of_pod}}}}.dump(), "application/json");
    });
    port = server.bind_to_any_port("127.0.0.1");
    thread = std::thread([this] { server.listen_after_bind(); });
    while (!server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeApiServer() {
    server.stop();
    thread.join();
  }
};

/// An extender core with one 1-GPU node "a", its JSON front binding through `binder`.
struct Extender1 {
  std::unique_ptr<Extender> core;
  api::Metrics metrics;
  std::unique_ptr<api::HttpFront> front;
  int port = 0;
  explicit Extender1(api::KubeBinder* binder) {
    auto opened = Extender::open(ExtenderOptions{});
    REQUIRE(opened.is_ok());
    core = std::move(*opened);
    REQUIRE(core->apply({nvf("a", 1, 81920).obj}, nullptr).is_ok());
    front = std::make_unique<api::HttpFront>(*core, metrics, api::HttpOptions{}, binder);
    port = *front->start();
  }
};

TEST_CASE("Bind creates the Binding with the GPU annotations; a refusal undoes the ledger's bind") {
  FakeApiServer api;
  const auto token = std::filesystem::temp_directory_path() / fmt::format("fracpack-token-{}", getpid());
  std::ofstream(token) << "s3cret\n";
  auto binder = api::KubeBinder::open({fmt::format("http://127.0.0.1:{}", api.port), token.string(), ""});
  REQUIRE_MESSAGE(binder.is_ok(), binder.status().message());
  Extender1 server(binder->get());
  auto& core = server.core;
  httplib::Client c("127.0.0.1", server.port);
  auto filter_then_bind = [&](const std::string& name) {
    const json pod = kube_pod(name, R"({"gpu-fraction": "0.5"})");
    auto f = c.Post("/filter", json{{"Pod", pod}, {"NodeNames", {"a"}}}.dump(), "application/json");
    REQUIRE(f);
    REQUIRE(json::parse(f->body)["NodeNames"] == json::array({"a"}));
    auto b = c.Post("/bind", json{{"PodName", name}, {"PodNamespace", "team-a"}, {"PodUID", pod["metadata"]["uid"]}, {"Node", "a"}}.dump(),
                    "application/json");
    REQUIRE(b);
    REQUIRE(b->status == 200);
    return json::parse(b->body)["Error"].get<std::string>();
  };
  auto holders = [&] { return core->snapshot().nodes.at(0).gpus.at(0).holders.size(); };

  SUBCASE("bound: one Binding, as kube-scheduler's DefaultBinder sends it, plus the annotations") {
    CHECK(filter_then_bind("p") == "");
    REQUIRE(api.bindings.size() == 1);
    const json& b = api.bindings[0];
    CHECK(b["path"] == json::array({"team-a", "p"}));
    CHECK(b["kind"] == "Binding");
    CHECK(b["metadata"]["name"] == "p");
    CHECK(b["metadata"]["uid"] == "6b1f0f7e-p");
    CHECK(b["target"] == json{{"apiVersion", "v1"}, {"kind", "Node"}, {"name", "a"}});
    CHECK(b["metadata"]["annotations"].contains("nvidia.com/container.server.gpus.devices"));
    CHECK(holders() == 1);
  }
  SUBCASE("the pod is gone (404) or bound elsewhere (409): an error, and the GPU is free again") {
    for (int status : {404, 409}) {
      CAPTURE(status);
      api.answer = status;
      api.node_of_pod = "b";
      const std::string error = filter_then_bind(fmt::format("gone-{}", status));
      CHECK(error.find(fmt::format("refused with {}", status)) != std::string::npos);
      CHECK(holders() == 0);
    }
  }
  SUBCASE("a retried Bind the API server already did (409, nodeName is this node) is success") {
    api.answer = 409;
    api.node_of_pod = "a";
    CHECK(filter_then_bind("again") == "");
    CHECK(holders() == 1);
  }
  SUBCASE("an unknown outcome (500) is an error, and the ledger keeps the GPUs: the pod may be bound") {
    api.answer = 500;
    CHECK(filter_then_bind("maybe").find("refused with 500") != std::string::npos);
    CHECK(holders() == 1);
  }
  std::filesystem::remove(token);
}

TEST_CASE("KubeBinder refuses a bad API address or an unreadable token, naming the flag") {
  for (const char* url : {"kubernetes.default.svc", "ftp://k8s", "https://k8s:6443/api", "https://", "https://k8s:0", "https://k8s:99999",
                          "https://k8s:", "https://user:pw@k8s", "https://k8s?x=1", "https://ho st", "http://[::1"}) {
    CAPTURE(url);
    const auto opened = api::KubeBinder::open({url, "", ""});
    REQUIRE(!opened.is_ok());
    CHECK(opened.status().message().find(std::string("--kube-api ") + url + ":") == 0);
  }
  for (const char* url : {"https://kubernetes.default.svc", "http://127.0.0.1:8001", "https://[::1]:6443"}) {
    CAPTURE(url);
    CHECK(api::KubeBinder::open({url, "", ""}).is_ok());
  }
  CHECK(api::KubeBinder::open({"https://k8s:6443", "/nonexistent/token", ""}).status().message().find("--kube-token") != std::string::npos);
  CHECK(api::KubeBinder::open({"https://k8s:6443", "/dev/null", ""}).status().message().find("empty") != std::string::npos);
  CHECK(api::KubeBinder::open({"https://k8s:6443", "", "/etc/hostname"}).status().message().find("not a PEM certificate") != std::string::npos);
}

TEST_CASE("an API server that cannot be reached binds nothing: the ledger lets the GPUs go") {
  auto binder = api::KubeBinder::open({"http://127.0.0.1:1", "", ""});  // nothing listens on port 1
  REQUIRE(binder.is_ok());
  Extender1 server(binder->get());
  auto& core = server.core;
  httplib::Client c("127.0.0.1", server.port);
  const json pod = kube_pod("p", R"({"gpu-fraction": "0.5"})");
  REQUIRE(c.Post("/filter", json{{"Pod", pod}, {"NodeNames", {"a"}}}.dump(), "application/json"));
  auto b = c.Post("/bind", json{{"PodName", "p"}, {"PodNamespace", "team-a"}, {"PodUID", pod["metadata"]["uid"]}, {"Node", "a"}}.dump(),
                  "application/json");
  REQUIRE(b);
  CHECK(json::parse(b->body)["Error"].get<std::string>().find("cannot connect to the API server at http://127.0.0.1:1") == 0);
  CHECK(core->snapshot().bindings.empty());
}

}  // namespace
}  // namespace fracpack::test
