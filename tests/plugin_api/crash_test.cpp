// kill -9 the server in the middle of a replay, restart it on the same state file, and check that
// the ledger holds every acknowledged bind, on the same node, and nothing else but at most the one
// bind in flight when it died. Repeated over many crashes.

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include <grpcpp/grpcpp.h>
#include <httplib.h>

#include <doctest/doctest.h>

#include "fracpack/v1/cluster.grpc.pb.h"
#include "support/builders.hpp"
#include "support/server_process.hpp"

namespace fracpack::test {
namespace {

namespace fs = std::filesystem;

TEST_CASE("crash test: kill -9 during binds, restart, the ledger equals the acknowledged binds") {
  const fs::path dir = fs::temp_directory_path() / fmt::format("fracpack-crash-{}", getpid());
  fs::create_directories(dir);
  const std::string state = (dir / "state.db").string();
  const std::string cluster = (dir / "cluster.json").string();
  {
    json items = json::array();
    for (int n = 0; n < 24; ++n) items.push_back(nvf(fmt::format("node-{:02}", n), 8, 81920).obj);
    std::ofstream(cluster) << json{{"kind", "List"}, {"items", items}}.dump();
  }
  std::mt19937 rng(2026);
  std::vector<json> pods;
  for (int i = 0; i < 3000; ++i) {
    PodBuilder p(fmt::format("p{:04}", i));
    p.gpu_memory(fmt::format("{}Gi", 2 + static_cast<int>(rng() % 14)));
    pods.push_back(p.obj);
  }
  std::vector<std::string> nodes;
  for (int n = 0; n < 24; ++n) nodes.push_back(fmt::format("node-{:02}", n));

  std::map<std::string, std::string> acknowledged;  // pod → node
  std::size_t next = 0;
  int crashes = 0;
  std::size_t in_flight_extra = 0;
  // At least 10 crashes and 1,000 acknowledged binds.
  while (next < pods.size() && (crashes < 10 || acknowledged.size() <= 1000) && crashes < 300) {
    ServerProcess server(FRACPACK_BINARY, {"--state", state, "--cluster", cluster}, free_port());
    httplib::Client c("127.0.0.1", server.http_port());
    c.set_read_timeout(5, 0);
    // The restarted server must hold exactly the acknowledged binds (plus at most the one in flight).
    auto snap = c.Get("/snapshot");
    REQUIRE_MESSAGE(snap, httplib::to_string(snap.error()));
    REQUIRE_MESSAGE(snap->status == 200, snap->body);
    const json ledger = json::parse(snap->body);
    std::map<std::string, std::string> held;
    for (const auto& b : ledger.at("bindings")) held[b.at("pod").get<std::string>()] = b.at("node").get<std::string>();
    for (const auto& [pod, node] : acknowledged) {
      REQUIRE_MESSAGE(held.count(pod) == 1, pod << " was acknowledged but is gone after crash " << crashes);
      CHECK(held[pod] == node);
    }
    REQUIRE(held.size() - acknowledged.size() <= 1);
    in_flight_extra += held.size() - acknowledged.size();
    for (const auto& [pod, node] : held) acknowledged.emplace(pod, node);  // committed, so it counts now
    for (const auto& n : ledger.at("nodes")) {
      for (const auto& g : n.at("gpus")) REQUIRE(g.at("usedMiB").get<std::int64_t>() <= g.at("memoryMiB").get<std::int64_t>());
    }
    // Bind until a kill -9 cuts the server off mid-request: after a random number of binds this
    // round (1–60, so the test exercises as much on a slow sanitizer build as on a fast one), then
    // a random 0–5 ms more, which lands anywhere in a request.
    std::atomic<std::size_t> bound_this_round{0};
    std::atomic<bool> round_over{false};
    std::thread killer([&server, &bound_this_round, &round_over, binds = 1 + rng() % 60, jitter = rng() % 5'000] {
      while (bound_this_round < binds && !round_over) std::this_thread::sleep_for(std::chrono::microseconds(100));
      std::this_thread::sleep_for(std::chrono::microseconds(jitter));
      server.kill9();
    });
    for (; next < pods.size(); ++next) {
      const json& pod = pods[next];
      const std::string name = pod["metadata"]["name"];
      auto f = c.Post("/filter", json{{"Pod", pod}, {"NodeNames", nodes}}.dump(), "application/json");
      if (!f || f->status != 200) break;
      const json fit = json::parse(f->body);
      if (fit.at("NodeNames").empty()) continue;
      const std::string node = fit.at("NodeNames").at(0);
      auto b = c.Post("/bind", json{{"PodName", name}, {"PodNamespace", "default"}, {"PodUID", ""}, {"Node", node}}.dump(),
                      "application/json");
      if (!b) {  // cut off: the bind may or may not have committed; the next restart tells
        ++next;
        break;
      }
      REQUIRE(b->status == 200);
      REQUIRE_MESSAGE(json::parse(b->body)["Error"] == "", b->body);
      acknowledged["default/" + name] = node;
      ++bound_this_round;
    }
    round_over = true;  // out of pods, or cut off: the kill comes now if it has not
    killer.join();
    ++crashes;
  }
  MESSAGE(crashes, " crashes, ", acknowledged.size(), " binds acknowledged, ", in_flight_extra,
          " committed in flight at a kill");
  CHECK(crashes >= 10);
  CHECK(acknowledged.size() > 1000);  // the ledger was really exercised
  fs::remove_all(dir);
}


TEST_CASE("crash test: kill -9 during a large Apply leaves all of it or none of it") {
  // 2,000 Nodes in one Apply: the server validates, writes one transaction and installs. A kill at
  // any moment must leave the state file with every node of the Apply or none (cluster.proto).
  const fs::path dir = fs::temp_directory_path() / fmt::format("fracpack-crash-apply-{}", getpid());
  fs::create_directories(dir);
  const std::string state = (dir / "state.db").string();
  v1::ApplyRequest big;
  for (int n = 0; n < 2000; ++n) big.add_objects(nvf(fmt::format("n-{:04}", n), 8, 81920).obj.dump());
  std::mt19937 rng(7);
  int whole = 0;
  int none = 0;
  // How long an Apply takes here, so that the kills land inside it (not all before or after).
  std::int64_t apply_micros = 0;
  {
    const int grpc_port = free_port();
    ServerProcess server(FRACPACK_BINARY, {"--state", ":memory:", "--grpc", fmt::format("127.0.0.1:{}", grpc_port)}, free_port());
    auto stub = v1::Cluster::NewStub(grpc::CreateChannel(fmt::format("127.0.0.1:{}", grpc_port), grpc::InsecureChannelCredentials()));
    v1::ApplyResponse res;
    grpc::ClientContext ctx;
    const auto start = std::chrono::steady_clock::now();
    const grpc::Status applied = stub->Apply(&ctx, big, &res);
    REQUIRE_MESSAGE(applied.ok(), applied.error_code() << ": " << applied.error_message());
    apply_micros = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count();
  }
  for (int round = 0; round < 12; ++round) {
    std::size_t expected = 0;
    {
      const int grpc_port = free_port();
      ServerProcess server(FRACPACK_BINARY, {"--state", state, "--grpc", fmt::format("127.0.0.1:{}", grpc_port)}, free_port());
      httplib::Client c("127.0.0.1", server.http_port());
      auto snap = c.Get("/snapshot");
      REQUIRE(snap);
      const std::size_t nodes = json::parse(snap->body)["nodes"].size();
      REQUIRE_MESSAGE((nodes == 0 || nodes == 2000), nodes << " nodes after a kill during an Apply of 2000");
      (nodes == 0 ? none : whole) += round == 0 ? 0 : 1;
      if (nodes == 2000) {  // start again from an empty state, so that the next kill can show a torn Apply
        server.kill9();
        for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(state + suffix);
        continue;
      }
      auto channel = grpc::CreateChannel(fmt::format("127.0.0.1:{}", grpc_port), grpc::InsecureChannelCredentials());
      auto stub = v1::Cluster::NewStub(channel);
      std::thread killer([&server, delay = rng() % static_cast<std::uint64_t>(apply_micros + 1)] {
        std::this_thread::sleep_for(std::chrono::microseconds(delay));
        server.kill9();
      });
      v1::ApplyResponse res;
      grpc::ClientContext ctx;
      const bool acknowledged = stub->Apply(&ctx, big, &res).ok();
      killer.join();
      expected = acknowledged ? 2000 : 0;
    }
    if (expected == 2000) {  // acknowledged before the kill: it must all be there
      ServerProcess again(FRACPACK_BINARY, {"--state", state}, free_port());
      httplib::Client c("127.0.0.1", again.http_port());
      auto snap = c.Get("/snapshot");
      REQUIRE(snap);
      CHECK(json::parse(snap->body)["nodes"].size() == 2000);
    }
  }
  MESSAGE("kills during an Apply of 2000 nodes: ", whole, " left all of it, ", none, " none");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace fracpack::test
