// Leader election on a coordination.k8s.io/v1 Lease in kube-rig (its API server, no scheduler):
// one leader at a time, a released Lease taken over at once, and a leader cut off from the API
// server stops leading before anyone else may start.
#include <atomic>
#include <sstream>
#include <thread>

#include <doctest/doctest.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include "fracpack/server/extender.hpp"
#include "fracpack/k8s/time.hpp"
#include "plugin_api/http_server.hpp"
#include "plugin_api/leader_election.hpp"
#include "support/builders.hpp"
#include "support/kube_payloads.hpp"
#include "support/require_kube_rig.hpp"
#include "support/server_process.hpp"

namespace fracpack::test {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;

constexpr const char* kLease = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/fracpack";

api::LeaderElectionOptions fast(const std::string& identity) {
  api::LeaderElectionOptions o;
  o.identity = identity;
  o.lease_duration = 1500ms;
  o.renew_deadline = 1000ms;
  o.retry_period = 200ms;
  return o;
}

/// A proxy to the API server that can be cut (every request answered 503), as a partition would.
struct Cuttable {
  std::atomic<bool> cut{false};
  int target;
  api::HttpServer server{api::HttpServerOptions{}};
  int port = 0;
  explicit Cuttable(int target_port) : target(target_port) {
    server.fallback([this](const api::HttpRequest& req, api::HttpResponse& res) {
      res.status = 503;
      if (cut) return;
      httplib::Client c("127.0.0.1", target);
      const std::string path = req.path + (req.query.empty() ? "" : "?" + req.query);
      auto answer = req.method == "GET"    ? c.Get(path)
                    : req.method == "PUT"  ? c.Put(path, req.body, "application/json")
                    : req.method == "POST" ? c.Post(path, req.body, "application/json")
                                           : c.Patch(path, req.body, std::string(req.header("Content-Type")));
      if (!answer) return;
      res.status = answer->status;
      res.body = answer->body;
      res.content_type = "application/json";
    });
    auto started = server.start();
    REQUIRE(started.is_ok());
    port = *started;
  }
};

std::shared_ptr<api::KubeConnection> connect(int port) {
  auto c = api::KubeConnection::open({fmt::format("http://127.0.0.1:{}", port), "", ""});
  REQUIRE(c.is_ok());
  return *c;
}

struct Rig {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / fmt::format("fracpack-lease-{}-{}", getpid(), std::rand());
  int port = free_port();
  std::unique_ptr<KubeRig> rig;
  explicit Rig(const std::filesystem::path& binary) {
    std::filesystem::create_directories(dir);
    rig = std::make_unique<KubeRig>(binary, port, "", std::vector<std::string>{}, dir);
  }
  ~Rig() {
    rig.reset();
    std::filesystem::remove_all(dir);
  }
  [[nodiscard]] std::string holder() const {
    const json lease = rig->get(kLease);
    return lease.is_object() && lease.contains("spec") ? lease["spec"].value("holderIdentity", "") : "";
  }
};

/// Replica a leads through a path that can be cut; replica b follows, directly, and has seen a
/// hold the Lease. Both stopped at the end, b first.
struct CutLeader {
  Rig& r;
  Cuttable path_of_a;
  api::LeaderElector a;
  api::LeaderElector b;
  CutLeader(Rig& rig, const api::LeaderElectionOptions& options_of_a)
      : r(rig), path_of_a(rig.port), a(connect(path_of_a.port), options_of_a, nullptr), b(connect(rig.port), fast("replica-b"), nullptr) {
    a.start();
    REQUIRE(KubeRig::wait_until([&] { return a.leading(); }, 5s));
    b.start();
    std::this_thread::sleep_for(500ms);
  }
  ~CutLeader() {
    b.stop();
    a.stop();
  }
};

TEST_CASE("the options are client-go's checks: retry < renew deadline < lease duration, an identity, DNS names") {
  CHECK(api::check(fast("a")).is_ok());
  auto o = fast("a");
  o.renew_deadline = o.lease_duration;
  CHECK(api::check(o).message().find("< --leader-elect-lease-duration") != std::string::npos);
  CHECK_FALSE(api::check(fast("")).is_ok());
  o = fast("a");
  o.lease_name = "Not_A_Name";
  CHECK(api::check(o).message().find("--leader-elect-resource-name") != std::string::npos);
  CHECK(k8s::format_micro_time(std::chrono::system_clock::time_point(std::chrono::microseconds(1764624600123456))) ==
        "2025-12-01T21:30:00.123456Z");
}

TEST_CASE("two candidates: one leads at a time, the Lease names it; a released Lease is taken over at once") {
  auto binary = require_kube_rig();
  if (!binary) return;
  Rig r(*binary);
  std::atomic<int> a_took{0};
  api::LeaderElector a(connect(r.port), fast("replica-a"), [&](bool leading) { a_took += leading ? 1 : 0; });
  a.start();
  REQUIRE(KubeRig::wait_until([&] { return a.leading(); }, 5s));
  api::LeaderElector b(connect(r.port), fast("replica-b"), nullptr);
  b.start();
  for (int i = 0; i < 20; ++i) {  // b tries every 200 ms and must lose every time: a renews
    CHECK(a.leading());
    CHECK_FALSE(b.leading());
    std::this_thread::sleep_for(100ms);
  }
  CHECK(r.holder() == "replica-a");
  CHECK(b.leader() == "replica-a");
  CHECK(a_took == 1);
  const json before = r.rig->get(kLease);
  a.stop();  // releases: b takes it at its next try, not after the lease duration
  CHECK_FALSE(a.leading());
  REQUIRE(KubeRig::wait_until([&] { return b.leading(); }, 5s));
  const json after = r.rig->get(kLease);
  CHECK(after["spec"]["holderIdentity"] == "replica-b");
  // client-go counts every change of holder, a released Lease's too.
  CHECK(after["spec"]["leaseTransitions"] == before["spec"].value("leaseTransitions", 0) + 1);
  CHECK(after["spec"]["leaseDurationSeconds"] == 2);  // 1.5 s rounded up: a follower never waits less than the flag
  b.stop();
}

TEST_CASE("a leader cut off from the API server stops leading before the Lease can expire; then the follower takes over") {
  auto binary = require_kube_rig();
  if (!binary) return;
  Rig r(*binary);
  CutLeader cl(r, fast("replica-a"));
  api::LeaderElector& a = cl.a;
  api::LeaderElector& b = cl.b;
  cl.path_of_a.cut = true;
  // Sample both every 10 ms: at no moment may both lead, and a must stop before b starts.
  bool both = false;
  bool a_stopped_first = false;
  KubeRig::wait_until([&] {
    const bool la = a.leading();
    const bool lb = b.leading();
    both = both || (la && lb);
    if (!la && !lb) a_stopped_first = true;
    return lb;
  }, 10s);
  CHECK_FALSE(both);
  CHECK(a_stopped_first);
  CHECK(b.leading());
  CHECK(r.holder() == "replica-b");
  CHECK(r.rig->get(kLease)["spec"]["leaseTransitions"] == 1);
  cl.path_of_a.cut = false;  // a can reach the API server again: it stays a follower
  std::this_thread::sleep_for(600ms);
  CHECK_FALSE(a.leading());
  CHECK(b.leading());
}

TEST_CASE("a Lease deleted by hand: the old leader keeps it or waits out its duration; never two leaders") {
  auto binary = require_kube_rig();
  if (!binary) return;
  Rig r(*binary);
  for (const bool leader_first : {true, false}) {
    CAPTURE(leader_first);
    api::LeaderElector a(connect(r.port), fast("replica-a"), nullptr);
    a.start();
    REQUIRE(KubeRig::wait_until([&] { return a.leading(); }, 5s));
    api::LeaderElector b(connect(r.port), fast("replica-b"), nullptr);
    b.start();
    std::this_thread::sleep_for(500ms);  // b has seen a hold it
    REQUIRE(r.rig->send("DELETE", kLease) == 200);
    bool both = false;
    const auto until = std::chrono::steady_clock::now() + 3s;  // two lease durations
    while (std::chrono::steady_clock::now() < until) {
      both = both || (a.leading() && b.leading());
      std::this_thread::sleep_for(5ms);
    }
    CHECK_FALSE(both);
    CHECK(a.leading() != b.leading());
    CHECK(!r.holder().empty());
    // a leader stopped first hands over; the next round starts from a fresh Lease
    (leader_first ? a : b).stop();
    (leader_first ? b : a).stop();
    r.rig->send("DELETE", kLease);
  }
}

TEST_CASE("two replicas with one identity: each says so in its log") {
  auto binary = require_kube_rig();
  if (!binary) return;
  Rig r(*binary);
  // A sink read under its own lock: the electors' threads log while this thread reads.
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(256);
  auto log = [&sink] {
    std::string text;
    for (const auto& line : sink->last_formatted()) text += line;
    return text;
  };
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("test", sink));
  {
    api::LeaderElector a(connect(r.port), fast("same-name"), nullptr);
    api::LeaderElector b(connect(r.port), fast("same-name"), nullptr);
    a.start();
    b.start();
    KubeRig::wait_until([&] { return log().find("identities must be unique") != std::string::npos; }, 5s);
    b.stop();
    a.stop();
  }
  spdlog::set_default_logger(previous);
  CHECK(log().find("another replica renews Lease kube-system/fracpack as same-name: identities must be unique") != std::string::npos);
}

TEST_CASE("taking the lead: the hook runs before leading() is true, so what a Bind needs is ready first") {
  auto binary = require_kube_rig();
  if (!binary) return;
  Rig r(*binary);
  std::atomic<int> hooks{0};
  std::atomic<int> leading_inside{0};
  api::LeaderElector* self = nullptr;
  api::LeaderElector a(connect(r.port), fast("replica-a"), [&](bool leading) {
    if (!leading) return;
    ++hooks;
    std::this_thread::sleep_for(300ms);  // a slow preparation: a Bind sampled now must be refused
    if (self->leading()) ++leading_inside;
  });
  self = &a;
  a.start();
  bool early = false;
  KubeRig::wait_until([&] {
    const bool l = a.leading();
    early = early || (l && hooks == 0);
    return l;
  }, 5s);
  CHECK(a.leading());
  CHECK(hooks == 1);
  CHECK(leading_inside == 0);
  CHECK_FALSE(early);
  a.stop();
}

TEST_CASE("a follower waits out the holder's leaseDurationSeconds when it is longer than its own") {
  auto binary = require_kube_rig();
  if (!binary) return;
  Rig r(*binary);
  api::LeaderElectionOptions slow = fast("replica-a");
  slow.lease_duration = 4000ms;  // an old leader with a longer lease than the new replica's 1.5 s
  CutLeader cl(r, slow);
  cl.path_of_a.cut = true;
  const auto cut_at = std::chrono::steady_clock::now();
  REQUIRE(KubeRig::wait_until([&] { return cl.b.leading(); }, 10s));
  CHECK(std::chrono::steady_clock::now() - cut_at >= 3500ms);  // 4 s from a's last renewal, at most a retry before the cut
}

TEST_CASE("a follower never binds: the gate's refusal is the Bind's answer, and the ledger is unchanged") {
  auto opened = Extender::open(ExtenderOptions{});
  REQUIRE(opened.is_ok());
  Extender& core = **opened;
  REQUIRE(core.apply({nvf("a", 1, 81920).obj}, nullptr).is_ok());
  const json pod = kube_pod("p");
  REQUIRE(core.filter(pod, {"a"}).is_ok());
  std::atomic<bool> leading{false};
  core.set_act_gate([&]() -> Status {
    return leading ? Status::ok() : Status(Code::kFailedPrecondition, "fracpack replica r-1 is not the leader");
  });
  auto refused = core.bind("team-a", "p", "", "a");
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.status().code() == Code::kFailedPrecondition);
  CHECK(refused.status().message() == "fracpack replica r-1 is not the leader");
  CHECK(core.snapshot().bindings.empty());
  leading = true;
  CHECK(core.bind("team-a", "p", "", "a").is_ok());
  CHECK(core.snapshot().bindings.size() == 1);
}

}  // namespace
}  // namespace fracpack::test
