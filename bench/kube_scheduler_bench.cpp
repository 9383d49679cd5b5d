// Pods per second through kube-rig's real kube-scheduler v1.20.5 on 5,000 nodes × 8 GPUs, with
// fracpack as its extender (following the API server, binding) and without any extender, side by
// side in one run: the runs alternate, and the ratio is of the medians.
//
//   kube_scheduler_bench [--nodes 5000] [--pods 600] [--rounds 2] [--filter-best 1,0] [--node-cache 0]
//
// --node-cache 0 runs fracpack with nodeCacheCapable: false (every Filter carries the NodeList).
//
// Every pod asks for one whole GPU (nvidia.com/gpu: 1), so kube-scheduler's own filters do the
// same work in both runs; with fracpack, Filter and Prioritize carry every feasible node's name
// (percentageOfNodesToScore: 100) and Bind creates the Binding. Needs kube-rig (../shared/tools/
// kube-rig, or FRACPACK_KUBE_RIG).
#include <algorithm>
#include <map>
#include <optional>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/device_agent.hpp"
#include "support/kube_payloads.hpp"
#include "support/kube_rig.hpp"
#include "support/server_process.hpp"

namespace fracpack::bench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct Options {
  int nodes = 5000;
  int pods = 600;
  int rounds = 2;
  std::vector<int> filter_best{1, 0};
  bool node_cache = true;  ///< --node-cache 0: nodeCacheCapable false, every Filter carries the NodeList
};

bool g_node_cache = true;  // what run() configures (main sets it from --node-cache)

/// kube-scheduler's configuration: the documented one, or the same without the extender.
std::string config(int fracpack_port) {
  std::string text = test::rig_scheduler_config(fracpack_port);
  if (fracpack_port == 0) return text.substr(0, text.find("extenders:"));
  if (!g_node_cache) text.replace(text.find("nodeCacheCapable: true"), 22, "nodeCacheCapable: false");
  return text;
}

json whole_gpu_pod(int i) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", fmt::format("bench-{:05}", i)}, {"namespace", "default"}}},
          {"spec",
           {{"schedulerName", "kai-scheduler"},
            {"containers", json::array({{{"name", "main"},
                                         {"image", "busybox"},
                                         {"resources", {{"requests", {{"cpu", "1"}, {"memory", "1Gi"}}}, {"limits", {{"nvidia.com/gpu", "1"}}}}}}})}}}};
}

/// Creates the pods and waits until every one is bound; pods per second from the first create.
double run(const fs::path& rig, const fs::path& nodes_file, const fs::path& dir, int fracpack_port, int filter_best, int pods) {
  const int rig_port = test::free_port();
  test::KubeRig api(rig, rig_port, config(fracpack_port), {nodes_file.string()}, dir);
  std::unique_ptr<test::ServerProcess> fracpack;
  if (fracpack_port != 0) {
    fracpack = std::make_unique<test::ServerProcess>(
        FRACPACK_BINARY,
        std::vector<std::string>{"--kube-api", api.url(), "--state", ":memory:", "--filter-best", std::to_string(filter_best),
                                 "--max-body", std::to_string(std::size_t{256} << 20)},  // a NodeList of 5,000 is ~10 MB
        fracpack_port,
        (dir / "fracpack.log").string());
    httplib::Client c("127.0.0.1", fracpack_port);
    test::KubeRig::wait_until([&] { auto r = c.Get("/readyz"); return r && r->status == 200; }, std::chrono::seconds(60));
  }
  const auto start = std::chrono::steady_clock::now();
  std::thread creator([&] {
    for (int i = 0; i < pods; ++i) api.create(whole_gpu_pod(i));
  });
  auto bound = [&] {
    const json list = api.get("/api/v1/namespaces/default/pods?fieldSelector=spec.nodeName!=");
    return list.is_object() ? static_cast<int>(list["items"].size()) : 0;
  };
  const bool all = test::KubeRig::wait_until([&] { return bound() == pods; }, std::chrono::seconds(600));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  creator.join();
  if (fracpack) {  // fracpack's own time per verb, from its /metrics: Bind includes the Binding POST
    httplib::Client c("127.0.0.1", fracpack_port);
    if (auto m = c.Get("/metrics"); m && m->status == 200) {
      for (const char* verb : {"filter", "prioritize", "bind"}) {
        double sum = 0;
        double count = 0;
        std::istringstream lines(m->body);
        for (std::string line; std::getline(lines, line);) {
          const std::string key = fmt::format("{{front=\"http\",verb=\"{}\"}} ", verb);
          if (line.starts_with("fracpack_request_duration_seconds_sum" + key)) sum = std::stod(line.substr(line.rfind(' ') + 1));
          if (line.starts_with("fracpack_request_duration_seconds_count" + key)) count = std::stod(line.substr(line.rfind(' ') + 1));
        }
        if (count > 0) fmt::print("    fracpack {}: {} calls, {:.3f} ms mean\n", verb, count, 1000 * sum / count);
      }
    }
  }
  if (!all) fmt::print(stderr, "only {} of {} pods bound (see {})\n", bound(), pods, api.log().string());
  return pods / seconds;
}

/// Bind alone, end to end: kube-rig serving the API only (no scheduler loop competing for the
/// CPU), fracpack following it; for each pod a Filter, then the timed Bind (the ledger, the state
/// file, the Binding POST to the API server, the answer). Milliseconds per Bind, sorted.
/// `fractions`: pods of 10Gi instead of one whole GPU; each GPU's first one waits for its
/// reservation pod's report (a DeviceAgent polling every 20 ms plays the kubelet), the others join.
std::vector<double> bind_latency(const fs::path& rig, const fs::path& dir, int pods, bool fractions) {
  json nodes = json::array();
  for (int n = 0; n < 8; ++n) nodes.push_back(fracpack::test::kube_node(fmt::format("gpu-{:05}", n), 8, "81559"));
  const fs::path file = dir / "bind-nodes.json";
  std::ofstream(file) << json{{"apiVersion", "v1"}, {"kind", "List"}, {"items", nodes}}.dump();
  const int rig_port = test::free_port();
  test::KubeRig api(rig, rig_port, "", {file.string(), std::string(FRACPACK_SOURCE_DIR) + "/deploy/kubernetes/05-gpu-reservation.yaml"},
                    dir);
  std::optional<test::DeviceAgent> agent;  // its LIST every 20 ms costs kube-rig CPU: only when needed
  if (fractions) agent.emplace(api);
  const int port = test::free_port();
  test::ServerProcess fracpack(FRACPACK_BINARY, {"--kube-api", api.url(), "--state", (dir / "bind.db").string()}, port,
                               (dir / "fracpack-bind.log").string());
  httplib::Client c("127.0.0.1", port);
  test::KubeRig::wait_until([&] { auto r = c.Get("/readyz"); return r && r->status == 200; }, std::chrono::seconds(30));
  std::vector<std::string> names;
  for (const auto& n : nodes) names.push_back(n["metadata"]["name"]);
  std::vector<double> ms;
  for (int i = 0; i < pods; ++i) {
    json pod = whole_gpu_pod(i);
    if (fractions) {
      pod["spec"]["containers"][0]["resources"].erase("limits");
      pod["metadata"]["annotations"]["nvidia.com/container.main.gpu-memory.request"] = "10Gi";
    }
    api.create(pod);
    const json created = api.pod("default/" + pod["metadata"]["name"].get<std::string>());
    auto f = c.Post("/filter", json{{"Pod", created}, {"NodeNames", names}}.dump(), "application/json");
    if (!f || f->status != 200) continue;
    const json fit = json::parse(f->body);
    if (fit["NodeNames"].empty()) continue;
    const json args = {{"PodName", pod["metadata"]["name"]}, {"PodNamespace", "default"}, {"PodUID", created["metadata"]["uid"]},
                       {"Node", fit["NodeNames"][0]}};
    const auto start = std::chrono::steady_clock::now();
    auto b = c.Post("/bind", args.dump(), "application/json");
    const double took = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (b && b->status == 200 && json::parse(b->body)["Error"] == "") ms.push_back(took);
  }
  std::sort(ms.begin(), ms.end());
  return ms;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace
}  // namespace fracpack::bench

int main(int argc, char** argv) {
  using namespace fracpack::bench;
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::string value = argv[i + 1];
    if (flag == "--nodes") o.nodes = std::stoi(value);
    if (flag == "--pods") o.pods = std::stoi(value);
    if (flag == "--rounds") o.rounds = std::stoi(value);
    if (flag == "--node-cache") o.node_cache = value != "0";
    if (flag == "--filter-best") {
      o.filter_best.clear();
      for (std::size_t at = 0; at < value.size();) {
        const auto comma = value.find(',', at);
        o.filter_best.push_back(std::stoi(value.substr(at, comma - at)));
        at = comma == std::string::npos ? value.size() : comma + 1;
      }
    }
  }
  auto rig = fracpack::test::kube_rig_binary();
  if (!rig) {
    fmt::print(stderr, "kube-rig not found (../shared/tools/kube-rig/kube-rig, or set FRACPACK_KUBE_RIG)\n");
    return 2;
  }
  g_node_cache = o.node_cache;
  const fs::path dir = fs::temp_directory_path() / fmt::format("fracpack-kube-bench-{}", getpid());
  fs::create_directories(dir);
  json items = json::array();
  for (int n = 0; n < o.nodes; ++n) items.push_back(fracpack::test::kube_node(fmt::format("gpu-{:05}", n), 8, "81559"));
  const fs::path nodes_file = dir / "nodes.json";
  std::ofstream(nodes_file) << json{{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}}.dump();
  for (const bool fractions : {false, true}) {
    const auto ms = bind_latency(*rig, dir, fractions ? 70 : 60, fractions);
    if (!ms.empty()) {
      fmt::print("Bind end to end (fracpack's HTTP Bind, ledger + state file + Binding POST{}), {} binds of {}: median {:.2f} ms, "
                 "p90 {:.2f} ms, max {:.2f} ms\n",
                 fractions ? " + the label PATCH; a GPU's first fraction also creates its reservation pod and waits for its report" : "",
                 ms.size(), fractions ? "10Gi fractions" : "1 whole GPU", ms[ms.size() / 2], ms[ms.size() * 9 / 10], ms.back());
    }
    std::fflush(stdout);
  }
  fmt::print("\n");
  std::vector<double> alone;
  std::map<int, std::vector<double>> with;
  for (int round = 0; round < o.rounds; ++round) {
    alone.push_back(run(*rig, nodes_file, dir, 0, 0, o.pods));
    fmt::print("round {}: no extender {:.1f} pods/s\n", round + 1, alone.back());
    for (int best : o.filter_best) {
      with[best].push_back(run(*rig, nodes_file, dir, fracpack::test::free_port(), best, o.pods));
      fmt::print("round {}: fracpack --filter-best {} {:.1f} pods/s\n", round + 1, best, with[best].back());
    }
    std::fflush(stdout);
  }
  fmt::print("\n{} nodes x 8 GPUs, {} pods of 1 GPU, {} rounds, nodeCacheCapable {} (medians):\n", o.nodes, o.pods, o.rounds,
             o.node_cache);
  fmt::print("  no extender              {:7.1f} pods/s\n", median(alone));
  for (const auto& [best, v] : with) {
    fmt::print("  fracpack --filter-best {} {:7.1f} pods/s   ratio {:.2f}x\n", best, median(v), median(v) / median(alone));
  }
  fs::remove_all(dir);
  return 0;
}
