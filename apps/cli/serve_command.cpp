// fracpack serve: the scheduler extender (gRPC API and kube-scheduler's HTTP/JSON verbs).
#include <map>

#include <fmt/format.h>

#include "commands.hpp"
#include "min_runtime_flags.hpp"
#include "fracpack/core/quoting.hpp"
#include "fracpack/k8s/time.hpp"
#include "placement_flags.hpp"
#include "fracpack/server/serve.hpp"
#include "fracpack/sim/workload_file.hpp"

namespace fracpack::cli {
namespace {

class ServeCommand : public Command {
 public:
  explicit ServeCommand(CLI::App& app);
  int run() override;

 private:
  void add_fronts();
  void add_logging();
  void add_access();
  void add_placement();
  void add_kube_api();
  void add_reservations();
  void add_leader_election();

  ServeOptions serve_;
  std::string http_, grpc_, health_, cluster_, workload_;
  std::string policy_ = "pack";
  std::string log_level_ = "info", log_format_ = "text";
  PlacementFlags placement_;
  MinRuntimeFlags min_runtime_;
  std::string gpu_reservation_ = "kai";
  std::int64_t reservation_timeout_ = 0;
  double retry_refused_within_ = 0;
  std::string staleness_grace_ = "60s";
  double lease_duration_ = 15, renew_deadline_ = 10, retry_period_ = 2;
};

ServeCommand::ServeCommand(CLI::App& app) {
  app_ = app.add_subcommand("serve", "Run the scheduler extender: gRPC API and kube-scheduler HTTP/JSON front");
  serve_.core.state_path = "fracpack-state.db";  // durable by default; --state :memory: for none
  serve_.core.filter_best = 1;
  reservation_timeout_ = serve_.core.reservation.timeout.count();
  retry_refused_within_ = static_cast<double>(serve_.core.retry_refused_within.count()) / 1000.0;
  add_fronts();
  add_access();
  add_placement();
  add_kube_api();
  add_reservations();
  add_leader_election();
  app_->get_option("--max-waiting-binds")->needs(app_->get_option("--kube-api"));  // only Bindings through the API server wait
}

void ServeCommand::add_fronts() {
  app_->add_option("--http", http_, "host:port for kube-scheduler's HTTP extender calls");
  app_->add_option("--grpc", grpc_, "host:port for the gRPC API (fracpack.v1.Extender, .Cluster)");
  app_->add_option("--health", health_,
                   "host:port of a plaintext listener for GET /healthz, /readyz and /metrics only (kubelet probes, "
                   "Prometheus), open to every caller");
  app_->add_option("--http-max-connections", serve_.http_max_connections,
                   "JSON front: open connections at most (more are closed at accept); slow clients hold a connection, "
                   "never a thread")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 20))
      ->capture_default_str();
  app_->add_option("--http-max-connections-per-client", serve_.http_max_connections_per_client,
                   "JSON front: open connections from one IP address at most, so that one caller cannot take them all; "
                   "kube-scheduler holds one per Bind waiting for a reservation pod, so keep it above --max-waiting-binds")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 20))
      ->capture_default_str();
  app_->add_option("--max-waiting-binds", serve_.max_waiting_binds,
                   "--kube-api: Binds waiting for a new reservation pod's report at once (each holds a caller's connection, "
                   "no thread); a Bind beyond it fails at once, and fracpack nudges its pod when a waiting Bind ends")
      ->check(CLI::Range(std::size_t{1}, std::size_t{4096}))
      ->capture_default_str();
  app_->add_flag("--http-gzip", serve_.http_gzip,
                 "JSON front: gzip answers for callers that accept it (kube-scheduler does); for a scheduler on a slow network. "
                 "Off: a Filter answer for 5,000 nodes costs ~1 ms of CPU to compress");
  app_->add_option("--max-body", serve_.max_body, "Largest request (HTTP body or gRPC message) in bytes")
      ->check(CLI::Range(std::size_t{1} << 10, std::size_t{1} << 30))
      ->capture_default_str();
  app_->add_option("--state", serve_.core.state_path, "SQLite state file (:memory: for none)")->capture_default_str();
  add_logging();
  app_->add_flag("--fsync", serve_.core.fsync_every_bind, "fsync every bind (survive power loss, not just crashes)");
}

void ServeCommand::add_logging() {
  // Strings checked by name, then mapped in run(): CLI11's transformer would answer a typo with
  // its own internals ("Check xml value in {json->1,text->0} OR {1,0} FAILED").
  app_->add_option("--log-level", log_level_,
                   "Least severe log lines written: decisions that place are info, refusals warn, API server and "
                   "internal errors error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}))
      ->capture_default_str();
  app_->add_option("--log-format", log_format_,
                   "Log lines on stderr: text, or json (one object per line: time, level, logger, msg, and a "
                   "decision's verb, pod, node, gpus, code, duration_seconds)")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
}

void ServeCommand::add_access() {
  app_->add_option("--tls-cert", serve_.tls_cert, "Both fronts: PEM certificate chain (gRPC over TLS, HTTPS)")->check(CLI::ExistingFile);
  app_->add_option("--tls-key", serve_.tls_key, "Both fronts: PEM private key of --tls-cert")->check(CLI::ExistingFile);
  app_->add_option("--tls-client-ca", serve_.tls_client_ca,
                   "Both fronts: PEM CA of client certificates (mutual TLS: callers must present one it signed)")
      ->check(CLI::ExistingFile);
  app_->add_option("--token-file", serve_.token_file,
                   "Both fronts: bearer tokens callers may authenticate with (kube-apiserver's static token file "
                   "format: token,user[,uid[,groups]] per line)")
      ->check(CLI::ExistingFile);
  app_->add_option("--allow-scheduler", serve_.allow_scheduler,
                   "Caller (client certificate CN or token user) allowed Filter, Prioritize, Bind, Preempt; repeat for "
                   "several (none named: every authenticated caller)");
  app_->add_option("--allow-admin", serve_.allow_admin,
                   "Caller allowed Apply, Remove, Release, Sync (off for everyone with --kube-api); repeat for several");
  app_->add_flag("--allow-unauthenticated", serve_.allow_unauthenticated,
                 "Listen beyond loopback with neither --tls-client-ca nor --token-file: every caller may do everything");
}

void ServeCommand::add_placement() {
  app_->add_option("--cluster", cluster_, "Nodes, Queues, PodGroups (and running pods) to load (- for standard input)")->check(input_file());
  app_->add_option("--policy", policy_, "Placement policy")->check(CLI::IsMember(all_policy_names()))->capture_default_str();
  app_->add_option("--workload", workload_,
                   "fgd / fgd-cpu / fgd-lp: pods whose typical shapes are the target workload (Pod YAML/JSON, or an Alibaba pod-list CSV)")
      ->check(CLI::ExistingFile);
  app_->add_option("--filter-best", serve_.core.filter_best,
                   "Filter passes at most this many nodes for our pods, the policy's best (0: every node that fits); "
                   "with 1 kube-scheduler binds fracpack's choice and scores one node")
      ->capture_default_str();
  app_->add_flag("--unresolvable-as-failed", serve_.unresolvable_as_failed,
                 "JSON Filter: list nodes that can never fit in FailedNodes (kube-scheduler before v1.21 drops "
                 "FailedAndUnresolvableNodes, and the pod's event loses fracpack's reasons)");
  placement_.add(*app_);
  min_runtime_.add(*app_);
}

void ServeCommand::add_kube_api() {
  app_->add_option("--kube-api", serve_.kube_api,
                   "API server to follow: list and watch nodes, pods, Queues, PodGroups, PriorityClasses, and create "
                   "Bindings there (kube-scheduler's bindVerb): https://host:port, kubectl proxy's http://127.0.0.1:8001, "
                   "or in-cluster (the pod's service account)");
  app_->add_option("--kube-token", serve_.kube_token_file, "--kube-api: bearer token file "
                   "(in a pod: /var/run/secrets/kubernetes.io/serviceaccount/token)")->check(CLI::ExistingFile);
  app_->add_option("--kube-ca", serve_.kube_ca_file, "--kube-api: PEM CA file "
                   "(in a pod: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt)")->check(CLI::ExistingFile);
  app_->add_option("--retry-refused-within", retry_refused_within_,
                   "--kube-api: when the watch frees room, pods refused in the seconds before that now fit are touched "
                   "(fracpack.io/retry) so kube-scheduler retries them at once (0: off)")
      ->check(seconds_check(0, 300, true))
      ->capture_default_str();
  app_->add_option("--staleness-grace-period", staleness_grace_,
                   "--kube-api: a gang running fewer members than its PodGroup's minMember this long has its members "
                   "deleted, by the leader (KAI's stalenessGracePeriod; Go's syntax; negative: never; docs/queues.md rule 15)")
      ->capture_default_str();
}

void ServeCommand::add_reservations() {
  auto& reservation = serve_.core.reservation;
  app_->add_option("--gpu-reservation", gpu_reservation_,
                   "--kube-api: hold each shared GPU at the kubelet with a reservation pod in KAI's format (kai), "
                   "or not (off: the device plugin may give a shared GPU to a whole-GPU pod)")
      ->check(CLI::IsMember({"kai", "off"}))
      ->capture_default_str();
  app_->add_option("--reservation-namespace", reservation.ns, "Namespace of the reservation pods")->capture_default_str();
  app_->add_option("--reservation-image", reservation.image,
                   "Image of the reservation pods: KAI's resource-reservation (it reports the GPU it got)")
      ->capture_default_str();
  app_->add_option("--reservation-service-account", reservation.service_account,
                   "Service account of the reservation pods (it may patch its own pod)")
      ->capture_default_str();
  app_->add_option("--reservation-runtime-class", reservation.runtime_class,
                   "runtimeClassName of the reservation pods (nvidia where the GPU operator's runtime is not the default)");
  app_->add_option("--reservation-timeout", reservation_timeout_, "Seconds a Bind waits for a new reservation pod to report its GPU")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
}

void ServeCommand::add_leader_election() {
  auto& election = serve_.leader_election;
  app_->add_flag("--leader-elect", election.enabled,
                 "--kube-api: run several replicas; only the holder of a coordination.k8s.io Lease binds (docs/ha.md)");
  app_->add_option("--leader-elect-resource-namespace", election.lease_namespace, "Namespace of the Lease")->capture_default_str();
  app_->add_option("--leader-elect-resource-name", election.lease_name, "Name of the Lease")->capture_default_str();
  app_->add_option("--leader-elect-identity", election.identity, "This replica's holder identity (default: $POD_NAME, else the host name)");
  app_->add_option("--leader-elect-lease-duration", lease_duration_,
                   "Seconds a follower waits after the Lease last changed before taking it over")
      ->check(seconds_check(0.001, 3600, false))
      ->capture_default_str();
  app_->add_option("--leader-elect-renew-deadline", renew_deadline_,
                   "Seconds the leader keeps binding without a successful renewal (below the lease duration)")
      ->check(seconds_check(0.001, 3600, false))
      ->capture_default_str();
  app_->add_option("--leader-elect-retry-period", retry_period_, "Seconds between tries to take or renew the Lease")
      ->check(seconds_check(0.001, 3600, false))
      ->capture_default_str();
}

int ServeCommand::run() {
  if (!http_.empty()) serve_.http = http_;
  if (!health_.empty()) serve_.health = health_;
  if (!grpc_.empty()) serve_.grpc = grpc_;
  if (!cluster_.empty()) serve_.cluster_file = cluster_;
  serve_.core.policy = policy_;
  const std::map<std::string, LogLevel> levels{{"trace", LogLevel::kTrace}, {"debug", LogLevel::kDebug}, {"info", LogLevel::kInfo},
                                               {"warn", LogLevel::kWarn},   {"error", LogLevel::kError}, {"off", LogLevel::kOff}};
  serve_.log_level = levels.at(log_level_);  // IsMember checked the name
  serve_.log_format = log_format_ == "json" ? LogFormat::kJson : LogFormat::kText;
  Status flags = placement_.apply(serve_.core.placement, serve_.core.decode);
  if (flags.is_ok()) flags = min_runtime_.apply(serve_.core.min_runtime);
  if (!flags.is_ok()) {
    fmt::print(stderr, "fracpack serve: {}\n", flags.message());
    return kInputError;
  }
  serve_.core.reservation.enabled = gpu_reservation_ == "kai";
  serve_.core.reservation.timeout = std::chrono::seconds(reservation_timeout_);
  serve_.core.retry_refused_within = milliseconds_of(retry_refused_within_);
  const auto staleness = k8s::parse_go_duration(staleness_grace_);
  if (!staleness) {
    fmt::print(stderr, "fracpack serve: --staleness-grace-period {}: must be a duration such as 60s or 5m (Go's syntax; negative: never)\n",
               excerpt(staleness_grace_));
    return kInputError;
  }
  serve_.core.staleness_grace = staleness->count() < 0 ? std::chrono::seconds(-1) : std::chrono::ceil<std::chrono::seconds>(*staleness);
  serve_.leader_election.lease_duration = milliseconds_of(lease_duration_);
  serve_.leader_election.renew_deadline = milliseconds_of(renew_deadline_);
  serve_.leader_election.retry_period = milliseconds_of(retry_period_);
  if (!workload_.empty()) {
    std::vector<std::string> warnings;
    auto workload = read_workload(workload_, serve_.core.decode, &warnings);
    for (const auto& w : warnings) fmt::print(stderr, "warning: {}\n", w);
    if (!workload) {
      fmt::print(stderr, "fracpack serve: {}\n", workload.status().message());
      return kInputError;
    }
    serve_.core.workload = std::make_shared<const std::vector<TypicalPod>>(std::move(*workload));
  }
  return serve(serve_);
}

}  // namespace

std::unique_ptr<Command> add_serve(CLI::App& app) { return std::make_unique<ServeCommand>(app); }

}  // namespace fracpack::cli
