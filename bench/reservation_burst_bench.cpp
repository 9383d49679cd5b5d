// A burst of fractions onto new GPUs through kube-rig's real kube-scheduler with fracpack binding:
// every GPU's first fraction makes a reservation pod and waits for its report, and the fractions
// packed beside it wait for the same one. Each waiting Bind holds one of kube-scheduler's
// connections; the bench measures how long the burst takes, how many Binds waited at once, on how
// many connections, and how many connections fracpack had to close at accept (kube-scheduler sees
// EOF). Configurations run side by side: fracpack's defaults, and any others given.
//
//   reservation_burst_bench [--nodes 50] [--pods 2000] [--start-ms 1000] [--jitter-ms 1000]
//                           [--compare "--http-max-connections 1024 --http-max-connections-per-client 256"]
//
// A reservation pod reports start-ms plus up to jitter-ms after the kubelet (the tests'
// DeviceAgent) admits it: a container start. Needs kube-rig (../shared/tools/kube-rig, or
// FRACPACK_KUBE_RIG). Exits 1 when a configuration did not bind every pod within 300 s (the old
// caps do not), 2 when kube-rig is missing.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
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
  int nodes = 50;
  int pods = 2000;
  int start_ms = 1000;
  int jitter_ms = 1000;
  std::vector<std::string> compare;  ///< another configuration's flags, one string each
};

struct Outcome {
  double seconds = 0;
  int bound = 0;
  double waiting = 0;      ///< most Binds waiting at once (fracpack_binds_waiting)
  double connections = 0;  ///< most connections open at once (fracpack_http_connections)
  double refused = 0;      ///< connections closed at accept (fracpack_http_connections_refused_total)
};

double metric(const std::string& text, const std::string& name) {
  const auto at = text.find("\n" + name + " ");
  return at == std::string::npos ? -1 : std::stod(text.substr(at + name.size() + 2));
}

json fraction(int i) {  // 5 of 16,000 MiB fill a GPU labelled 81,920 MiB (floored to 81,900)
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", fmt::format("burst-{:05}", i)}, {"namespace", "default"},
                        {"annotations", {{"nvidia.com/container.main.gpu-memory.request", "16000Mi"}}}}},
          {"spec", {{"schedulerName", "kai-scheduler"}, {"containers", json::array({{{"name", "main"}, {"image", "busybox"}}})}}}};
}

Outcome run(const fs::path& rig, const fs::path& dir, const Options& o, const std::vector<std::string>& flags) {
  json items = json::array();
  for (int n = 0; n < o.nodes; ++n) items.push_back(test::kube_node(fmt::format("gpu-{:03}", n), 8, "81920"));
  const fs::path objects = dir / "nodes.json";
  std::ofstream(objects) << json{{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}}.dump();
  const std::string reservation = std::string(FRACPACK_SOURCE_DIR) + "/deploy/kubernetes/05-gpu-reservation.yaml";
  const int port = test::free_port();
  test::KubeRig api(rig, test::free_port(), test::rig_scheduler_config(port), {objects.string(), reservation}, dir);
  test::DeviceAgent agent(api, {"kai-resource-reservation", std::chrono::milliseconds(o.start_ms), std::chrono::milliseconds(o.jitter_ms), 1});
  std::vector<std::string> args{"--kube-api", api.url(), "--state", ":memory:"};
  args.insert(args.end(), flags.begin(), flags.end());
  test::ServerProcess fracpack(FRACPACK_BINARY, args, port, (dir / "fracpack.log").string());
  httplib::Client c("127.0.0.1", port);
  test::KubeRig::wait_until([&] { auto r = c.Get("/readyz"); return r && r->status == 200; }, std::chrono::seconds(60));
  Outcome out;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < o.pods; ++i) api.create(fraction(i));
  auto sample = [&] {
    auto m = c.Get("/metrics");
    if (!m || m->status != 200) return;
    out.waiting = std::max(out.waiting, metric(m->body, "fracpack_binds_waiting"));
    out.connections = std::max(out.connections, metric(m->body, "fracpack_http_connections"));
    out.refused = metric(m->body, "fracpack_http_connections_refused_total");
  };
  test::KubeRig::wait_until([&] {
    sample();
    const json list = api.get("/api/v1/namespaces/default/pods?fieldSelector=spec.nodeName!=");
    out.bound = list.is_object() ? static_cast<int>(list["items"].size()) : 0;
    return out.bound == o.pods;
  }, std::chrono::seconds(300));
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  sample();
  return out;
}

}  // namespace
}  // namespace fracpack::bench

int main(int argc, char** argv) {
  using namespace fracpack::bench;
  Options o;
  CLI::App app("A burst of fractions onto new GPUs through kube-rig's kube-scheduler, fracpack binding behind reservation pods.",
               "reservation_burst_bench");
  app.add_option("--nodes", o.nodes, "nodes of 8 GPUs each")->check(CLI::Range(1, 1000))->capture_default_str();
  app.add_option("--pods", o.pods, "fractions of 16,000 MiB created at once")->check(CLI::Range(1, 100000))->capture_default_str();
  app.add_option("--start-ms", o.start_ms, "a reservation pod reports this long after admission")->check(CLI::Range(0, 60000))->capture_default_str();
  app.add_option("--jitter-ms", o.jitter_ms, "... plus up to this much more")->check(CLI::Range(0, 60000))->capture_default_str();
  app.add_option("--compare", o.compare, "another configuration's fracpack serve flags, in one string (repeatable)");
  CLI11_PARSE(app, argc, argv);
  auto rig = fracpack::test::kube_rig_binary();
  if (!rig) {
    fmt::print(stderr, "kube-rig not found (../shared/tools/kube-rig/kube-rig, or set FRACPACK_KUBE_RIG)\n");
    return 2;
  }
  const fs::path dir = fs::temp_directory_path() / fmt::format("fracpack-burst-bench-{}", getpid());
  fs::create_directories(dir);
  std::vector<std::pair<std::string, std::vector<std::string>>> configurations{{"defaults", {}}};
  for (const auto& c : o.compare) {
    std::istringstream words(c);
    std::vector<std::string> flags;
    for (std::string w; words >> w;) flags.push_back(w);
    configurations.emplace_back(c, flags);
  }
  fmt::print("{} fractions of 16,000 MiB on {} nodes x 8 GPUs; reservation pods report {}-{} ms after admission\n", o.pods, o.nodes,
             o.start_ms, o.start_ms + o.jitter_ms);
  bool all_bound = true;
  for (const auto& [name, flags] : configurations) {
    const Outcome r = run(*rig, dir, o, flags);
    fmt::print("  {}: {} of {} bound in {:.1f} s; at most {} Binds waited at once, on {} connections; {} connections closed at accept\n",
               name, r.bound, o.pods, r.seconds, r.waiting, r.connections, r.refused);
    std::fflush(stdout);
    all_bound = all_bound && r.bound == o.pods;
  }
  fs::remove_all(dir);
  return all_bound ? 0 : 1;  // a configuration that did not bind every pod within 300 s
}
