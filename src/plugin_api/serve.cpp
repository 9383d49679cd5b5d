#include "fracpack/server/serve.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <memory>
#include <random>
#include <pthread.h>
#include <unistd.h>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "fracpack/k8s/object_stream.hpp"
#include "plugin_api/cluster_watch.hpp"
#include "plugin_api/front.hpp"
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

/// This replica's identity: --leader-elect-identity, else $POD_NAME, else the host name.
std::string replica_identity(const ServeOptions& options) {
  if (!options.leader_election.identity.empty()) return options.leader_election.identity;
  if (const char* pod = std::getenv("POD_NAME"); pod != nullptr && *pod != '\0') return pod;
  char host[256] = {};
  return gethostname(host, sizeof host - 1) == 0 ? std::string(host) : std::string();
}

/// Who owns and who creates reservation pods (GpuReservationOptions): the deployment is its
/// Lease; the process is the replica's identity and an instance drawn now.
void name_reservations(const ServeOptions& options, GpuReservationOptions& reservation) {
  reservation.owner = options.leader_election.lease_namespace + "/" + options.leader_election.lease_name;
  std::random_device random;
  reservation.creator = fmt::format("{}/{:08x}", replica_identity(options), random());
}

/// serve --leader-elect: the identity defaults to $POD_NAME, else the host name.
std::unique_ptr<api::Leadership> make_leadership(const ServeOptions& options, const std::shared_ptr<api::KubeConnection>& kube) {
  if (!kube) {
    spdlog::error("--leader-elect needs --kube-api: the Lease is in the API server");
    return nullptr;
  }
  const auto& le = options.leader_election;
  api::LeaderElectionOptions o{le.lease_namespace, le.lease_name, replica_identity(options), le.lease_duration, le.renew_deadline,
                               le.retry_period};
  const char* pod = std::getenv("POD_NAME");
  if (Status st = api::check(o); !st.is_ok()) {
    spdlog::error("{}", st.message());
    return nullptr;
  }
  // The pod to label is this replica's own only when the identity is its pod name.
  const char* ns = std::getenv("POD_NAMESPACE");
  const std::string pod_namespace = ns != nullptr && pod != nullptr && o.identity == pod ? ns : "";
  if (pod_namespace.empty()) {
    spdlog::warn("leader election: the leader's pod will not be labelled {} (that needs POD_NAME and POD_NAMESPACE from the "
                 "downward API, and the identity equal to POD_NAME): a Service selecting that label routes to no replica "
                 "(docs/ha.md, \"Routing\")",
                 api::kLeaderLabel);
  }
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

/// The JSON front for --http, or (`probes_only`) the probe listener for --health; nullptr when
/// its address is not host:port (said in the log).
std::unique_ptr<api::Front> make_http(Extender& core, api::Metrics& metrics, const ServeOptions& options,
                                      std::shared_ptr<const api::AccessPolicy> access, api::KubeBinder* binder, bool probes_only,
                                      std::function<std::vector<std::string>()> verify_api = {}) {
  const std::string& flag_value = probes_only ? *options.health : *options.http;
  const char* flag = probes_only ? "--health" : "--http";
  auto address = split_address(flag_value);
  if (!address) {
    spdlog::error("{} {}: expected host:port", flag, flag_value);
    return nullptr;
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
  http.verify_api = std::move(verify_api);
  return std::make_unique<api::HttpFront>(core, metrics, http, binder);
}

/// How a front's TLS reads in the log.
const char* tls_words(const ServeOptions& options) {
  return options.tls_cert.empty() ? "plaintext" : options.tls_client_ca.empty() ? "TLS" : "mutual TLS";
}

/// Starts `front`; false (said in the log, as `flag value: why`) when it cannot listen.
bool start_front(api::Front& front, const char* flag, const std::string& value, int* port) {
  auto started = front.start();
  if (!started) {
    spdlog::error("{} {}: {}", flag, value, started.status().message());
    return false;
  }
  *port = *started;
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

spdlog::level::level_enum spdlog_level(LogLevel level) {
  switch (level) {
    case LogLevel::kTrace: return spdlog::level::trace;
    case LogLevel::kDebug: return spdlog::level::debug;
    case LogLevel::kInfo: return spdlog::level::info;
    case LogLevel::kWarn: return spdlog::level::warn;
    case LogLevel::kError: return spdlog::level::err;
    case LogLevel::kOff: return spdlog::level::off;
  }
  return spdlog::level::info;
}

/// Blocks SIGINT and SIGTERM before any thread starts (serve waits for them), ignores SIGPIPE
/// (a peer that closed its end must not kill the process writing to it: OpenSSL and the API
/// server's client write without MSG_NOSIGNAL), sets up the log, raises the file limit.
sigset_t prepare_process(const ServeOptions& options) {
  // stderr: stdout stays free for answers. JSON lines have no colours.
  spdlog::set_default_logger(options.log_format == LogFormat::kJson ? spdlog::stderr_logger_mt("fracpack")
                                                                    : spdlog::stderr_color_mt("fracpack"));
  api::set_log_format(*spdlog::default_logger(), options.log_format);  // names from requests cannot forge a line
  spdlog::set_level(spdlog_level(options.log_level));
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  raise_file_limit(options);
  return stop_signals;
}

/// One `fracpack serve`: each step says what went wrong in the log and returns false, and run()
/// then exits 2 having written nothing it cannot take back.
class ServeRun {
 public:
  explicit ServeRun(const ServeOptions& options) : options_(options), core_options_(options.core) {}
  int run(const sigset_t& stop_signals);

 private:
  bool check_flags();
  bool connect_kube();
  bool open_core();
  bool start_fronts();
  bool start_grpc();
  void follow_cluster();
  void stop();

  const ServeOptions& options_;
  ExtenderOptions core_options_;
  std::shared_ptr<const api::AccessPolicy> access_;
  std::shared_ptr<api::KubeConnection> kube_;
  std::unique_ptr<api::KubeBinder> binder_;
  std::unique_ptr<api::Leadership> leadership_;
  std::unique_ptr<Extender> core_;
  api::Metrics metrics_;
  std::vector<std::unique_ptr<api::Front>> fronts_;  ///< stopped in this order
  api::GrpcFront* grpc_ = nullptr;                   ///< among fronts_, for its health status
  std::unique_ptr<api::ClusterWatch> watch_;
  std::atomic<const api::ClusterWatch*> watching_{nullptr};  ///< watch_, for the fronts' threads once it exists
};

// Flags first: a mistake must not leave a state file behind.
bool ServeRun::check_flags() {
  if (!options_.http && !options_.grpc) {
    spdlog::error("nothing to serve: give --grpc host:port, --http host:port, or both");
    return false;
  }
  access_ = access_policy(options_);
  if (!access_) return false;
  // Both fronts serve these files: a key of another certificate is said as such, not as a port
  // that cannot listen.
  if (Status st = api::check_tls_files({options_.tls_cert, options_.tls_key, options_.tls_client_ca}); !st.is_ok()) {
    spdlog::error("{}", st.message());
    return false;
  }
  return true;
}

bool ServeRun::connect_kube() {
  if (options_.kube_api.empty()) {
    if (!options_.kube_token_file.empty() || !options_.kube_ca_file.empty()) {
      spdlog::error("--kube-token and --kube-ca apply to --kube-api; give it too");
      return false;
    }
    return true;
  }
  if (options_.cluster_file) {
    spdlog::error("--cluster and --kube-api: the API server is the source of nodes, pods and queues; drop --cluster");
    return false;
  }
  auto opened = api::KubeConnection::open({options_.kube_api, options_.kube_token_file, options_.kube_ca_file});
  if (!opened) {
    spdlog::error("{}", opened.status().message());
    return false;
  }
  kube_ = std::move(*opened);
  binder_ = std::make_unique<api::KubeBinder>(kube_);
  binder_->limit_waiting(options_.max_waiting_binds);
  metrics_.add_source([b = binder_.get()] {
    return fmt::format("# HELP fracpack_binds_waiting Binds waiting for a new reservation pod to report its GPU (each holds the "
                       "caller's connection, no thread).\n# TYPE fracpack_binds_waiting gauge\nfracpack_binds_waiting {}\n",
                       b->waiting());
  });
  // Each Bind waiting for a reservation pod holds one of kube-scheduler's connections.
  const std::size_t room = std::min(options_.http_max_connections, options_.http_max_connections_per_client);
  if (options_.core.reservation.enabled && room < options_.max_waiting_binds + 64) {
    spdlog::warn("--http-max-connections {} and --http-max-connections-per-client {} leave kube-scheduler fewer than 64 "
                 "connections for its Filters when --max-waiting-binds {} Binds wait for reservation pods; its extra "
                 "connections would be closed at accept (EOF)",
                 options_.http_max_connections, options_.http_max_connections_per_client, options_.max_waiting_binds);
  }
  core_options_.watching = true;
  name_reservations(options_, core_options_.reservation);
  spdlog::info("following the API server at {}: nodes, pods, queues from its watch; Bind creates Bindings there", kube_->url());
  return true;
}

bool ServeRun::open_core() {
  if (options_.leader_election.enabled && !(leadership_ = make_leadership(options_, kube_))) return false;
  auto core = Extender::open(core_options_);
  if (!core) {
    spdlog::error("{}", core.status().message());
    return false;
  }
  core_ = std::move(*core);
  if (leadership_) core_->set_act_gate([l = leadership_.get()] { return l->may_act(); });
  if (leadership_ && binder_) binder_->use_gate([l = leadership_.get()] { return l->may_act(); });
  if (binder_) {
    binder_->use_reservations(core_->reservations());
    if (core_options_.reservation.enabled) {
      spdlog::info("shared GPUs are held by reservation pods in namespace {} (image {})", core_options_.reservation.ns,
                   core_options_.reservation.image);
    }
  }
  const auto& workload = options_.core.workload;
  spdlog::info("policy {}{}", options_.core.policy,
               workload ? fmt::format(" (target workload: {} typical pod shape{})", workload->size(), workload->size() == 1 ? "" : "s") : "");
  return !options_.cluster_file || load_cluster(*core_, *options_.cluster_file);
}

bool ServeRun::start_fronts() {
  // gRPC first: once /healthz answers on an HTTP port, every port the flags name is listening (a
  // probe that answered before gRPC listened sent the scheduler's first calls to a refused port).
  if (options_.grpc && !start_grpc()) return false;
  int port = 0;
  if (options_.http) {
    std::function<std::vector<std::string>()> verify_api;
    if (kube_) {
      verify_api = [this] {
        const api::ClusterWatch* w = watching_.load();
        return w != nullptr ? w->verify_api() : std::vector<std::string>{"the watch has not started"};
      };
    }
    fronts_.push_back(make_http(*core_, metrics_, options_, access_, binder_.get(), false, std::move(verify_api)));
    if (!fronts_.back() || !start_front(*fronts_.back(), "--http", *options_.http, &port)) return false;
    const bool tls = !options_.tls_cert.empty();
    spdlog::info("serving kube-scheduler extender on {}://{}:{} ({}; state {})", tls ? "https" : "http",
                 split_address(*options_.http)->first, port, tls_words(options_), options_.core.state_path);
  }
  if (options_.health) {
    fronts_.push_back(make_http(*core_, metrics_, options_, nullptr, nullptr, true));
    if (!fronts_.back() || !start_front(*fronts_.back(), "--health", *options_.health, &port)) return false;
    spdlog::info("serving /healthz, /readyz and /metrics on http://{}:{}", split_address(*options_.health)->first, port);
  }
  return true;
}

bool ServeRun::start_grpc() {
  const auto address = split_address(*options_.grpc);
  if (!address) {
    spdlog::error("--grpc {}: expected host:port", *options_.grpc);
    return false;
  }
  api::GrpcOptions grpc;
  grpc.address = *options_.grpc;
  grpc.tls = {options_.tls_cert, options_.tls_key, options_.tls_client_ca, !options_.token_file.empty()};
  grpc.max_message_bytes = static_cast<int>(std::min<std::size_t>(options_.max_body, 1u << 30));
  grpc.access = access_;
  grpc.binder = binder_.get();
  auto front = std::make_unique<api::GrpcFront>(*core_, metrics_, grpc);
  grpc_ = front.get();
  fronts_.push_back(std::move(front));
  auto port = grpc_->start();
  if (!port) {
    spdlog::error("{}", port.status().message());
    return false;
  }
  spdlog::info("serving gRPC fracpack.v1 on {}:{} ({}; state {})", address->first, *port, tls_words(options_),
               options_.core.state_path);
  return true;
}

// With --kube-api: the watch, which marks gRPC health SERVING once everything is listed; then
// leader election.
void ServeRun::follow_cluster() {
  if (kube_) {
    if (grpc_ != nullptr) grpc_->set_serving(false);  // until the first list of everything is applied
    watch_ = std::make_unique<api::ClusterWatch>(*core_, kube_, api::ClusterWatch::Options{}, [grpc = grpc_] {
      if (grpc != nullptr) grpc->set_serving(true);
    });
    watching_ = watch_.get();
    metrics_.add_source([w = watch_.get()] { return w->metrics(); });
    core_->on_retry_wanted([w = watch_.get()](const std::vector<std::string>& pods) { w->nudge(pods); });
    if (binder_) binder_->on_slot_freed([w = watch_.get()](const std::vector<std::string>& pods) { w->nudge(pods); });
    watch_->start();
  }
  if (leadership_) {
    leadership_->follow(watch_.get());
    metrics_.add_source([l = leadership_.get()] { return l->metrics(); });
    leadership_->start();
  }
}

// The Lease first: a follower takes over at its next try, not after the lease duration, and a
// Bind still waiting for its reservation pod sends no Binding once it ends (KubeBinder's gate).
// Then the fronts, while the watch still runs: a Bind waiting for a reservation pod's report
// (without leader election) still sees it come.
void ServeRun::stop() {
  if (leadership_) leadership_->stop();
  for (auto& front : fronts_) front->stop();
  if (binder_) binder_->on_slot_freed(nullptr);  // the watch it nudges through goes first
  if (watch_) watch_->stop();
}

int ServeRun::run(const sigset_t& stop_signals) {
  if (!check_flags() || !connect_kube() || !open_core() || !start_fronts()) return 2;
  follow_cluster();
  int signal = 0;
  sigwait(&stop_signals, &signal);
  spdlog::info("signal {}: stopping", signal);
  stop();
  return 0;
}

}  // namespace

int serve(const ServeOptions& options) {
  const sigset_t stop_signals = prepare_process(options);
  return ServeRun(options).run(stop_signals);
}

}  // namespace fracpack
