// Soak: `fracpack serve` for FRACPACK_SOAK_SECONDS (90 by default) under a scheduler's load
// (Filter, Bind, Release, Snapshot over both fronts, with credentials) mixed with a hostile
// caller's traffic (gzip bombs, trickling headers, connection floods, oversized headers, malformed
// bodies, no or wrong credentials on both fronts), its RSS sampled every second. It asserts:
// - every request gets the answer docs/security.md gives it, and the scheduler's never fail;
// - memory is flat once warm: the peak of the last third of the run is within 10 % + 16 MiB of
//   the peak of the middle third (a leak of a few KB per request grows past that);
// - nothing acknowledged is lost: the ledger holds exactly the acknowledged binds not released,
//   on their nodes, before and after a kill -9 and restart.

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <httplib.h>

#include <doctest/doctest.h>

#include "fracpack/v1/cluster.grpc.pb.h"
#include "fracpack/v1/extender.grpc.pb.h"
#include "plugin_api/http_encoding.hpp"
#include "support/builders.hpp"
#include "support/raw_connection.hpp"
#include "support/server_process.hpp"

namespace fracpack::test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr const char* kScheduler = "Bearer soak-scheduler-token-0123456789";
constexpr const char* kAdmin = "Bearer soak-admin-token-0123456789";

/// The resident set of process `pid` in bytes (/proc/<pid>/status VmRSS), 0 when gone.
std::size_t rss_bytes(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/status", pid));
  std::string key;
  while (in >> key) {
    if (key == "VmRSS:") {
      std::size_t kib = 0;
      in >> kib;
      return kib * 1024;
    }
    in.ignore(1 << 16, '\n');
  }
  return 0;
}

std::chrono::seconds soak_duration() {
  const char* env = std::getenv("FRACPACK_SOAK_SECONDS");
  return std::chrono::seconds(env != nullptr ? std::max(30, std::atoi(env)) : 90);
}

/// What the hostile caller got that docs/security.md does not promise, one line each.
struct Surprises {
  std::mutex mu;
  std::vector<std::string> lines;
  std::map<std::string, int> counts;  ///< attack → times tried
  void tried(const std::string& attack) {
    std::lock_guard lock(mu);
    ++counts[attack];
  }
  void add(const std::string& line) {
    std::lock_guard lock(mu);
    if (lines.size() < 20) lines.push_back(line);
  }
};

/// The scheduler's side: Filter and Bind new pods over HTTP, Release the oldest over gRPC once
/// 300 are bound, read the Snapshot now and then. Every answer must be the expected one.
struct Scheduler {
  int http_port;
  std::unique_ptr<v1::Cluster::Stub> cluster;
  std::vector<std::string> nodes;
  std::map<std::string, std::string> bound;  ///< "default/name" → node: acknowledged, not released
  std::deque<std::string> order;             ///< bound pods, oldest first
  std::vector<std::string> failures;
  std::size_t binds = 0, releases = 0;
  std::mt19937 rng{2026};

  void run(const std::atomic<bool>& stop) {
    httplib::Client c("127.0.0.1", http_port);
    c.set_read_timeout(10, 0);
    const httplib::Headers auth{{"Authorization", kScheduler}};
    for (std::size_t i = 0; !stop && failures.size() < 10; ++i) {
      if (order.size() >= 300) release_oldest();
      PodBuilder p(fmt::format("soak-{:06}", i));
      p.gpu_memory(fmt::format("{}Gi", 2 + static_cast<int>(rng() % 14)));
      p.annotation("soak.fracpack.io/padding", std::string(rng() % 4096, 'x'));  // pods of many sizes
      auto f = c.Post("/filter", auth, json{{"Pod", p.obj}, {"NodeNames", nodes}}.dump(), "application/json");
      if (!f || f->status != 200) {
        failures.push_back(fmt::format("filter {}: {}", i, f ? std::to_string(f->status) + " " + f->body : httplib::to_string(f.error())));
        continue;
      }
      const json fit = json::parse(f->body);
      if (fit["NodeNames"].empty()) continue;
      const std::string node = fit["NodeNames"][0];
      const std::string name = p.obj["metadata"]["name"];
      auto b = c.Post("/bind", auth, json{{"PodName", name}, {"PodNamespace", "default"}, {"PodUID", p.obj["metadata"]["uid"]}, {"Node", node}}.dump(),
                      "application/json");
      if (!b || b->status != 200 || json::parse(b->body)["Error"] != "") {
        failures.push_back(fmt::format("bind {}: {}", name, b ? b->body : httplib::to_string(b.error())));
        continue;
      }
      bound["default/" + name] = node;
      order.push_back(name);
      ++binds;
      if (i % 200 == 0) check_snapshot(c, auth);
    }
  }

  void release_oldest() {
    v1::ReleaseRequest req;
    req.set_pod_namespace("default");
    req.set_pod_name(order.front());
    v1::ReleaseResponse res;
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", kAdmin);
    ctx.set_deadline(std::chrono::system_clock::now() + 10s);
    const grpc::Status st = cluster->Release(&ctx, req, &res);
    if (!st.ok()) {
      failures.push_back(fmt::format("release {}: {}", order.front(), st.error_message()));
      return;
    }
    bound.erase("default/" + order.front());
    order.pop_front();
    ++releases;
  }

  /// The ledger's bindings equal what was acknowledged and not released.
  void check_snapshot(httplib::Client& c, const httplib::Headers& auth) {
    auto snap = c.Get("/snapshot", auth);
    if (!snap || snap->status != 200) {
      failures.push_back("snapshot: " + (snap ? std::to_string(snap->status) : httplib::to_string(snap.error())));
      return;
    }
    std::map<std::string, std::string> held;
    const json ledger = json::parse(snap->body);  // named: a range-for over a temporary's member dangles
    for (const auto& b : ledger["bindings"]) held[b["pod"].get<std::string>()] = b["node"].get<std::string>();
    if (held != bound) {
      failures.push_back(fmt::format("snapshot: {} bindings held, {} acknowledged and not released: {:.300}", held.size(), bound.size(), snap->body));
    }
  }
};

/// The hostile caller: one attack after another, each answer checked against what the docs say.
struct Attacker {
  int http_port;
  std::shared_ptr<grpc::Channel> channel;
  Surprises& surprises;
  std::vector<std::unique_ptr<RawConnection>> trickling;  ///< headers sent one byte at a time
  std::string bomb = api::gzip(std::string(8u << 20, ' '));  // 8 MiB inflated, ~8 KB on the wire

  /// `request` on a new connection; the answer must start with `status_line`.
  void expect(const std::string& attack, const std::string& request, const std::string& status_line) {
    surprises.tried(attack);
    RawConnection r(http_port, nullptr, 10);
    if (!r.send(request)) return surprises.add(attack + ": the server closed before the request was sent");
    const std::string answer = r.read_all();
    if (answer.rfind(status_line, 0) != 0) surprises.add(fmt::format("{}: {:.80}", attack, answer));
  }

  void round(std::size_t n) {
    const std::string auth = std::string("Authorization: ") + kScheduler + "\r\n";
    expect("gzip bomb", "POST /filter HTTP/1.1\r\nHost: x\r\n" + auth + "Content-Encoding: gzip\r\nContent-Type: application/json\r\n"
           "Content-Length: " + std::to_string(bomb.size()) + "\r\nConnection: close\r\n\r\n" + bomb, "HTTP/1.1 413");
    expect("no credentials", "POST /bind HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}", "HTTP/1.1 401");
    expect("wrong token", "POST /filter HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer guess-123\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
           "HTTP/1.1 401");
    expect("malformed body", "POST /bind HTTP/1.1\r\nHost: x\r\n" + auth + "Content-Length: 9\r\nConnection: close\r\n\r\n{\"PodName\"", "HTTP/1.1 400");
    expect("huge header", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Filler: " + std::string(70u << 10, 'a') + "\r\n\r\n", "HTTP/1.1 431");
    expect("smuggling", "POST /bind HTTP/1.1\r\nHost: x\r\n" + auth + "Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}", "HTTP/1.1 400");
    expect("chunked", "POST /bind HTTP/1.1\r\nHost: x\r\n" + auth + "Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", "HTTP/1.1 411");
    surprises.tried("connection flood");
    for (int i = 0; i < 50; ++i) RawConnection(http_port, nullptr, 10);  // opened and closed unread
    trickle(n);
    grpc_attacks();
  }

  /// 40 connections trickling a header, one byte per round each; cut at the header deadline,
  /// opened again.
  void trickle(std::size_t n) {
    surprises.tried("trickling header");
    while (trickling.size() < 40) {
      trickling.push_back(std::make_unique<RawConnection>(http_port, nullptr, 10));
      trickling.back()->send("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ");
    }
    for (auto& t : trickling) {
      if (!t->send(std::string(1, static_cast<char>('a' + n % 26)))) t.reset();  // cut off: as promised
    }
    std::erase(trickling, nullptr);
  }

  /// One gRPC call as `token` ("" = none); its code must be `expected`.
  template <class Call>
  void expect_grpc(const std::string& attack, const char* token, grpc::StatusCode expected, Call&& call) {
    surprises.tried(attack);
    grpc::ClientContext ctx;
    if (*token != '\0') ctx.AddMetadata("authorization", token);
    ctx.set_deadline(std::chrono::system_clock::now() + 10s);
    const grpc::Status st = call(ctx);
    if (st.error_code() != expected) surprises.add(attack + ": " + st.error_message());
  }

  void grpc_attacks() {
    auto extender = v1::Extender::NewStub(channel);
    auto cluster = v1::Cluster::NewStub(channel);
    auto sync = [&](grpc::ClientContext& ctx) {
      v1::SyncResponse r;
      return cluster->Sync(&ctx, v1::SyncRequest{}, &r);
    };
    expect_grpc("gRPC Sync without credentials", "", grpc::StatusCode::UNAUTHENTICATED, sync);
    expect_grpc("gRPC Sync as the scheduler", kScheduler, grpc::StatusCode::PERMISSION_DENIED, sync);
    expect_grpc("gRPC Filter of a malformed pod", kScheduler, grpc::StatusCode::INVALID_ARGUMENT, [&](grpc::ClientContext& ctx) {
      v1::ExtenderArgs args;
      args.set_pod(std::string(2000, '{'));
      args.add_node_names("node-00");
      v1::ExtenderFilterResult r;
      return extender->Filter(&ctx, args, &r);
    });
  }
};

struct SoakFiles {
  fs::path dir = fs::temp_directory_path() / fmt::format("fracpack-soak-{}", getpid());
  std::string state = (dir / "state.db").string();
  std::string cluster = (dir / "cluster.json").string();
  std::string tokens = (dir / "tokens.csv").string();
  std::vector<std::string> nodes;
  SoakFiles() {
    fs::create_directories(dir);
    json items = json::array();
    for (int n = 0; n < 24; ++n) {
      nodes.push_back(fmt::format("node-{:02}", n));
      items.push_back(nvf(nodes.back(), 8, 81920).obj);
    }
    std::ofstream(cluster) << json{{"kind", "List"}, {"items", items}}.dump();
    std::ofstream(tokens) << "soak-scheduler-token-0123456789,kai-scheduler\nsoak-admin-token-0123456789,admin\n";
  }
  ~SoakFiles() { fs::remove_all(dir); }
  [[nodiscard]] std::vector<std::string> args(int grpc_port) const {
    return {"--state", state, "--cluster", cluster, "--grpc", fmt::format("127.0.0.1:{}", grpc_port), "--token-file", tokens,
            "--allow-scheduler", "kai-scheduler", "--allow-admin", "admin", "--max-body", "1048576"};
  }
};

/// Peak RSS over samples [from, to).
std::size_t peak(const std::vector<std::size_t>& samples, std::size_t from, std::size_t to) {
  std::size_t p = 0;
  for (std::size_t i = from; i < to && i < samples.size(); ++i) p = std::max(p, samples[i]);
  return p;
}

TEST_CASE("soak: mixed load and attacks for minutes; memory flat, every answer as documented, nothing lost") {
  SoakFiles files;
  const int grpc_port = free_port();
  auto server = std::make_unique<ServerProcess>(FRACPACK_BINARY, files.args(grpc_port), free_port());
  auto channel = grpc::CreateChannel(fmt::format("127.0.0.1:{}", grpc_port), grpc::InsecureChannelCredentials());
  REQUIRE(channel->WaitForConnected(std::chrono::system_clock::now() + 10s));

  Scheduler scheduler{server->http_port(), v1::Cluster::NewStub(channel), files.nodes, {}, {}, {}};
  Surprises surprises;
  Attacker attacker{server->http_port(), channel, surprises, {}};
  std::atomic<bool> stop{false};
  std::vector<std::size_t> rss;
  std::thread load([&] { scheduler.run(stop); });
  std::thread attacks([&] {
    for (std::size_t n = 0; !stop; ++n) {
      attacker.round(n);
      std::this_thread::sleep_for(250ms);
    }
  });
  const auto duration = soak_duration();
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < duration) {
    std::this_thread::sleep_for(1s);
    rss.push_back(rss_bytes(server->pid()));
  }
  stop = true;
  load.join();
  attacks.join();

  const std::size_t third = rss.size() / 3;
  const std::size_t middle = peak(rss, third, 2 * third);
  const std::size_t last = peak(rss, 2 * third, rss.size());
  auto mib = [](std::size_t bytes) { return static_cast<double>(bytes) / 1048576.0; };
  MESSAGE(fmt::format("{} s: {} binds, {} releases, {} held; RSS first/middle/last third peaks {:.1f}/{:.1f}/{:.1f} MiB",
                      duration.count(), scheduler.binds, scheduler.releases, scheduler.bound.size(), mib(peak(rss, 0, third)), mib(middle),
                      mib(last)));
  for (const auto& [attack, times] : surprises.counts) MESSAGE(attack, ": ", times);
  for (const auto& line : surprises.lines) FAIL_CHECK("hostile caller: " << line);
  for (const auto& line : scheduler.failures) FAIL_CHECK("scheduler: " << line);
  CHECK(scheduler.binds > 1000);  // the ledger was really exercised
  CHECK(scheduler.releases > 500);
  CHECK(last <= middle + middle / 10 + (16u << 20));

  // Nothing lost: the ledger equals the acknowledged binds not released, then the same after kill -9.
  httplib::Client c("127.0.0.1", server->http_port());
  const httplib::Headers auth{{"Authorization", kScheduler}};
  scheduler.failures.clear();
  scheduler.check_snapshot(c, auth);
  server->kill9();
  server = std::make_unique<ServerProcess>(FRACPACK_BINARY, files.args(free_port()), free_port());
  httplib::Client again("127.0.0.1", server->http_port());
  scheduler.check_snapshot(again, auth);
  for (const auto& line : scheduler.failures) FAIL_CHECK("after the soak: " << line);
}

}  // namespace
}  // namespace fracpack::test
