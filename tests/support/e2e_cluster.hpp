// kube-rig with fracpack as kube-scheduler's extender, fracpack following it (one replica, or
// several with leader election behind a proxy that routes to the leader), and a device agent
// playing the kubelet: the end-to-end tests' cluster. Tests only (doctest).
#pragma once

#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "fracpack/k8s/object_stream.hpp"
#include "plugin_api/http_server.hpp"
#include "support/builders.hpp"
#include "support/device_agent.hpp"
#include "support/kube_rig.hpp"
#include "support/latency_proxy.hpp"
#include "support/server_process.hpp"
#include "support/test_ports.hpp"
#include "support/tls_files.hpp"

namespace fracpack::test {


namespace fs = std::filesystem;

inline constexpr const char* kReservations = "kai-resource-reservation";  // the reservation pods' namespace



/// KAI's priority classes, which kube-rig (like a real cluster) must be given.
inline std::vector<json> priority_classes() {
  std::vector<json> out;
  for (const auto& [name, value] : std::vector<std::pair<std::string, int>>{{"train", 50}, {"build-preemptible", 75}, {"build", 100}, {"inference", 125}}) {
    out.push_back({{"apiVersion", "scheduling.k8s.io/v1"}, {"kind", "PriorityClass"}, {"metadata", {{"name", name}}}, {"value", value}});
  }
  return out;
}

/// kube-rig with fracpack as its extender, fracpack following it.
class Cluster {
 public:
  struct Options {
    std::vector<std::string> fracpack_args;  ///< more flags for every replica
    /// kube-scheduler calls fracpack over mutual TLS (enableHTTPS, tlsConfig), as
    /// docs/security.md configures it; the probes move to a plaintext --health port.
    bool https = false;
    /// > 1: that many fracpack replicas with --leader-elect (lease 3 s, renew deadline 2 s, retry
    /// 0.5 s), and kube-scheduler calls them through a proxy that routes to the Lease's holder, as
    /// a Service selecting the leader's label does (docs/ha.md).
    int replicas = 1;
    /// Each replica reaches kube-rig through a LatencyProxy of its own (proxy(i)).
    bool proxies = false;
    DeviceAgent::Options agent;
    /// kube-scheduler's configuration; empty: examples/kube-scheduler/fracpack-scheduler.yaml
    /// (v1beta1, for kube-rig v1.20) pointed at fracpack. Its `{fracpack}` is fracpack's URL.
    std::string scheduler_config;
  };
  Cluster(const fs::path& rig_binary, const std::vector<json>& preloaded, std::vector<std::string> fracpack_args = {},
          bool https = false, int replicas = 1)
      : Cluster(rig_binary, preloaded, Options{std::move(fracpack_args), https, replicas, false, {}, {}}) {}
  Cluster(const fs::path& rig_binary, const std::vector<json>& preloaded, Options options)
      : dir_(fs::temp_directory_path() / fmt::format("fracpack-e2e-{}-{}", getpid(), ++counter())),
        fracpack_port_(free_port()),
        rig_port_(free_port()),
        fracpack_args_(std::move(options.fracpack_args)),
        scheduler_config_(std::move(options.scheduler_config)),
        pki_(options.https ? std::make_unique<TlsFiles>() : nullptr) {
    const int replicas = options.replicas;
    for (int i = 1; i < replicas; ++i) replica_ports_.push_back(free_port());
    fs::create_directories(dir_);
    std::vector<json> objects = priority_classes();
    objects.insert(objects.end(), preloaded.begin(), preloaded.end());
    const auto file = dir_ / "objects.json";
    std::ofstream(file) << json{{"apiVersion", "v1"}, {"kind", "List"}, {"items", objects}}.dump();
    // The reservation pods' namespace and role, as docs/kube-scheduler.md deploys them.
    const std::string reservation = std::string(FRACPACK_SOURCE_DIR) + "/deploy/kubernetes/05-gpu-reservation.yaml";
    rig_ = std::make_unique<KubeRig>(rig_binary, rig_port_, scheduler_config(),
                                     std::vector<std::string>{file.string(), reservation}, dir_);
    agent_ = std::make_unique<DeviceAgent>(*rig_, options.agent);
    if (options.proxies) {
      for (int i = 0; i < std::max(replicas, 1); ++i) proxies_.push_back(std::make_unique<LatencyProxy>(rig_port_));
    }
    if (replica_ports_.empty()) {
      start_fracpack();
    } else {
      start_replicas(replicas);
    }
  }
  ~Cluster() {
    proxy_.reset();
    replicas_.clear();
    proxies_.clear();
    fracpack_.reset();
    agent_.reset();
    rig_.reset();
    if (std::getenv("FRACPACK_E2E_KEEP") != nullptr) return;  // the logs, for a failing run
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }

  void start_fracpack() {
    std::vector<std::string> args{"--kube-api", kube_url(0), "--state", (dir_ / "state.db").string(), "--unresolvable-as-failed"};
    args.insert(args.end(), fracpack_args_.begin(), fracpack_args_.end());
    if (pki_) {
      args.insert(args.end(), {"--tls-cert", pki_->server_cert, "--tls-key", pki_->server_key, "--tls-client-ca", pki_->ca,
                               "--health", fmt::format("127.0.0.1:{}", probe_port_)});
    }
    fracpack_ = std::make_unique<ServerProcess>(FRACPACK_BINARY, args, fracpack_port_, (dir_ / "fracpack.log").string(),
                                                pki_ ? probe_port_ : 0);
    REQUIRE_MESSAGE(KubeRig::wait_until([&] { return fracpack_get("/readyz").is_string(); }, std::chrono::seconds(20)),
                    "fracpack did not sync with kube-rig");
  }
  void kill_fracpack() { fracpack_->kill9(); }
  /// The identity holding the Lease ("" when none).
  [[nodiscard]] std::string leader() const {
    const json lease = rig_->get("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/fracpack");
    return lease.is_object() && lease.contains("spec") ? lease["spec"].value("holderIdentity", "") : "";
  }
  /// kill -9 of the replica holding the Lease; its identity.
  std::string kill_leader() {
    const std::string who = leader();
    for (std::size_t i = 0; i < replicas_.size(); ++i) {
      if (replica_name(i) == who) replicas_[i]->kill9();
    }
    return who;
  }

  /// The replica holding the Lease (-1 when none).
  [[nodiscard]] int leader_index() const {
    const std::string who = leader();
    for (std::size_t i = 0; i < replica_ports_.size(); ++i) {
      if (replica_name(i) == who) return static_cast<int>(i);
    }
    return -1;
  }
  /// kill -9 of replica `i`, and a new process for it (a Deployment's or StatefulSet's restart).
  void kill_replica(std::size_t i) { replicas_.at(i)->kill9(); }
  void restart_replica(std::size_t i) { start_replica(i); }
  [[nodiscard]] std::size_t replica_count() const { return replica_ports_.size(); }
  /// Replica `i`'s proxy to the API server (Options::proxies).
  [[nodiscard]] LatencyProxy& proxy(std::size_t i) { return *proxies_.at(i); }
  /// GET on replica `i` itself (not through the routing proxy): JSON, a 200 text answer as a
  /// string; else {"status": code, "body": text}.
  [[nodiscard]] json replica_get(std::size_t i, const std::string& path) const {
    httplib::Client c("127.0.0.1", replica_ports_.at(i));
    c.set_read_timeout(20, 0);
    auto res = c.Get(path);
    if (!res) return json();
    if (res->status != 200) return json{{"status", res->status}, {"body", res->body}};
    json parsed = json::parse(res->body, nullptr, false);
    return parsed.is_discarded() ? json(res->body) : parsed;
  }
  /// Replica `i`'s bindings: pod → (node, GPUs), reservation pods holding idle GPUs left out.
  [[nodiscard]] std::map<std::string, std::pair<std::string, std::vector<int>>> replica_ledger(std::size_t i) const {
    std::map<std::string, std::pair<std::string, std::vector<int>>> out;
    const json snapshot = replica_get(i, "/snapshot");
    if (!snapshot.is_object()) return out;
    for (const auto& b : snapshot["bindings"]) {
      const std::string pod = b["pod"].get<std::string>();
      if (!pod.starts_with(std::string(kReservations) + "/")) out[pod] = {b["node"].get<std::string>(), b["gpus"].get<std::vector<int>>()};
    }
    return out;
  }
  [[nodiscard]] const std::filesystem::path& dir() const { return dir_; }

  [[nodiscard]] const KubeRig& api() const { return *rig_; }
  [[nodiscard]] int fracpack_port() const { return fracpack_port_; }
  [[nodiscard]] DeviceAgent& agent() { return *agent_; }
  [[nodiscard]] const DeviceAgent& agent() const { return *agent_; }
  /// GET on fracpack: JSON, the text of a 200 text answer as a string, else null.
  [[nodiscard]] json fracpack_get(const std::string& path) const {
    const auto [status, body] = fracpack_answer(path);
    if (status != 200) return json();
    json parsed = json::parse(body, nullptr, false);
    return parsed.is_discarded() ? json(body) : parsed;
  }
  /// GET `path` from fracpack: the HTTP status (0: no answer) and the body.
  [[nodiscard]] std::pair<int, std::string> fracpack_answer(const std::string& path) const {
    httplib::Client c(fmt::format("{}://127.0.0.1:{}", pki_ ? "https" : "http", fracpack_port_), pki_ ? pki_->client_cert : "",
                      pki_ ? pki_->client_key : "");
    if (pki_) c.set_ca_cert_path(pki_->ca.c_str());
    c.set_read_timeout(10, 0);
    auto res = c.Get(path);
    if (!res) return {0, ""};
    return {res->status, res->body};
  }
  /// fracpack's bindings: pod → node, for pods holding resources.
  [[nodiscard]] std::map<std::string, std::string> held() const {
    std::map<std::string, std::string> out;
    const json bindings_list = fracpack_get("/snapshot");  // a named copy: a temporary's member would dangle in the loop
    for (const auto& b : bindings_list["bindings"]) {
      const std::string pod = b["pod"].get<std::string>();
      if (!pod.starts_with(std::string(kReservations) + "/")) out[pod] = b["node"].get<std::string>();  // an idle GPU's reservation
    }
    return out;
  }
  /// What the API server shows bound and running: pod → node.
  [[nodiscard]] std::map<std::string, std::string> truth() const {
    std::map<std::string, std::string> out;
    const json items_list = rig_->get("/api/v1/pods");  // a named copy: a temporary's member would dangle in the loop
    for (const auto& p : items_list["items"]) {
      const std::string node = p["spec"].value("nodeName", "");
      const std::string phase = p.contains("status") ? p["status"].value("phase", "") : "";
      if (!node.empty() && phase != "Succeeded" && phase != "Failed" && p["metadata"]["namespace"] != kReservations) {
        out[p["metadata"]["namespace"].get<std::string>() + "/" + p["metadata"]["name"].get<std::string>()] = node;
      }
    }
    return out;
  }
  /// Waits until fracpack's ledger equals the API server's truth and verifies it from scratch.
  void converged(std::chrono::seconds timeout = std::chrono::seconds(10)) const {
    const bool same = KubeRig::wait_until([&] { return held() == truth(); }, timeout);
    CHECK_MESSAGE(same, "fracpack holds " << json(held()).dump() << "; the API server has " << json(truth()).dump());
    const auto [status, verified] = fracpack_answer("/debug/verify");
    CHECK_MESSAGE(status == 200, verified);  // equal to a ledger rebuilt from scratch, and to the API server
  }

 private:
  static int& counter() {
    static int n = 0;
    return n;
  }
  [[nodiscard]] static std::string replica_name(std::size_t i) { return fmt::format("fracpack-{}", i); }

  /// Where replica `i` reaches the API server: its proxy, or kube-rig itself.
  [[nodiscard]] std::string kube_url(std::size_t i) const { return i < proxies_.size() ? proxies_[i]->url() : rig_->url(); }

  /// Replica `i`, with its own state file, started again where it was (its log appended).
  void start_replica(std::size_t i) {
    std::vector<std::string> args{"--kube-api", kube_url(i), "--state", (dir_ / fmt::format("state-{}.db", i)).string(),
                                  "--unresolvable-as-failed", "--leader-elect", "--leader-elect-identity", replica_name(i),
                                  "--leader-elect-lease-duration", "3", "--leader-elect-renew-deadline", "2",
                                  "--leader-elect-retry-period", "0.5"};
    args.insert(args.end(), fracpack_args_.begin(), fracpack_args_.end());
    const std::string log = (dir_ / fmt::format("fracpack-{}.log", i)).string();
    auto process = std::make_unique<ServerProcess>(FRACPACK_BINARY, args, replica_ports_[i], log + (restarts_[i]++ > 0 ? fmt::format(".{}", restarts_[i]) : ""));
    if (i < replicas_.size()) {
      replicas_[i] = std::move(process);
    } else {
      replicas_.push_back(std::move(process));
    }
  }

  /// The replicas and the proxy in front of them on fracpack_port_.
  void start_replicas(int replicas) {
    replica_ports_.insert(replica_ports_.begin(), free_port());
    for (int i = 0; i < replicas; ++i) start_replica(static_cast<std::size_t>(i));
    api::HttpServerOptions o;
    o.port = fracpack_port_;
    proxy_ = std::make_unique<api::HttpServer>(o);
    proxy_->fallback([this](const api::HttpRequest& req, api::HttpResponse& res) { forward(req, res); });
    REQUIRE(proxy_->start().is_ok());
    REQUIRE_MESSAGE(KubeRig::wait_until([&] { return !leader().empty() && fracpack_get("/readyz").is_string(); }, std::chrono::seconds(20)),
                    "no replica took the lead and synced");
  }

  /// The request to the replica holding the Lease; 503 when none does.
  void forward(const api::HttpRequest& req, api::HttpResponse& res) const {
    const std::string who = leader();
    res.status = 503;
    for (std::size_t i = 0; i < replica_ports_.size(); ++i) {
      if (replica_name(i) != who) continue;
      httplib::Client c("127.0.0.1", replica_ports_[i]);
      c.set_read_timeout(50, 0);
      auto answer = req.method == "GET" ? c.Get(req.path) : c.Post(req.path, req.body, "application/json");
      if (!answer) return;
      res.status = answer->status;
      res.body = answer->body;
      res.content_type = answer->get_header_value("Content-Type");
    }
  }

  /// The documented scheduler configuration, calling fracpack on its port (over mutual TLS with `pki_`).
  [[nodiscard]] std::string scheduler_config() const {
    if (!scheduler_config_.empty()) {
      std::string text = scheduler_config_;
      const std::string slot = "{fracpack}";
      const auto at = text.find(slot);
      REQUIRE_MESSAGE(at != std::string::npos, "a scheduler configuration without {fracpack}");
      return text.replace(at, slot.size(), fmt::format("http://127.0.0.1:{}", fracpack_port_));
    }
    std::string text = rig_scheduler_config(fracpack_port_);
    if (!pki_) return text;
    const auto swap = [&text](const std::string& from, const std::string& to) {
      const auto at = text.find(from);
      REQUIRE_MESSAGE(at != std::string::npos, "fracpack-scheduler.yaml: no ", from);
      text.replace(at, from.size(), to);
    };
    swap("http://127.0.0.1:", "https://127.0.0.1:");
    swap("enableHTTPS: false", fmt::format("enableHTTPS: true\n    tlsConfig:\n      certFile: {}\n      keyFile: {}\n      caFile: {}",
                                           pki_->client_cert, pki_->client_key, pki_->ca));
    return text;
  }
  fs::path dir_;
  int fracpack_port_;
  int rig_port_;
  std::vector<std::string> fracpack_args_;
  std::string scheduler_config_;  ///< Options::scheduler_config
  std::unique_ptr<TlsFiles> pki_;
  int probe_port_ = free_port();
  std::vector<int> replica_ports_;  ///< with replicas: each replica's --http port
  std::vector<std::unique_ptr<ServerProcess>> replicas_;
  std::map<std::size_t, int> restarts_;  ///< replica → times started
  std::vector<std::unique_ptr<LatencyProxy>> proxies_;
  std::unique_ptr<api::HttpServer> proxy_;
  std::unique_ptr<KubeRig> rig_;
  std::unique_ptr<DeviceAgent> agent_;
  std::unique_ptr<ServerProcess> fracpack_;
};

inline std::vector<json> read_example(const char* file) {
  auto objects = k8s::read_objects_file(std::string(FRACPACK_SOURCE_DIR) + "/examples/" + file);
  REQUIRE(objects.is_ok());
  return *objects;
}

inline std::string key_of(const json& pod) { return pod["metadata"].value("namespace", "default") + "/" + pod["metadata"]["name"].get<std::string>(); }

/// Waits up to 40 s for `pods` pods to be bound. Pods whose extender calls failed wait in
/// kube-scheduler's unschedulable queue until a cluster event (or 60 s): a node label is one,
/// sent at once and again every 5 s, since a slow build's last failed attempt can come after it.
inline bool all_bound_nudging(const Cluster& c, std::size_t pods) {
  int touches = 0;
  auto touch = [&] {
    const json patch{{"metadata", {{"labels", {{"touched", std::to_string(++touches)}}}}}};
    return c.api().send("PATCH", "/api/v1/nodes/gpu-0", patch, "application/merge-patch+json");
  };
  REQUIRE(touch() == 200);
  auto last_touch = std::chrono::steady_clock::now();
  return KubeRig::wait_until([&] {
    if (c.truth().size() == pods) return true;
    if (std::chrono::steady_clock::now() - last_touch > std::chrono::seconds(5)) {
      touch();
      last_touch = std::chrono::steady_clock::now();
    }
    return false;
  }, std::chrono::seconds(40));
}


/// Nodes with `gpus` whole GPUs each, and a Queue with a generous quota.
inline std::vector<json> small_cluster(int nodes, int gpus) {
  std::vector<json> out;
  for (int n = 0; n < nodes; ++n) out.push_back(nvf(fmt::format("gpu-{}", n), gpus, 81920).obj);
  out.push_back(queue_object("team", "", -1));
  return out;
}

inline json gpu_pod(const std::string& name, int gpus, const std::string& queue = "team") {
  PodBuilder p(name);
  p.whole(gpus).label("kai.scheduler/queue", queue).priority_class("train");
  p.obj["spec"]["schedulerName"] = "kai-scheduler";
  return p.obj;
}

inline json fraction_pod(const std::string& name, const std::string& memory) {
  PodBuilder p(name);
  p.gpu_memory(memory).label("kai.scheduler/queue", "team").priority_class("train");
  p.obj["spec"]["schedulerName"] = "kai-scheduler";
  return p.obj;
}


/// The reservation pods in the API server, by their runai-gpu-group.
inline std::map<std::string, json> reservation_pods(const KubeRig& api) {
  std::map<std::string, json> out;
  const json list = api.get(std::string("/api/v1/namespaces/") + kReservations + "/pods");
  if (!list.is_object()) return out;
  for (const auto& p : list["items"]) out[p.value(json::json_pointer("/metadata/labels/runai-gpu-group"), "")] = p;
  return out;
}

/// A bound fraction's group label and its gpus.devices annotation (the label follows the Binding
/// within moments: waited for).
inline std::pair<std::string, std::string> group_and_device(const KubeRig& api, const std::string& key) {
  const json::json_pointer label("/metadata/labels/runai-gpu-group");
  (void)KubeRig::wait_until([&] { return api.pod(key).contains(label); }, std::chrono::seconds(2));
  const json pod = api.pod(key);
  std::string device;
  const json annotations = pod.value(json::json_pointer("/metadata/annotations"), json::object());  // named: items() of a temporary dangles
  for (const auto& [k, v] : annotations.items()) {
    if (k.ends_with(".gpus.devices")) device = v.get<std::string>();
  }
  return {pod.value(json::json_pointer("/metadata/labels/runai-gpu-group"), ""), device};
}

}  // namespace fracpack::test
