// kube-scheduler's JSON extender wire through plaintext HTTP and through HTTPS with client
// certificates (mutual TLS, as docs/security.md deploys it), side by side in one run: two
// `fracpack serve` processes on identical clusters, one per transport, each driven one pod at a
// time through Filter (every node name, nodeCacheCapable) → Prioritize → Bind, over one
// keep-alive connection as kube-scheduler keeps it.
//
// items_per_second is pods per second; *_p50_us / *_p99_us are client-side latencies per verb.
// Both servers have the same nodes and receive the same pods in the same order, so the only
// difference is the transport (TLS 1.3 record encryption, one handshake per connection).
//
// Environment: FRACPACK_BENCH_NODES (default 500; 8 GPUs of 81,559 MiB each),
// FRACPACK_BENCH_PODS timed per transport (default 4000).
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include <benchmark/benchmark.h>

#include "bench_stats.hpp"
#include "plugin_api/client.hpp"
#include "support/kube_payloads.hpp"
#include "support/server_process.hpp"
#include "support/tls_files.hpp"

namespace fracpack::bench {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

/// One cluster file and one PKI for both servers.
struct Shared {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / fmt::format("fracpack-tls-bench-{}", getpid());
  std::vector<std::string> nodes;
  std::string cluster_file;
  test::TlsFiles pki;
  Shared() {
    std::filesystem::create_directories(dir);
    json items = json::array();
    for (int n = 0; n < env_int("FRACPACK_BENCH_NODES", 500); ++n) {
      nodes.push_back(fmt::format("gpu-{:05}", n));
      items.push_back(test::kube_node(nodes.back(), 8, "81559"));
    }
    cluster_file = (dir / "cluster.json").string();
    std::ofstream(cluster_file) << json{{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}}.dump();
  }
  ~Shared() { std::filesystem::remove_all(dir); }
};

Shared& shared() {
  static Shared s;
  return s;
}

/// A server for one transport; `tls`: mutual TLS on its JSON front, probes on a plaintext port.
struct Server {
  std::unique_ptr<test::ServerProcess> process;
  std::string url;
  api::ClientTls credentials;
  explicit Server(bool tls) {
    Shared& s = shared();
    const int port = test::free_port();
    std::vector<std::string> args{"--state", ":memory:", "--cluster", s.cluster_file};
    int probe = 0;
    if (tls) {
      probe = test::free_port();
      args.insert(args.end(), {"--tls-cert", s.pki.server_cert, "--tls-key", s.pki.server_key, "--tls-client-ca", s.pki.ca,
                               "--health", fmt::format("127.0.0.1:{}", probe)});
      credentials = {s.pki.ca, s.pki.client_cert, s.pki.client_key, ""};
    }
    process = std::make_unique<test::ServerProcess>(FRACPACK_BINARY, args, port, (s.dir / fmt::format("server-{}.log", port)).string(), probe);
    url = fmt::format("{}://127.0.0.1:{}", tls ? "https" : "http", port);
  }
};

void BM_json_front(benchmark::State& state, bool tls) {
  Server server(tls);
  auto client = api::connect(server.url, server.credentials);
  if (!client) {
    state.SkipWithError(client.status().message().c_str());
    return;
  }
  const auto& nodes = shared().nodes;
  std::vector<double> filter_us, prioritize_us, bind_us;
  int i = 0;
  for (auto _ : state) {
    const std::string name = fmt::format("p{:05}", i);
    const std::string pod = test::kube_pod(name, fmt::format(R"({{"gpu-memory": "{}"}})", 8192 * (1 + i % 4))).dump();  // MiB
    ++i;
    const auto t0 = Clock::now();
    auto passed = (*client)->filter(pod, nodes);
    const auto t1 = Clock::now();
    if (!passed || passed->node_names.empty()) {
      state.SkipWithError("a pod did not fit: the cluster is too small for FRACPACK_BENCH_PODS");
      break;
    }
    auto scores = (*client)->prioritize(pod, passed->node_names);
    const auto t2 = Clock::now();
    const Status bound = (*client)->bind("team-a", name, "", passed->node_names.front());
    const auto t3 = Clock::now();
    if (!scores || !bound.is_ok()) {
      state.SkipWithError("Prioritize or Bind failed");
      break;
    }
    filter_us.push_back(micros(t0, t1));
    prioritize_us.push_back(micros(t1, t2));
    bind_us.push_back(micros(t2, t3));
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(filter_us.size()));
  state.counters["filter_p50_us"] = percentile(filter_us, 0.5);
  state.counters["filter_p99_us"] = percentile(filter_us, 0.99);
  state.counters["prioritize_p50_us"] = percentile(prioritize_us, 0.5);
  state.counters["bind_p50_us"] = percentile(bind_us, 0.5);
  state.counters["bind_p99_us"] = percentile(bind_us, 0.99);
}

}  // namespace
}  // namespace fracpack::bench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  const int pods = fracpack::bench::env_int("FRACPACK_BENCH_PODS", 4000);
  for (const auto& [name, tls] : {std::pair{"json_front/plaintext", false}, std::pair{"json_front/https_mutual_tls", true}}) {
    benchmark::RegisterBenchmark(name, [tls = tls](benchmark::State& state) { fracpack::bench::BM_json_front(state, tls); })
        ->Iterations(pods)
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
