// fracpack: the command-line entry point. Thin: parse flags, call the library, print.
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "fracpack/build_info.hpp"
#include "fracpack/density_job.hpp"
#include "fracpack/fragmentation.hpp"
#include "fracpack/k8s/object_stream.hpp"
#include "fracpack/place_job.hpp"
#include "fracpack/policy.hpp"
#include "fracpack/quantity.hpp"
#include "fracpack/quota_job.hpp"
#include "fracpack/serve.hpp"
#include "fracpack/workload_file.hpp"

namespace {

constexpr int kInputError = 2;

int run_place_command(const std::vector<std::string>& files, const fracpack::PlaceOptions& options,
                      const std::string& format) {
  std::vector<fracpack::k8s::InputObject> objects;
  for (const auto& file : files) {
    auto read = fracpack::k8s::read_input_file(file);
    if (!read) {
      fmt::print(stderr, "fracpack place: {}\n", read.status().message());
      return kInputError;
    }
    objects.insert(objects.end(), read->begin(), read->end());
  }
  auto report = fracpack::run_place(objects, options);
  if (!report) {
    fmt::print(stderr, "fracpack place: {}\n", report.status().message());
    return kInputError;
  }
  if (format == "table") {
    fmt::print("{}", fracpack::report_table(*report));
  } else {
    fmt::print("{}\n", fracpack::report_json_text(*report));
  }
  return 0;
}

}  // namespace

int run(int argc, char** argv);

namespace {

/// A CLI11 check of a number of seconds in [low, high]; `zero_off`: 0 is allowed and means off.
std::function<std::string(const std::string&)> seconds_check(double low, double high, bool zero_off) {
  return [=](const std::string& text) -> std::string {
    double v = 0;
    try {
      std::size_t used = 0;
      v = std::stod(text, &used);
      if (used != text.size()) return "not a number of seconds: " + text;
    } catch (const std::exception&) {
      return "not a number of seconds: " + text;
    }
    if (zero_off && v == 0) return "";
    if (zero_off && v > 0 && v < 0.001) return "below 1 ms, which would turn it off: give 0 for that";
    if (!(v >= std::max(low, 0.001) && v <= high)) return fmt::format("must be {}{} to {} seconds: {}", zero_off ? "0 (off) or " : "", std::max(low, 0.001), high, text);
    return "";
  };
}

std::chrono::milliseconds milliseconds_of(double seconds) { return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000.0 + 0.5)); }

}  // namespace

int main(int argc, char** argv) {
  // Every bad input has its own message; this is the net under a bug of ours, never a crash.
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "fracpack: internal error: {}\n", e.what());
    return 3;
  }
}

int run(int argc, char** argv) {
  CLI::App app{"fracpack: fractional-GPU placement, compatible with NVIDIA KAI Scheduler"};
  app.require_subcommand(1);
  app.set_version_flag("--version", fracpack::version_line(), "Print the version, git commit and build date, and exit");

  auto* place = app.add_subcommand("place", "Place pods on a cluster and explain what does not fit");
  std::string cluster;
  std::string pods;
  std::string format = "json";
  std::string sharing_mode = "NvFractions";
  std::string reserved = "0";
  std::vector<std::string> rdma;
  fracpack::PlaceOptions options;
  place->footer(
      "--cluster and --pods are read in that order and merged: Nodes, Pods, PriorityClasses and PodGroups may sit "
      "in either. Pods with spec.nodeName are loaded first; every other pod is placed in input order.");
  place->add_option("--cluster", cluster, "Nodes (and running pods) as kubectl get -o yaml|json prints them")
      ->required()
      ->check(CLI::ExistingFile);
  place->add_option("--pods", pods, "Pods to place, YAML or JSON")->required()->check(CLI::ExistingFile);
  std::vector<std::string> names;
  for (auto n : fracpack::policy_names()) names.emplace_back(n);
  for (auto n : fracpack::study_policy_names()) names.emplace_back(n);
  place->add_option("--policy", options.policy, "Placement policy")->check(CLI::IsMember(names))->capture_default_str();
  place->add_option("--format", format, "Output format")->check(CLI::IsMember({"json", "table"}))->capture_default_str();
  place->add_option("--sharing-mode", sharing_mode, "KAI gpuSharingMode")
      ->check(CLI::IsMember({"NvFractions", "NonMemoryEnforced"}))
      ->capture_default_str();
  place->add_option("--reserved-gpu-memory", reserved,
                    "Memory kept free on every GPU (KAI issue 2212): a Kubernetes quantity such as 2Gi, or MiB")
      ->capture_default_str();
  place->add_option("--rdma-resource", rdma,
                    "Resource names that mark InfiniBand pods; a name ending in / is a prefix "
                    "(default: rdma/ nvidia.com/hostdev)");
  place->add_option("--explain-nodes", options.explain_nodes,
                    "Nodes listed with their own reasons for each pod that fits nowhere (all are counted)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  place->add_option("--network-leaf-label", options.placement.network_leaf_label,
                    "Node label naming the network leaf for InfiniBand gangs")
      ->capture_default_str();

  auto* policies = app.add_subcommand("policies", "List the placement policies");

  auto* serve_cmd = app.add_subcommand("serve", "Run the scheduler extender: gRPC API and kube-scheduler HTTP/JSON front");
  fracpack::ServeOptions serve;
  serve.core.state_path = "fracpack-state.db";  // durable by default; --state :memory: for none
  std::string serve_http;
  std::string serve_grpc;
  std::string serve_cluster;
  std::string serve_policy = "pack";
  serve_cmd->add_option("--http", serve_http, "host:port for kube-scheduler's HTTP extender calls");
  serve_cmd->add_option("--grpc", serve_grpc, "host:port for the gRPC API (fracpack.v1.Extender, .Cluster)");
  serve_cmd->add_option("--tls-cert", serve.tls_cert, "Both fronts: PEM certificate chain (gRPC over TLS, HTTPS)")->check(CLI::ExistingFile);
  serve_cmd->add_option("--tls-key", serve.tls_key, "Both fronts: PEM private key of --tls-cert")->check(CLI::ExistingFile);
  serve_cmd->add_option("--tls-client-ca", serve.tls_client_ca,
                        "Both fronts: PEM CA of client certificates (mutual TLS: callers must present one it signed)")
      ->check(CLI::ExistingFile);
  serve_cmd->add_option("--token-file", serve.token_file,
                        "Both fronts: bearer tokens callers may authenticate with (kube-apiserver's static token file "
                        "format: token,user[,uid[,groups]] per line)")
      ->check(CLI::ExistingFile);
  serve_cmd->add_option("--allow-scheduler", serve.allow_scheduler,
                        "Caller (client certificate CN or token user) allowed Filter, Prioritize, Bind, Preempt; repeat for "
                        "several (none named: every authenticated caller)");
  serve_cmd->add_option("--allow-admin", serve.allow_admin,
                        "Caller allowed Apply, Remove, Release, Sync (off for everyone with --kube-api); repeat for several");
  serve_cmd->add_flag("--allow-unauthenticated", serve.allow_unauthenticated,
                      "Listen beyond loopback with neither --tls-client-ca nor --token-file: every caller may do everything");
  std::string serve_health;
  serve_cmd->add_option("--health", serve_health,
                        "host:port of a plaintext listener for GET /healthz, /readyz and /metrics only (kubelet probes, "
                        "Prometheus), open to every caller");
  serve_cmd->add_option("--http-max-connections", serve.http_max_connections,
                        "JSON front: open connections at most (more are closed at accept); slow clients hold a connection, "
                        "never a thread")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 20))
      ->capture_default_str();
  serve_cmd->add_option("--http-max-connections-per-client", serve.http_max_connections_per_client,
                        "JSON front: open connections from one IP address at most, so that one caller cannot take them all")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 20))
      ->capture_default_str();
  serve_cmd->add_option("--state", serve.core.state_path, "SQLite state file (:memory: for none)")->capture_default_str();
  serve_cmd->add_option("--cluster", serve_cluster, "Nodes, Queues, PodGroups (and running pods) to load")
      ->check(CLI::ExistingFile);
  serve_cmd->add_option("--policy", serve_policy, "Placement policy")->check(CLI::IsMember(names))->capture_default_str();
  std::string serve_workload;
  serve_cmd->add_option("--workload", serve_workload,
                        "fgd / fgd-cpu / fgd-lp: pods whose typical shapes are the target workload (Pod YAML/JSON, or an Alibaba pod-list CSV)")
      ->check(CLI::ExistingFile);
  serve_cmd->add_flag("--http-gzip", serve.http_gzip,
                      "JSON front: gzip answers for callers that accept it (kube-scheduler does); for a scheduler on a slow network. "
                      "Off: a Filter answer for 5,000 nodes costs ~1 ms of CPU to compress");
  serve_cmd->add_option("--kube-api", serve.kube_api,
                        "API server to follow: list and watch nodes, pods, Queues, PodGroups, PriorityClasses, and create "
                        "Bindings there (kube-scheduler's bindVerb): https://host:port, kubectl proxy's http://127.0.0.1:8001, "
                        "or in-cluster (the pod's service account)");
  serve.core.filter_best = 1;
  serve_cmd->add_option("--filter-best", serve.core.filter_best,
                        "Filter passes at most this many nodes for our pods, the policy's best (0: every node that fits); "
                        "with 1 kube-scheduler binds fracpack's choice and scores one node")
      ->capture_default_str();
  serve_cmd->add_flag("--unresolvable-as-failed", serve.unresolvable_as_failed,
                      "JSON Filter: list nodes that can never fit in FailedNodes (kube-scheduler before v1.21 drops "
                      "FailedAndUnresolvableNodes, and the pod's event loses fracpack's reasons)");
  std::vector<std::string> scheduler_names;
  serve_cmd->add_option("--scheduler-name", scheduler_names,
                        "spec.schedulerName of the pods that are ours (counted in queues); repeat for several "
                        "(default: kai-scheduler; pods without one are ours too)");
  serve_cmd->add_option("--kube-token", serve.kube_token_file, "--kube-api: bearer token file "
                        "(in a pod: /var/run/secrets/kubernetes.io/serviceaccount/token)")->check(CLI::ExistingFile);
  serve_cmd->add_option("--kube-ca", serve.kube_ca_file, "--kube-api: PEM CA file "
                        "(in a pod: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt)")->check(CLI::ExistingFile);
  std::string gpu_reservation = "kai";
  serve_cmd->add_option("--gpu-reservation", gpu_reservation,
                        "--kube-api: hold each shared GPU at the kubelet with a reservation pod in KAI's format (kai), "
                        "or not (off: the device plugin may give a shared GPU to a whole-GPU pod)")
      ->check(CLI::IsMember({"kai", "off"}))
      ->capture_default_str();
  serve_cmd->add_option("--reservation-namespace", serve.core.reservation.ns, "Namespace of the reservation pods")
      ->capture_default_str();
  serve_cmd->add_option("--reservation-image", serve.core.reservation.image,
                        "Image of the reservation pods: KAI's resource-reservation (it reports the GPU it got)")
      ->capture_default_str();
  serve_cmd->add_option("--reservation-service-account", serve.core.reservation.service_account,
                        "Service account of the reservation pods (it may patch its own pod)")
      ->capture_default_str();
  serve_cmd->add_option("--reservation-runtime-class", serve.core.reservation.runtime_class,
                        "runtimeClassName of the reservation pods (nvidia where the GPU operator's runtime is not the default)");
  std::int64_t reservation_timeout = serve.core.reservation.timeout.count();
  serve_cmd->add_option("--reservation-timeout", reservation_timeout,
                        "Seconds a Bind waits for a new reservation pod to report its GPU")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  double retry_refused_within = static_cast<double>(serve.core.retry_refused_within.count()) / 1000.0;
  serve_cmd->add_option("--retry-refused-within", retry_refused_within,
                        "--kube-api: when the watch frees room, pods refused in the seconds before that now fit are touched "
                        "(fracpack.io/retry) so kube-scheduler retries them at once (0: off)")
      ->check(seconds_check(0, 300, true))
      ->capture_default_str();
  auto& election = serve.leader_election;
  serve_cmd->add_flag("--leader-elect", election.enabled,
                      "--kube-api: run several replicas; only the holder of a coordination.k8s.io Lease binds (docs/ha.md)");
  serve_cmd->add_option("--leader-elect-resource-namespace", election.lease_namespace, "Namespace of the Lease")->capture_default_str();
  serve_cmd->add_option("--leader-elect-resource-name", election.lease_name, "Name of the Lease")->capture_default_str();
  serve_cmd->add_option("--leader-elect-identity", election.identity, "This replica's holder identity (default: $POD_NAME, else the host name)");
  double lease_duration = 15, renew_deadline = 10, retry_period = 2;
  serve_cmd->add_option("--leader-elect-lease-duration", lease_duration,
                        "Seconds a follower waits after the Lease last changed before taking it over")
      ->check(seconds_check(0.001, 3600, false))
      ->capture_default_str();
  serve_cmd->add_option("--leader-elect-renew-deadline", renew_deadline,
                        "Seconds the leader keeps binding without a successful renewal (below the lease duration)")
      ->check(seconds_check(0.001, 3600, false))
      ->capture_default_str();
  serve_cmd->add_option("--leader-elect-retry-period", retry_period, "Seconds between tries to take or renew the Lease")
      ->check(seconds_check(0.001, 3600, false))
      ->capture_default_str();
  serve_cmd->add_flag("--fsync", serve.core.fsync_every_bind, "fsync every bind (survive power loss, not just crashes)");
  serve_cmd->add_option("--max-body", serve.max_body, "Largest request (HTTP body or gRPC message) in bytes")
      ->check(CLI::Range(std::size_t{1} << 10, std::size_t{1} << 30))
      ->capture_default_str();

  auto* replay_cmd = app.add_subcommand("replay", "Drive a running server through Filter → Prioritize → Bind");
  fracpack::ReplayOptions replay;
  replay_cmd->add_option("--server", replay.server, "grpc://host:port (or host:port) of --grpc, http://host:port of --http")
      ->required();
  replay_cmd->add_option("--tls-ca", replay.tls_ca, "PEM CA that signed the server certificate (grpc:// with TLS, https://)")
      ->check(CLI::ExistingFile);
  replay_cmd->add_option("--token-file", replay.token_file, "File holding the bearer token to send (serve --token-file)")
      ->check(CLI::ExistingFile);
  replay_cmd->add_option("--tls-cert", replay.tls_cert, "Client certificate (mutual TLS)")->check(CLI::ExistingFile);
  replay_cmd->add_option("--tls-key", replay.tls_key, "Client key (mutual TLS)")->check(CLI::ExistingFile);
  replay_cmd->add_option("--pods", replay.pods_file, "Pods to replay, YAML or JSON")->required()->check(CLI::ExistingFile);
  replay_cmd->add_flag("!--no-progress", replay.progress, "No progress bar");

  auto* bench_cmd = app.add_subcommand("bench", "Benchmarks on real traces");
  bench_cmd->require_subcommand(1);
  auto* density_cmd = bench_cmd->add_subcommand(
      "density", "Packing density on the Alibaba GPU trace (the FGD study's protocol): policies × seeds");
  fracpack::DensityJobOptions density;
  density_cmd->add_option("--nodes", density.nodes_csv, "Node list CSV (openb_node_list_gpu_node.csv)")
      ->required()
      ->check(CLI::ExistingFile);
  density_cmd->add_option("--pods", density.pods_csv, "Pod list CSV (openb_pod_list_*.csv)")->required()->check(CLI::ExistingFile);
  density_cmd->add_option("--policy", density.policies, "Policies, comma-separated (the study's labels work too)")
      ->capture_default_str();
  density_cmd->add_option("--tune", density.tune, "Inflation: arrive until demand is this × GPU capacity")->capture_default_str();
  density_cmd->add_option("--seeds", density.seeds, "Seeds: a range 42-51 and/or a list 1,2,3")->capture_default_str();
  density_cmd->add_option("--out", density.out_dir, "Directory for allo.csv, frag_ratio.csv, summary.md, allocation.svg")
      ->capture_default_str();
  density_cmd->add_option("--published", density.published, "The study's allo.csv: print ours next to theirs")
      ->check(CLI::ExistingFile);
  density_cmd->add_option("--jobs", density.jobs, "Runs at once (default: one per core)")->check(CLI::Range(1u, 256u));
  density_cmd->add_flag("!--no-progress", density.progress, "No progress bar");

  auto* quota_cmd = app.add_subcommand("quota", "Queue quotas over time: replay a workload through KAI queues, and tune quotas");
  quota_cmd->require_subcommand(1);
  // The inputs both quota commands read; --cluster and --workload are the names for them.
  auto add_quota_inputs = [](CLI::App* cmd, fracpack::QuotaInputFiles& files) {
    cmd->add_option("--nodes,--cluster", files.nodes, "Node list CSV, or Node objects (YAML/JSON)")->required()->check(CLI::ExistingFile);
    cmd->add_option("--queues", files.queues, "KAI Queue objects (YAML/JSON)")->required()->check(CLI::ExistingFile);
    cmd->add_option("--pods,--workload", files.pods,
                    "Pod list CSV with creation/deletion times, or Pod objects (creationTimestamp, queue label, "
                    "annotation replay.fracpack.io/run-seconds)")
        ->required()
        ->check(CLI::ExistingFile);
    cmd->add_option("--rules", files.rules, "Queue rule file, with a pod-list CSV (examples/quota-rules.yaml)")->check(CLI::ExistingFile);
    cmd->add_option("--node-fraction", files.node_fraction,
                    "Keep this fraction of the nodes, spread evenly over the list (a smaller cluster with the same GPU models)")
        ->check(CLI::Validator(
            [](std::string& text) -> std::string {
              char* end = nullptr;
              const double f = std::strtod(text.c_str(), &end);
              if (end == text.c_str() || *end != '\0' || !(f > 0 && f <= 1)) return "must be a number in (0, 1], got " + text;
              return "";
            },
            "(0, 1]"))
        ->capture_default_str();
  };
  auto* quota_replay = quota_cmd->add_subcommand("replay", "Replay the trace's pods over time through queues and report per queue");
  fracpack::QuotaReplayOptions qr;
  add_quota_inputs(quota_replay, qr);
  quota_replay->add_option("--period", qr.period, "Seconds between scheduling cycles")->check(CLI::Range(1, 86400))->capture_default_str();
  quota_replay->add_option("--policy", qr.policy, "Placement policy (fgd, fgd-cpu, fgd-lp: the workload's typical pods are the target)")
      ->check(CLI::IsMember(names))
      ->capture_default_str();
  quota_replay->add_option("--out", qr.out, "Directory for queues.csv, timeline.csv and the SVG timelines");

  auto* quota_tune = quota_cmd->add_subcommand("tune", "Search GPU quotas and over-quota weights per queue for an objective");
  fracpack::QuotaTuneOptions qt;
  add_quota_inputs(quota_tune, qt);
  quota_tune->add_option("--objective", qt.objective,
                         "What to achieve, e.g. \"p95 pending of inference <= 60s, then maximise allocation\" or "
                         "\"share within 10% of weight\" (see docs/quota-tuning.md)")
      ->required();
  quota_tune->add_option("--period", qt.period, "Seconds between scheduling cycles")->check(CLI::Range(1, 86400))->capture_default_str();
  quota_tune->add_option("--policy", qt.policy, "Placement policy (fgd, fgd-cpu, fgd-lp: the workload's typical pods are the target)")
      ->check(CLI::IsMember(names))
      ->capture_default_str();
  quota_tune->add_option("--budget", qt.budget_seconds, "Wall-time budget in seconds, checked between rounds (0: none)")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            char* end = nullptr;
            const double b = std::strtod(text.c_str(), &end);
            if (end == text.c_str() || *end != '\0' || !(b >= 0 && b <= 7.0 * 86400)) return "must be seconds in 0…604800, got " + text;
            return "";
          },
          "SECONDS"))
      ->capture_default_str();
  quota_tune->add_option("--max-rounds", qt.max_rounds, "Stop after this many search rounds (0: until converged); same answer on every machine")
      ->check(CLI::Range(std::size_t{0}, std::size_t{1'000'000}))
      ->capture_default_str();
  quota_tune->add_option("--jobs", qt.jobs, "Candidates replayed at once (default: one per core)")->check(CLI::Range(1u, 256u));
  quota_tune->add_option("--top", qt.top, "Candidates shown in the table")->check(CLI::Range(std::size_t{1}, std::size_t{1000}))->capture_default_str();
  bool keep_cpu_memory = false;
  quota_tune->add_flag("--keep-cpu-memory", keep_cpu_memory, "Leave finite CPU/memory quotas as they are (default: scale with the GPU quota)");
  quota_tune->add_flag("--oversubscribe", qt.oversubscribe, "Allow GPU quotas that add up to more than the cluster (KAI allows it; they are then not all guaranteed)");
  quota_tune->add_option("--out", qt.out, "Directory for queues.yaml, candidates.csv and the recommendation's replay (recommended/)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help, or the error and a hint
    return code == 0 ? 0 : kInputError;
  }

  if (serve_cmd->parsed()) {
    if (!serve_http.empty()) serve.http = serve_http;
    if (!serve_health.empty()) serve.health = serve_health;
    if (!serve_grpc.empty()) serve.grpc = serve_grpc;
    if (!serve_cluster.empty()) serve.cluster_file = serve_cluster;
    serve.core.policy = serve_policy;
    if (!scheduler_names.empty()) serve.core.decode.scheduler_names = scheduler_names;
    serve.core.reservation.enabled = gpu_reservation == "kai";
    serve.core.reservation.timeout = std::chrono::seconds(reservation_timeout);
    serve.core.retry_refused_within = milliseconds_of(retry_refused_within);
    election.lease_duration = milliseconds_of(lease_duration);
    election.renew_deadline = milliseconds_of(renew_deadline);
    election.retry_period = milliseconds_of(retry_period);
    if (!serve_workload.empty()) {
      auto workload = fracpack::read_workload(serve_workload);
      if (!workload) {
        fmt::print(stderr, "fracpack serve: {}\n", workload.status().message());
        return kInputError;
      }
      serve.core.workload = std::make_shared<const std::vector<fracpack::TypicalPod>>(std::move(*workload));
    }
    return fracpack::serve(serve);
  }
  if (replay_cmd->parsed()) return fracpack::replay(replay);
  if (density_cmd->parsed()) return fracpack::run_density_job(density);
  if (quota_replay->parsed()) return fracpack::run_quota_replay(qr);
  if (quota_tune->parsed()) {
    qt.scale_cpu_memory = !keep_cpu_memory;
    return fracpack::run_quota_tune(qt);
  }
  if (policies->parsed()) {
    for (auto n : fracpack::policy_names()) fmt::print("{:<15} {}\n", n, (*fracpack::make_policy(n))->summary());
    fmt::print("\nThe FGD study's policies and fgd-cpu and fgd-lp, ours (`fracpack bench density`; also `place`, and\n"
               "`serve` with --workload FILE, which fgd, fgd-cpu and fgd-lp need for their target workload):\n");
    fracpack::PolicyOptions study;
    study.workload = std::make_shared<const std::vector<fracpack::TypicalPod>>(1, fracpack::TypicalPod{});
    for (auto n : fracpack::study_policy_names()) fmt::print("{:<15} {}\n", n, (*fracpack::make_policy(n, study))->summary());
    return 0;
  }
  options.placement.sharing_mode = sharing_mode == "NonMemoryEnforced" ? fracpack::GpuSharingMode::kNonMemoryEnforced
                                                                       : fracpack::GpuSharingMode::kNvFractions;
  auto reserve = fracpack::parse_mib_or_quantity(reserved, "--reserved-gpu-memory");
  if (!reserve) {
    fmt::print(stderr, "fracpack place: {}\n", reserve.status().message());
    return kInputError;
  }
  options.placement.reserved_per_gpu = *reserve;
  if (!rdma.empty()) options.decode.rdma_resources = rdma;
  return run_place_command({cluster, pods}, options, format);
}
