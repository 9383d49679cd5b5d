// A burst through the real kube-scheduler with fracpack's default flags: 2,000 fractions (5 of
// 16,000 MiB fill a GPU labelled 81,920 MiB, floored to 81,900) on
// 50 nodes of 8 GPUs, each GPU's first fraction waiting for its reservation pod to start (a
// second or two, as a container does). Binds that wait must not cost kube-scheduler the
// connections its Filters need: none is closed at accept, and every pod binds.
#include <sstream>

#include <doctest/doctest.h>

#include "support/build_kind.hpp"
#include "support/cluster_invariants.hpp"
#include "support/e2e_cluster.hpp"
#include "support/require_kube_rig.hpp"

namespace fracpack::test {
namespace {

using namespace std::chrono_literals;

/// The value of a metric line `name` in Prometheus text (-1 when absent).
double metric(const std::string& text, const std::string& name) {
  const auto at = text.find("\n" + name + " ");
  return at == std::string::npos ? -1 : std::stod(text.substr(at + name.size() + 2));
}

TEST_CASE("a burst of 2,000 fractions on 50 x 8 GPUs with the default flags: no connection of kube-scheduler's is cut, all bind") {
  auto rig = require_kube_rig();
  if (!rig) return;
  Cluster::Options o;
  o.agent.start_delay = 1000ms;  // a reservation pod's container starts and reports in 1 to 2 s
  o.agent.start_jitter = 1000ms;
  if (const char* flags = std::getenv("FRACPACK_BURST_FLAGS")) {  // to measure other caps: "--max-waiting-binds 4000 ..."
    std::istringstream words(flags);
    for (std::string w; words >> w;) o.fracpack_args.push_back(w);
  }
  Cluster c(*rig, small_cluster(50, 8), o);
  // Where the state checks itself after every change (the sanitizer jobs' builds), a fifth of the
  // burst: its Binds still outnumber a thread per Bind, and the job beside it keeps its time.
  const int pods = kStateSelfChecks ? 400 : 2000;
  const auto started = std::chrono::steady_clock::now();
  for (int i = 0; i < pods; ++i) REQUIRE(c.api().create(fraction_pod(fmt::format("b{:04}", i), "16000Mi")) == 201);
  double peak_waiting = 0;
  double peak_connections = 0;
  const bool all = KubeRig::wait_until([&] {
    if (const json m = c.fracpack_get("/metrics"); m.is_string()) {
      peak_waiting = std::max(peak_waiting, metric(m.get<std::string>(), "fracpack_binds_waiting"));
      peak_connections = std::max(peak_connections, metric(m.get<std::string>(), "fracpack_http_connections"));
    }
    return c.truth().size() == static_cast<std::size_t>(pods);
  }, 300s);
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
  const json metrics = c.fracpack_get("/metrics");
  REQUIRE(metrics.is_string());
  const std::string text = metrics.get<std::string>();
  MESSAGE(pods << " pods bound in " << took << " ms; reservation pods " << reservation_pods(c.api()).size() << "; at most "
                                   << peak_waiting << " Binds waited at once, on " << peak_connections << " connections");
  CHECK_MESSAGE(all, c.truth().size() << " of " << pods << " bound");
  CHECK(metric(text, "fracpack_http_connections_refused_total") == 0);
  const json events = c.api().get("/api/v1/events?fieldSelector=reason=FailedScheduling");
  int cut = 0;
  for (const auto& e : events.value("items", json::array())) cut += e.value("message", "").find("EOF") != std::string::npos ? 1 : 0;
  CHECK_MESSAGE(cut == 0, cut << " FailedScheduling events say EOF");
  CHECK(reservation_pods(c.api()).size() == static_cast<std::size_t>(pods / 5));
  const auto broken = api_invariants(c.api());
  CHECK_MESSAGE(broken.empty(), json(broken).dump());
  CHECK(c.agent().violations().empty());
}

}  // namespace
}  // namespace fracpack::test
