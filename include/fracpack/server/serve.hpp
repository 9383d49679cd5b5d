// `fracpack serve` and `fracpack replay`.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "fracpack/server/extender.hpp"

namespace fracpack {

/// serve --log-format: text (spdlog's "[time] [name] [level] message") or json (one object per
/// line: time, level, logger, msg, and a decision's verb, pod, node, gpus, code, duration_seconds).
enum class LogFormat { kText, kJson };
/// serve --log-level: the least severe level written. Decisions that place are info; refusals
/// (no node fits, a queue or a Bind refuses, a bad request) warn; API server and internal errors
/// are error; debug and trace add the watch's detail.
enum class LogLevel { kTrace, kDebug, kInfo, kWarn, kError, kOff };

struct ServeOptions {
  ExtenderOptions core;
  std::optional<std::string> http;          ///< "host:port" of the kube-scheduler JSON front
  std::optional<std::string> grpc;          ///< "host:port" of the gRPC front
  /// "host:port" of a plaintext listener for /healthz, /readyz and /metrics only, open to every
  /// caller (probes and Prometheus reach it when the fronts need TLS client certificates).
  std::optional<std::string> health;
  std::size_t http_max_connections = 4096;  ///< JSON front: open connections at most
  /// JSON front: from one IP address at most. kube-scheduler opens one connection per call in
  /// flight, so this must fit every Bind waiting for a reservation pod (max_waiting_binds) and its
  /// Filters besides.
  std::size_t http_max_connections_per_client = 2048;
  /// Binds waiting for a new reservation pod's report at once (each holds a caller's connection,
  /// no thread); a Bind beyond it fails at once, UNAVAILABLE, and kube-scheduler retries the pod.
  /// A burst of 2,000 fractions onto 400 new GPUs had 922 waiting at once (docs/benchmarks.md).
  std::size_t max_waiting_binds = 1536;
  LogLevel log_level = LogLevel::kInfo;
  LogFormat log_format = LogFormat::kText;
  std::optional<std::string> cluster_file;  ///< Nodes, Queues, PodGroups, PriorityClasses to apply
  std::size_t max_body = 8u << 20;          ///< bytes per request, both fronts
  bool http_gzip = false;                   ///< JSON answers gzipped when the caller accepts it (remote schedulers)
  bool unresolvable_as_failed = false;      ///< HttpOptions::unresolvable_as_failed (kube-scheduler < v1.21)
  /// The API server ("" = none: the state file and Apply are the truth; "in-cluster" = the pod's
  /// own service account). With it, the server lists and watches nodes, pods, Queues, PodGroups
  /// and PriorityClasses, and Bind (JSON and gRPC) creates the pod's Binding there (bindVerb).
  std::string kube_api;
  std::string kube_token_file;              ///< bearer token for kube_api
  std::string kube_ca_file;                 ///< PEM CA of kube_api's certificate
  std::string tls_cert;                     ///< both fronts: PEM certificate chain ("" = plaintext)
  std::string tls_key;                      ///< both fronts: PEM private key
  std::string tls_client_ca;                ///< both fronts: PEM CA; set = mutual TLS
  /// Bearer tokens (kube-apiserver's static token file format: token,user[,uid[,groups]]).
  std::string token_file;
  std::vector<std::string> allow_scheduler;  ///< callers allowed the extender verbs (none named: every authenticated caller)
  std::vector<std::string> allow_admin;      ///< callers allowed Apply, Remove, Release, Sync (none named: nobody)
  /// Listen beyond loopback with authentication off (no client CA, no token file).
  bool allow_unauthenticated = false;
  /// Several replicas, one leader (docs/ha.md): only the holder of the Lease binds; the others
  /// follow the API server and answer Filter and Prioritize. Needs kube_api.
  struct LeaderElection {
    bool enabled = false;
    std::string lease_namespace = "kube-system";
    std::string lease_name = "fracpack";
    std::string identity;                  ///< "" = $POD_NAME, else the host name
    std::chrono::milliseconds lease_duration{15'000};
    std::chrono::milliseconds renew_deadline{10'000};
    std::chrono::milliseconds retry_period{2'000};
  } leader_election;
};

/// Opens the state, applies the cluster file (its running pods only when the state holds no
/// bindings yet: on a restart the state, not the file, knows what was acknowledged), starts the
/// fronts and serves until SIGINT or SIGTERM. Returns the process exit status.
int serve(const ServeOptions& options);

struct ReplayOptions {
  std::string server;      ///< "http://" or "https://host:port" (JSON front), "grpc://host:port" or "host:port" (gRPC)
  std::string tls_ca;      ///< PEM CA that signed the server's certificate (gRPC: TLS on when set; needed for https://)
  std::string tls_cert;    ///< client certificate for mutual TLS
  std::string tls_key;     ///< client key for mutual TLS
  std::string token_file;  ///< a file holding the bearer token to send ("" = none)
  std::string pods_file;   ///< Pods to drive through Filter → Prioritize → Bind, in file order
  bool progress = true;    ///< a progress bar on stderr
};

/// Drives a running server like kube-scheduler does, one pod at a time, prints each placement and
/// the throughput. Returns the process exit status (0 even when pods do not fit).
int replay(const ReplayOptions& options);

}  // namespace fracpack
