// The extender as kube-scheduler (JSON, nodeCacheCapable) or a gRPC client sees it: a running
// `fracpack serve` process with 5,000 nodes × 8 GPUs of 81,559 MiB, driven one pod at a time
// through Filter (all 5,000 node names) → Prioritize (the nodes that passed) → Bind (the best).
//
// Three clients: gRPC sending every node name (as kube-scheduler does), gRPC with all_nodes and
// max_nodes 1 (the server's node cache and index pick the best node; no names sent), and
// kube-scheduler's JSON with nodeCacheCapable (NodeNames).
//
// Steady state, not an empty cluster: before timing, 35,000 pods are bound through gRPC (about
// two thirds of the GPUs held, fractions and whole GPUs mixed); each timed iteration then releases
// the oldest pod (a pod finishing) and schedules a new one. items_per_second is pods per second
// including that release; *_p50_us / *_p99_us are client-side latencies per verb;
// server_*_mean_us the time inside the server per call (its /metrics); server_cpu_us_per_pod the
// server process's CPU (user + system, /proc) per pod over the timed part: client and server share
// this machine's cores, and this says what the server alone needs.
//
// Environment: FRACPACK_BENCH_NODES (default 5000), FRACPACK_BENCH_WINDOW (default 35000),
// FRACPACK_BENCH_PODS timed per front (default 5000).
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <cstring>
#include <map>
#include <mutex>

#include <unistd.h>

#include <httplib.h>

#include <benchmark/benchmark.h>
#include <grpcpp/grpcpp.h>

#include "fracpack/v1/cluster.grpc.pb.h"
#include "plugin_api/client.hpp"
#include "support/kube_payloads.hpp"
#include "support/server_process.hpp"
#include "bench_stats.hpp"
#include "extender_workload.hpp"

namespace fracpack::bench {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

/// The server, started once for all benchmarks in this process.
struct Harness {
  std::filesystem::path dir;
  std::unique_ptr<test::ServerProcess> server;
  int grpc_port = 0;
  std::vector<std::string> nodes;
  std::unique_ptr<v1::Cluster::Stub> cluster;

  Harness() {
    const int node_count = env_int("FRACPACK_BENCH_NODES", 5000);
    dir = std::filesystem::temp_directory_path() / fmt::format("fracpack-bench-{}", getpid());
    std::filesystem::create_directories(dir);
    json items = json::array();
    for (int n = 0; n < node_count; ++n) {
      nodes.push_back(fmt::format("gpu-{:05}", n));
      items.push_back(test::kube_node(nodes.back(), 8, "81559"));
    }
    const auto cluster_file = (dir / "cluster.json").string();
    std::ofstream(cluster_file) << json{{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}}.dump();
    grpc_port = test::free_port();
    server = std::make_unique<test::ServerProcess>(
        FRACPACK_BINARY,
        std::vector<std::string>{"--grpc", fmt::format("127.0.0.1:{}", grpc_port), "--state", (dir / "state.db").string(),
                                 "--cluster", cluster_file},
        test::free_port(), (dir / "server.log").string());
    cluster = v1::Cluster::NewStub(grpc::CreateChannel(fmt::format("127.0.0.1:{}", grpc_port), grpc::InsecureChannelCredentials()));
  }
  ~Harness() {
    server.reset();
    std::filesystem::remove_all(dir);
  }

  void release(const std::string& name) const {
    grpc::ClientContext ctx;
    v1::ReleaseRequest req;
    req.set_pod_namespace("team-a");
    req.set_pod_name(name);
    v1::ReleaseResponse out;
    cluster->Release(&ctx, req, &out);  // NOT_FOUND for a pod that never bound: fine
  }
};

Harness& harness() {
  static Harness h;
  return h;
}

/// Server-side seconds and calls per (front, verb), from the server's own /metrics.
std::map<std::string, std::pair<double, double>> server_times(int http_port) {
  std::map<std::string, std::pair<double, double>> out;
  httplib::Client c("127.0.0.1", http_port);
  auto res = c.Get("/metrics");
  if (!res) return out;
  std::istringstream lines(res->body);
  for (std::string line; std::getline(lines, line);) {
    for (const char* metric : {"fracpack_request_duration_seconds_sum{", "fracpack_request_duration_seconds_count{"}) {
      if (line.rfind(metric, 0) != 0) continue;
      const auto close = line.find('}');
      const std::string labels = line.substr(std::strlen(metric), close - std::strlen(metric));
      const double value = std::stod(line.substr(close + 2));
      auto& slot = out[labels];
      (std::string(metric).find("sum") != std::string::npos ? slot.first : slot.second) = value;
    }
  }
  return out;
}

/// CPU seconds (user + system) the process `pid` has used so far, from /proc/<pid>/stat.
double cpu_seconds(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close = stat.rfind(')');  // the command name may hold spaces
  if (close == std::string::npos) return 0;
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14 || i == 15) ticks += std::stod(field);  // utime, stime
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

struct Latencies {
  std::vector<double> filter, prioritize, bind, release;
};

/// Filter → Prioritize → Bind of one pod; true when bound. `all_nodes`: Filter sends no names and
/// asks for the best node (gRPC all_nodes, max_nodes 1) instead of sending every name.
bool schedule(api::ExtenderClient& client, const json& pod, const std::vector<std::string>& nodes, Latencies* lat,
              bool all_nodes = false) {
  const std::string name = pod["metadata"]["name"].get<std::string>();
  const std::string text = pod.dump();
  const auto t0 = Clock::now();
  auto f = all_nodes ? client.filter_all(text, 1) : client.filter(text, nodes);
  const auto t1 = Clock::now();
  if (lat != nullptr) lat->filter.push_back(micros(t0, t1));
  if (!f) throw std::runtime_error("filter: " + f.status().message());
  if (f->node_names.empty()) return false;
  auto scores = client.prioritize(text, f->node_names);
  const auto t2 = Clock::now();
  if (lat != nullptr) lat->prioritize.push_back(micros(t1, t2));
  if (!scores) throw std::runtime_error("prioritize: " + scores.status().message());
  const api::HostScore* best = &scores->front();
  for (const auto& s : *scores) {
    if (s.score > best->score) best = &s;
  }
  Status st = client.bind("team-a", name, pod["metadata"]["uid"].get<std::string>(), best->host);
  if (lat != nullptr) lat->bind.push_back(micros(t2, Clock::now()));
  static bool reported = false;
  if (!st.is_ok() && !reported) {
    reported = true;
    fmt::print(stderr, "first refused bind: {}\n", st.message());
  }
  return st.is_ok();
}

/// The steady state shared by every benchmark in the process: filled once (through gRPC
/// all_nodes, untimed), then each timed pod releases the oldest held pod first.
struct Steady {
  std::mutex mu;
  std::deque<std::string> held;
  std::mt19937 rng{42};
  int serial = 0;
  bool filled = false;
  Latencies lat;  // merged from the threads of the running benchmark
  int unplaced = 0;
};

Steady& steady() {
  static Steady s;
  return s;
}

void BM_FilterPrioritizeBind(benchmark::State& state, const char* front) {
  Harness& h = harness();
  Steady& st = steady();
  const bool all_nodes = std::string(front) == "grpc_all_nodes";
  auto client = std::string(front) != "json" ? api::connect(fmt::format("grpc://127.0.0.1:{}", h.grpc_port))
                                             : api::connect(fmt::format("http://127.0.0.1:{}", h.server->http_port()));
  if (!client) {
    state.SkipWithError("cannot connect");
    return;
  }
  std::map<std::string, std::pair<double, double>> before;
  double cpu_before = 0;
  if (state.thread_index() == 0) {
    std::lock_guard lock(st.mu);
    if (!st.filled) {  // not timed: reach the steady state once
      const int window = env_int("FRACPACK_BENCH_WINDOW", 35000);
      auto filler = api::connect(fmt::format("grpc://127.0.0.1:{}", h.grpc_port));
      for (int i = 0; i < window; ++i) {
        json pod = extender_workload_pod(st.rng, fmt::format("fill-{}", st.serial++));
        if (schedule(**filler, pod, h.nodes, nullptr, /*all_nodes=*/true)) st.held.push_back(pod["metadata"]["name"].get<std::string>());
      }
      st.filled = true;
    }
    st.lat = Latencies{};
    st.unplaced = 0;
    before = server_times(h.server->http_port());
    cpu_before = cpu_seconds(h.server->pid());
  }
  Latencies lat;
  int unplaced = 0;
  for (auto _ : state) {  // every thread starts here together, after thread 0's setup
    std::string oldest;
    json pod;
    {
      std::lock_guard lock(st.mu);
      if (!st.held.empty()) {
        oldest = st.held.front();
        st.held.pop_front();
      }
      pod = extender_workload_pod(st.rng, fmt::format("pod-{}", st.serial++));
    }
    const auto t0 = Clock::now();
    if (!oldest.empty()) h.release(oldest);
    lat.release.push_back(micros(t0, Clock::now()));
    if (schedule(**client, pod, h.nodes, &lat, all_nodes)) {
      std::lock_guard lock(st.mu);
      st.held.push_back(pod["metadata"]["name"].get<std::string>());
    } else {
      ++unplaced;
    }
  }
  {
    std::lock_guard lock(st.mu);
    for (auto [mine, all] : {std::pair{&lat.filter, &st.lat.filter}, {&lat.prioritize, &st.lat.prioritize}, {&lat.bind, &st.lat.bind},
                             {&lat.release, &st.lat.release}}) {
      all->insert(all->end(), mine->begin(), mine->end());
    }
    st.unplaced += unplaced;
  }
  state.SetItemsProcessed(state.iterations());
  if (state.thread_index() != 0) return;
  // Thread 0 reports for all (Google Benchmark sums per-thread counters; these are set once).
  while (true) {  // wait until every thread has merged its latencies
    std::lock_guard lock(st.mu);
    if (st.lat.release.size() >= static_cast<std::size_t>(state.iterations() * state.threads())) break;
  }
  std::lock_guard lock(st.mu);
  for (auto& [verb, v] : {std::pair{"filter", &st.lat.filter}, {"prioritize", &st.lat.prioritize}, {"bind", &st.lat.bind},
                          {"release", &st.lat.release}}) {
    state.counters[fmt::format("{}_p50_us", verb)] = percentile(*v, 0.50);
    state.counters[fmt::format("{}_p99_us", verb)] = percentile(*v, 0.99);
  }
  // Mean time inside the server per verb (the rest of the client's latency is transport and client).
  const auto after = server_times(h.server->http_port());
  for (const char* verb : {"filter", "prioritize", "bind"}) {
    const std::string labels = fmt::format(R"(front="{}",verb="{}")", std::string(front) == "json" ? "http" : "grpc", verb);
    if (!after.count(labels)) continue;
    const auto b = before.count(labels) ? before.at(labels) : std::pair{0.0, 0.0};
    const double calls = after.at(labels).second - b.second;
    if (calls > 0) state.counters[fmt::format("server_{}_mean_us", verb)] = 1e6 * (after.at(labels).first - b.first) / calls;
  }
  // The server's own CPU per pod (every verb, release included): what it would need on cores of
  // its own, with the client on another machine.
  const double pods = static_cast<double>(state.iterations() * state.threads());
  state.counters["server_cpu_us_per_pod"] = 1e6 * (cpu_seconds(h.server->pid()) - cpu_before) / pods;
  state.counters["unplaced"] = st.unplaced;
  state.counters["held_pods"] = static_cast<double>(st.held.size());
}

/// The floor under every verb: one round trip that does no scheduling work. gRPC: Release of a pod
/// the server never bound (NOT_FOUND after one hash lookup); JSON: GET /healthz. A pod costs four of
/// these (Release, Filter, Prioritize, Bind), so 4 × this latency bounds pods/s from below.
void BM_TransportFloor(benchmark::State& state, bool grpc_front) {
  Harness& h = harness();
  httplib::Client http("127.0.0.1", h.server->http_port());
  http.set_keep_alive(true);
  for (auto _ : state) {
    if (grpc_front) {
      h.release("never-bound");
    } else if (auto res = http.Get("/healthz"); !res || res->status != 200) {
      state.SkipWithError("healthz failed");
      return;
    }
  }
  state.SetItemsProcessed(state.iterations());
}

const int kPods = env_int("FRACPACK_BENCH_PODS", 5000);
void Register(const char* name, const char* front, int threads) {
  benchmark::RegisterBenchmark(name, [front](benchmark::State& s) { BM_FilterPrioritizeBind(s, front); })
      ->Iterations(kPods / threads)
      ->Threads(threads)
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime();
}

const bool kRegistered = [] {
  benchmark::RegisterBenchmark("transport_floor_grpc", [](benchmark::State& s) { BM_TransportFloor(s, true); })
      ->Iterations(kPods)
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark("transport_floor_json", [](benchmark::State& s) { BM_TransportFloor(s, false); })
      ->Iterations(kPods)
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime();
  Register("grpc_all_node_names", "grpc", 1);
  Register("grpc_all_nodes_best", "grpc_all_nodes", 1);
  Register("grpc_all_nodes_best", "grpc_all_nodes", 4);
  Register("json_node_cache_capable", "json", 1);
  Register("json_node_cache_capable", "json", 2);
  return true;
}();

}  // namespace
}  // namespace fracpack::bench

BENCHMARK_MAIN();
