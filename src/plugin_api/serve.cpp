#include "fracpack/server/serve.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <memory>
#include <pthread.h>
#include <unistd.h>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "fracpack/k8s/object_stream.hpp"
#include "plugin_api/cluster_watch.hpp"
#include "plugin_api/grpc_front.hpp"
#include "plugin_api/kube_binder.hpp"
#include "plugin_api/http_front.hpp"
#include "plugin_api/leadership.hpp"
#include "plugin_api/log_format.hpp"

namespace fracpack {
namespace {

/// "host:port" → (host, port); a bare ":port" or "port" listens on 0.0.0.0.
std::optional<std::pair<std::string, int>> split_address(const std::string& address) {
  const auto colon = address.rfind(':');
  std::string host = colon == std::string::npos ? "0.0.0.0" : address.substr(0, colon);
  const std::string port_text = colon == std::string::npos ? address : address.substr(colon + 1);
  if (host.empty()) host = "0.0.0.0";
  int port = -1;
  try {
    std::size_t used = 0;
    port = std::stoi(port_text, &used);
    if (used != port_text.size()) port = -1;
  } catch (const std::exception&) {
    port = -1;
  }
  if (port < 0 || port > 65535) return std::nullopt;
  return std::pair{host, port};
}

/// Applies the cluster file: objects always, running pods only into an empty ledger.
bool load_cluster(Extender& core, const std::string& path) {
  auto objects = k8s::read_objects_file(path);
  if (!objects) {
    spdlog::error("{}", objects.status().message());
    return false;
  }
  std::vector<nlohmann::json> cluster;
  std::vector<nlohmann::json> running;
  for (auto& o : *objects) {
    if (k8s::kind_of(o) != "Pod") {
      cluster.push_back(std::move(o));
    } else if (o.contains("spec") && o["spec"].is_object() && o["spec"].contains("nodeName")) {
      running.push_back(std::move(o));
    }
  }
  std::vector<std::string> warnings;
  if (Status st = core.apply(cluster, &warnings); !st.is_ok()) {
    spdlog::error("{}: {}", path, st.message());
    return false;
  }
  for (const auto& w : warnings) spdlog::warn("{}", w);
  if (!running.empty() && core.snapshot().bindings.empty()) {
    std::vector<std::string> conflicts;
    if (Status st = core.sync(running, /*cluster_empty=*/false, &conflicts); !st.is_ok()) {
      spdlog::error("{}: {}", path, st.message());
      return false;
    }
    for (const auto& c : conflicts) spdlog::warn("running pod not held: {}", c);
    spdlog::info("loaded {} running pods from {}", running.size(), path);
  }
  return true;
}

/// serve --leader-elect: the identity defaults to $POD_NAME, else the host name.
std::unique_ptr<api::Leadership> make_leadership(const ServeOptions& options, const std::shared_ptr<api::KubeConnection>& kube) {
  if (!kube) {
    spdlog::error("--leader-elect needs --kube-api: the Lease is in the API server");
    return nullptr;
  }
  const auto& le = options.leader_election;
  api::LeaderElectionOptions o{le.lease_namespace, le.lease_name, le.identity, le.lease_duration, le.renew_deadline, le.retry_period};
  const char* pod = std::getenv("POD_NAME");
  if (o.identity.empty() && pod != nullptr) o.identity = pod;
  if (o.identity.empty()) {
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) == 0) o.identity = host;
  }
  if (Status st = api::check(o); !st.is_ok()) {
    spdlog::error("{}", st.message());
    return nullptr;
  }
  // The pod to label is this replica's own only when the identity is its pod name.
  const char* ns = std::getenv("POD_NAMESPACE");
  const std::string pod_namespace = ns != nullptr && pod != nullptr && o.identity == pod ? ns : "";
  spdlog::info("leader election on Lease {}/{} as {} (lease {} ms, renew deadline {} ms, retry {} ms){}", o.lease_namespace, o.lease_name,
               o.identity, o.lease_duration.count(), o.renew_deadline.count(), o.retry_period.count(),
               pod_namespace.empty() ? "" : fmt::format("; the leader's pod is labelled {}", api::kLeaderLabel));
  return std::make_unique<api::Leadership>(kube, std::move(o), pod_namespace);
}

bool loopback(const std::string& host) { return host == "127.0.0.1" || host == "::1" || host == "localhost" || host.rfind("127.", 0) == 0; }

/// Who may call what; refuses (nullptr) authentication off on an address beyond loopback
/// unless --allow-unauthenticated says so.
std::shared_ptr<const api::AccessPolicy> access_policy(const ServeOptions& options) {
  auto policy = api::AccessPolicy::load({options.token_file, !options.tls_client_ca.empty(), options.allow_scheduler, options.allow_admin});
  if (!policy) {
    spdlog::error("{}", policy.status().message());
    return nullptr;
  }
  if (!policy->enabled() && (!options.allow_scheduler.empty() || !options.allow_admin.empty())) {
    spdlog::error("--allow-scheduler and --allow-admin name authenticated callers: give --tls-client-ca, --token-file or both");
    return nullptr;
  }
  for (const auto* address : {&options.http, &options.grpc}) {
    if (!*address) continue;
    const auto split = split_address(**address);
    const bool beyond_loopback = split && !loopback(split->first);
    if (beyond_loopback && !options.token_file.empty() && options.tls_cert.empty()) {
      spdlog::error("{}: --token-file without --tls-cert would carry bearer tokens over the network in plaintext, for anyone "
                    "on the path to read and replay; give --tls-cert and --tls-key, or listen on 127.0.0.1", **address);
      return nullptr;
    }
    if (policy->enabled() || options.allow_unauthenticated) continue;
    if (beyond_loopback) {
      spdlog::error("{}: listening beyond loopback with authentication off lets anyone who reaches the port bind pods and "
                    "change the ledger; give --tls-client-ca (mutual TLS) or --token-file, listen on 127.0.0.1, or pass "
                    "--allow-unauthenticated", **address);
      return nullptr;
    }
  }
  return std::make_shared<const api::AccessPolicy>(std::move(*policy));
}

/// Starts the JSON front on --http (`probes_only`: the probe listener on --health).
bool start_http(std::unique_ptr<api::HttpFront>& front, Extender& core, api::Metrics& metrics, const ServeOptions& options,
                std::shared_ptr<const api::AccessPolicy> access, api::KubeBinder* binder, bool probes_only) {
  const std::string& flag_value = probes_only ? *options.health : *options.http;
  const char* flag = probes_only ? "--health" : "--http";
  auto address = split_address(flag_value);
  if (!address) {
    spdlog::error("{} {}: expected host:port", flag, flag_value);
    return false;
  }
  api::HttpOptions http;
  http.listen.host = address->first;
  http.listen.port = address->second;
  http.listen.max_body = options.max_body;
  http.listen.max_connections = options.http_max_connections;
  http.listen.max_connections_per_client = options.http_max_connections_per_client;
  http.listen.gzip = options.http_gzip;
  if (!probes_only) http.listen.tls = {options.tls_cert, options.tls_key, options.tls_client_ca, !options.token_file.empty()};
  http.unresolvable_as_failed = options.unresolvable_as_failed;
  http.probes_only = probes_only;
  http.access = std::move(access);
  front = std::make_unique<api::HttpFront>(core, metrics, http, binder);
  auto port = front->start();
  if (!port) {
    spdlog::error("{} {}: {}", flag, flag_value, port.status().message());
    return false;
  }
  const bool tls = !http.listen.tls.cert.empty();
  if (probes_only) {
    spdlog::info("serving /healthz, /readyz and /metrics on http://{}:{}", http.listen.host, *port);
  } else {
    spdlog::info("serving kube-scheduler extender on {}://{}:{} ({}; state {})", tls ? "https" : "http", http.listen.host, *port,
                 !tls ? "plaintext" : options.tls_client_ca.empty() ? "TLS" : "mutual TLS", options.core.state_path);
  }
  return true;
}

/// Raises the soft limit on open files to the hard one (as Go does at start): every connection,
/// the state file and the API server's clients each hold one, and containers often start with a
/// soft limit of 1,024, the default --http-max-connections. Warns when even the hard limit is short.
void raise_file_limit(const ServeOptions& options) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
    getrlimit(RLIMIT_NOFILE, &limit);
  }
  const auto needed = static_cast<rlim_t>(options.http_max_connections) + 256;  // the rest: state, clients, gRPC
  if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < needed) {
    spdlog::warn("open files limited to {}: below --http-max-connections ({}) + 256; connections beyond the limit wait "
                 "until others close (raise the limit, ulimit -n, or lower --http-max-connections)",
                 limit.rlim_cur, options.http_max_connections);
  }
}

}  // namespace

int serve(const ServeOptions& options) {
  spdlog::set_default_logger(spdlog::stderr_color_mt("fracpack"));  // stdout stays free for answers
  api::escape_log_messages(*spdlog::default_logger());  // names from requests cannot forge a line
  // Block the stop signals before any thread starts, then wait for them here.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  // A peer that closed its end (kube-scheduler, the API server) must not kill the process that
  // writes to it: OpenSSL and the API server's client write without MSG_NOSIGNAL.
  std::signal(SIGPIPE, SIG_IGN);
  raise_file_limit(options);

  // Flags first: a mistake must not leave a state file behind.
  if (!options.http && !options.grpc) {
    spdlog::error("nothing to serve: give --grpc host:port, --http host:port, or both");
    return 2;
  }
  const auto access = access_policy(options);
  if (!access) return 2;
  // Both fronts serve these files: a key of another certificate is said as such, not as a port
  // that cannot listen.
  if (Status st = api::check_tls_files({options.tls_cert, options.tls_key, options.tls_client_ca}); !st.is_ok()) {
    spdlog::error("{}", st.message());
    return 2;
  }
  std::shared_ptr<api::KubeConnection> kube;
  std::unique_ptr<api::KubeBinder> binder;
  ExtenderOptions core_options = options.core;
  if (!options.kube_api.empty()) {
    if (options.cluster_file) {
      spdlog::error("--cluster and --kube-api: the API server is the source of nodes, pods and queues; drop --cluster");
      return 2;
    }
    auto opened = api::KubeConnection::open({options.kube_api, options.kube_token_file, options.kube_ca_file});
    if (!opened) {
      spdlog::error("{}", opened.status().message());
      return 2;
    }
    kube = std::move(*opened);
    binder = std::make_unique<api::KubeBinder>(kube);
    core_options.watching = true;
    spdlog::info("following the API server at {}: nodes, pods, queues from its watch; Bind creates Bindings there", kube->url());
  } else if (!options.kube_token_file.empty() || !options.kube_ca_file.empty()) {
    spdlog::error("--kube-token and --kube-ca apply to --kube-api; give it too");
    return 2;
  }
  std::unique_ptr<api::Leadership> leadership;
  if (options.leader_election.enabled && !(leadership = make_leadership(options, kube))) return 2;
  auto core = Extender::open(core_options);
  if (!core) {
    spdlog::error("{}", core.status().message());
    return 2;
  }
  if (leadership) (*core)->set_act_gate([l = leadership.get()] { return l->may_act(); });
  if (leadership && binder) binder->use_gate([l = leadership.get()] { return l->may_act(); });
  if (binder) {
    binder->use_reservations((*core)->reservations());
    if (core_options.reservation.enabled) {
      spdlog::info("shared GPUs are held by reservation pods in namespace {} (image {})", core_options.reservation.ns,
                   core_options.reservation.image);
    }
  }
  spdlog::info("policy {}{}", options.core.policy,
               options.core.workload ? fmt::format(" (target workload: {} typical pod shape{})", options.core.workload->size(),
                                                              options.core.workload->size() == 1 ? "" : "s") : "");
  if (options.cluster_file && !load_cluster(**core, *options.cluster_file)) return 2;
  api::Metrics metrics;
  std::unique_ptr<api::HttpFront> http_front;
  std::unique_ptr<api::HttpFront> health_front;
  std::unique_ptr<api::GrpcFront> grpc_front;
  if (options.http && !start_http(http_front, **core, metrics, options, access, binder.get(), false)) return 2;
  if (options.health && !start_http(health_front, **core, metrics, options, nullptr, nullptr, true)) return 2;
  if (options.grpc) {
    const auto grpc_address = split_address(*options.grpc);
    if (!grpc_address) {
      spdlog::error("--grpc {}: expected host:port", *options.grpc);
      return 2;
    }
    api::GrpcOptions grpc;
    grpc.address = *options.grpc;
    grpc.tls = {options.tls_cert, options.tls_key, options.tls_client_ca, !options.token_file.empty()};
    grpc.max_message_bytes = static_cast<int>(std::min<std::size_t>(options.max_body, 1u << 30));
    grpc.access = access;
    grpc_front = std::make_unique<api::GrpcFront>(**core, metrics, grpc);
    auto port = grpc_front->start();
    if (!port) {
      spdlog::error("{}", port.status().message());
      return 2;
    }
    spdlog::info("serving gRPC fracpack.v1 on {}:{} ({}; state {})", grpc_address->first, *port,
                 options.tls_cert.empty() ? "plaintext" : options.tls_client_ca.empty() ? "TLS" : "mutual TLS",
                 options.core.state_path);
  }
  std::unique_ptr<api::ClusterWatch> watch;
  if (kube) {
    if (grpc_front) grpc_front->set_serving(false);  // until the first list of everything is applied
    api::GrpcFront* grpc = grpc_front.get();
    watch = std::make_unique<api::ClusterWatch>(**core, kube, api::ClusterWatch::Options{}, [grpc] {
      if (grpc != nullptr) grpc->set_serving(true);
    });
    metrics.add_source([w = watch.get()] { return w->metrics(); });
    (*core)->on_retry_wanted([w = watch.get()](const std::vector<std::string>& pods) { w->nudge(pods); });
    watch->start();
  }
  if (leadership) {
    leadership->follow(watch.get());
    metrics.add_source([l = leadership.get()] { return l->metrics(); });
    leadership->start();
  }
  int signal = 0;
  sigwait(&stop_signals, &signal);
  spdlog::info("signal {}: stopping", signal);
  // The Lease first: a follower takes over at its next try, not after the lease duration, and a
  // Bind still waiting for its reservation pod sends no Binding once it ends (KubeBinder's gate).
  // Then the fronts, while the watch still runs: a Bind waiting for a reservation pod's report
  // (without leader election) still sees it come.
  if (leadership) leadership->stop();
  if (http_front) http_front->stop();
  if (health_front) health_front->stop();
  if (grpc_front) grpc_front->stop();
  if (watch) watch->stop();
  return 0;
}

}  // namespace fracpack
