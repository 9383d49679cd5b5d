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
#include "plugin_api/reservation_book.hpp"
#include "support/kube_payloads.hpp"
#include "support/kube_rig.hpp"
#include "support/reservation_pods.hpp"

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
  json pod_metadata = json::object();  ///< metadata served by GET pods/<name>
  int created = 0;                     ///< pods created (reservation pods)
  std::vector<json> pods;              ///< their bodies
  std::vector<std::pair<std::string, json>> patches;  ///< path, merge patch

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
    server.Post(R"(/api/v1/namespaces/([^/]+)/pods)", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard lock(mu);
      ++created;  // a reservation pod
      pods.push_back(json::parse(req.body));
      res.status = 201;
      res.set_content("{}", "application/json");
    });
    server.Patch(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard lock(mu);
      patches.emplace_back(req.path, json::parse(req.body));
      res.set_content("{}", "application/json");
    });
    server.Get(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+))", [this](const httplib::Request&, httplib::Response& res) {
      std::lock_guard lock(mu);
      res.set_content(json{{"kind", "Pod"}, {"metadata", pod_metadata}, {"spec", {{"nodeName", node_of_pod}}}}.dump(), "application/json");
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

/// Threads of this process now (/proc/self/status).
int threads() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.starts_with("Threads:")) return std::stoi(line.substr(8));
  }
  return -1;
}

/// A fraction's Bind onto ledger GPU `claim.gpu` of node a, behind `claim`.
BindAnswer fraction_answer(const std::string& name, const ReservationClaim& claim) {
  BindAnswer a;
  a.pod = "team-a/" + name;
  a.node = "a";
  a.choice.gpus = {claim.gpu};
  a.annotations = {{"nvidia.com/container.main.gpus.devices", std::to_string(claim.gpu)}};
  a.reservations = {claim};
  return a;
}

/// A binder to `api` (its token) binding fractions behind `book`'s reservation pods, at most
/// `most_waiting` of them waiting for reports.
std::unique_ptr<api::KubeBinder> reserving_binder(const FakeApiServer& api, api::ReservationBook& book, std::size_t most_waiting) {
  const auto token = std::filesystem::temp_directory_path() / fmt::format("fracpack-token-{}-{}", getpid(), most_waiting);
  std::ofstream(token) << "s3cret\n";
  auto binder = api::KubeBinder::open({fmt::format("http://127.0.0.1:{}", api.port), token.string(), ""});
  std::filesystem::remove(token);
  REQUIRE(binder.is_ok());
  (*binder)->use_reservations(&book);
  (*binder)->limit_waiting(most_waiting);
  return std::move(*binder);
}

TEST_CASE("Binds waiting for a reservation pod's report hold no thread; one past the cap fails at once; the deadline fails the rest") {
  FakeApiServer api;
  std::atomic<int> done{0};  // before the binder: its threads may count until it is gone
  std::atomic<int> failed{0};
  std::atomic<int> timed_out{0};
  std::atomic<bool> over_cap{false};
  api::ReservationBook book(reservation_options(1s));
  std::mutex nudged_mu;
  std::vector<std::string> nudged;  // pods refused at the cap, handed on as slots free
  auto binder = reserving_binder(api, book, 300);
  binder->on_slot_freed([&](const std::vector<std::string>& pods) {
    std::lock_guard lock(nudged_mu);
    nudged.insert(nudged.end(), pods.begin(), pods.end());
  });
  auto count = [&](Status st, bool) { (st.is_ok() ? done : failed) += 1; };
  const int before = threads();
  ReservationClaim first;
  for (int i = 0; i < 300; ++i) {
    const ReservationClaim claim = book.claim("a", 0);
    CHECK(claim.create == (i == 0));  // the first Bind creates the reservation pod; the others join it
    if (i == 0) first = claim;
    binder->bind_async(fraction_answer(fmt::format("p{}", i), claim), "", count);
  }
  CHECK(binder->waiting() == 300);
  CHECK(threads() - before < 8);  // 300 Binds wait, and no thread waits for each
  binder->bind_async(fraction_answer("late", book.claim("a", 0)), "", [&](Status st, bool) {
    over_cap = st.code() == Code::kUnavailable && st.message().find("--max-waiting-binds") != std::string::npos;
  });
  CHECK(over_cap);  // answered at once
  {
    std::lock_guard lock(nudged_mu);
    CHECK(nudged.empty());  // no slot has freed yet
  }
  book.seen(reservation(first, "GPU-a-0"));  // the watch shows the report: every waiting Bind goes on
  REQUIRE_MESSAGE(KubeRig::wait_until([&] { return done == 300; }, 10s), done.load() << " bound, " << failed.load() << " failed, " << binder->waiting() << " waiting");
  CHECK(failed == 0);
  CHECK(binder->waiting() == 0);
  CHECK(KubeRig::wait_until([&] {  // a slot is handed on after its Bind's answer
    std::lock_guard lock(nudged_mu);
    return !nudged.empty();
  }, 10s));
  {
    std::lock_guard lock(nudged_mu);
    CHECK(nudged == std::vector<std::string>{"team-a/late"});  // the first slot freed nudged it; the other 299 found none
  }
  {
    std::lock_guard lock(api.mu);
    CHECK(api.created == 1);
    REQUIRE(api.bindings.size() == 300);
    const json annotations = api.bindings.back()["metadata"]["annotations"];
    CHECK(annotations["nvidia.com/container.main.gpus.devices"] == "GPU-a-0");
    CHECK(annotations["fracpack.io/gpus"] == "0");
    CHECK(annotations["fracpack.io/gpu-groups"] == first.group);
  }
  // A reservation pod that never reports: each waiting Bind fails at its deadline, naming it.
  const ReservationClaim silent = book.claim("a", 1);
  for (int i = 0; i < 5; ++i) {
    binder->bind_async(fraction_answer(fmt::format("q{}", i), silent), "", [&](Status st, bool maybe) {
      if (st.message().find("did not report its GPU") != std::string::npos && !maybe) ++timed_out;
    });
  }
  REQUIRE(KubeRig::wait_until([&] { return timed_out == 5; }, 10s));
  CHECK(binder->waiting() == 0);
}

TEST_CASE("a group's reservation pod records each member once its Binding is made, by a patch that drops the members gone") {
  FakeApiServer api;
  std::atomic<int> done{0};
  api::ReservationBook book(reservation_options(5s));
  auto binder = reserving_binder(api, book, 10);
  auto count = [&](Status st, bool) { done += st.is_ok() ? 1 : 100; };
  const ReservationClaim first = book.claim("a", 0);
  binder->bind_async(fraction_answer("p0", first), "uid-0", count);
  book.seen(reservation(first, "GPU-a-0"));
  REQUIRE(KubeRig::wait_until([&] { return done == 1; }, 10s));
  BindAnswer joining = fraction_answer("p1", book.claim("a", 0));
  joining.stale_members[first.group] = {"uid-gone"};
  binder->bind_async(joining, "uid-1", count);
  const std::string path = fmt::format("/api/v1/namespaces/{}/pods/{}", reservation_options().ns, first.pod);
  auto member_patches = [&] {
    std::vector<json> out;
    std::lock_guard lock(api.mu);
    for (const auto& [at, patch] : api.patches) {
      if (at == path) out.push_back(patch["metadata"]["annotations"]);
    }
    return out;
  };
  REQUIRE(KubeRig::wait_until([&] { return done == 2 && member_patches().size() == 2; }, 10s));
  CHECK(member_patches() == std::vector<json>{{{"members.fracpack.io/uid-0", "team-a/p0"}},
                                              {{"members.fracpack.io/uid-1", "team-a/p1"}, {"members.fracpack.io/uid-gone", nullptr}}});
  std::lock_guard lock(api.mu);
  REQUIRE(api.pods.size() == 1);
  CHECK_FALSE(api.pods.front()["metadata"]["annotations"].contains("members.fracpack.io/uid-0"));  // created before its Binding: no record yet
}

TEST_CASE("a Bind the API server already made (409) labels and records the pod only if that Binding was this one's") {
  FakeApiServer api;
  api::ReservationBook book(reservation_options(5s));
  auto binder = reserving_binder(api, book, 10);
  const ReservationClaim first = book.claim("a", 0);
  book.seen(reservation(first, "GPU-a-0"));  // reported: the Bind goes straight to its Binding
  api.answer = 409;
  api.node_of_pod = "a";
  auto patched = [&] {
    std::lock_guard lock(api.mu);
    return api.patches.size();
  };
  // Bound there by another Bind, with another group (the old leader's): nothing written.
  api.pod_metadata = {{"uid", "uid-0"}, {"annotations", {{"fracpack.io/gpu-groups", "some-other-group"}}}};
  bool maybe = false;
  CHECK(binder->bind(fraction_answer("p0", book.claim("a", 0)), "uid-0", &maybe).is_ok());
  std::this_thread::sleep_for(300ms);
  CHECK(patched() == 0);
  // Bound there by this very Bind, retried: its label and its membership follow.
  api.pod_metadata = {{"uid", "uid-0"}, {"annotations", {{"fracpack.io/gpu-groups", first.group}}}};
  CHECK(binder->bind(fraction_answer("p0", book.claim("a", 0)), "uid-0", &maybe).is_ok());
  CHECK(KubeRig::wait_until([&] { return patched() == 2; }, 10s));  // the label, the member
}

TEST_CASE("a Bind refused at the cap gives up its claims: a Bind joining its group fails at once, not at the deadline") {
  FakeApiServer api;
  api::ReservationBook book(reservation_options(30s));
  auto binder = reserving_binder(api, book, 2);
  std::atomic<int> first_done{0};
  binder->bind_async(fraction_answer("a", book.claim("a", 0)), "", [&](Status, bool) { ++first_done; });  // waits: slot 1
  const ReservationClaim creator = book.claim("a", 1);  // its Bind comes last
  const ReservationClaim joiner = book.claim("a", 1);
  REQUIRE(creator.create);
  REQUIRE_FALSE(joiner.create);
  std::atomic<bool> joiner_failed{false};
  const auto started = std::chrono::steady_clock::now();
  binder->bind_async(fraction_answer("j", joiner), "", [&](Status st, bool) { joiner_failed = !st.is_ok(); });  // waits: slot 2
  CHECK(binder->waiting() == 2);
  Status refused;
  binder->bind_async(fraction_answer("c", creator), "", [&](Status st, bool) { refused = st; });
  CHECK(refused.code() == Code::kUnavailable);
  REQUIRE(KubeRig::wait_until([&] { return joiner_failed.load(); }, 5s));
  CHECK(std::chrono::steady_clock::now() - started < 5s);  // not the 30 s deadline
  CHECK(binder->waiting() == 1);  // its slot is back at once
  CHECK_FALSE(book.find(creator.group).has_value());
  CHECK(first_done == 0);
  book.seen(reservation(book.claim("a", 0), "GPU-a-0"));
  REQUIRE(KubeRig::wait_until([&] { return first_done == 1; }, 5s));
}

}  // namespace
}  // namespace fracpack::test
