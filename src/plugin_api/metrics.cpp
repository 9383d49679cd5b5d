#include "plugin_api/metrics.hpp"

#include <fmt/format.h>

#include "fracpack/core/build_info.hpp"
#include "plugin_api/process_metrics.hpp"

namespace fracpack::api {
namespace {

/// fracpack_build_info{version, revision} 1: which binary answers (the Prometheus idiom).
std::string build_info_text() {
  const BuildInfo& build = build_info();
  return fmt::format("# HELP fracpack_build_info The running binary: version and git commit (always 1).\n"
                     "# TYPE fracpack_build_info gauge\n"
                     "fracpack_build_info{{version=\"{}\",revision=\"{}\"}} 1\n",
                     build.version, build.revision);
}

/// A Prometheus label value from an object someone else wrote: backslash, double quote and newline
/// escaped (the exposition format), at most 64 characters.
std::string label_value(const std::string& text) {
  std::string out;
  for (char c : text.substr(0, 64)) {
    if (c == '\\' || c == '"') out += '\\';
    out += c == '\n' ? std::string("\\n") : std::string(1, c);
  }
  return out;
}

}  // namespace

std::string grpc_code_name(int code) {
  static constexpr std::array<const char*, 17> kNames{
      "OK",           "Canceled",          "Unknown",            "InvalidArgument", "DeadlineExceeded", "NotFound",
      "AlreadyExists", "PermissionDenied", "ResourceExhausted",  "FailedPrecondition", "Aborted",       "OutOfRange",
      "Unimplemented", "Internal",         "Unavailable",        "DataLoss",        "Unauthenticated"};
  return code >= 0 && code < static_cast<int>(kNames.size()) ? kNames[static_cast<std::size_t>(code)] : fmt::format("Code({})", code);
}

void Metrics::unschedulable(FilterAnswer::RefusedBy why) {
  if (why == FilterAnswer::RefusedBy::kNothing) return;
  std::lock_guard lock(mu_);
  ++unschedulable_[std::string(refused_by_name(why))];
}

void Metrics::api_bind_error(Code code) {
  std::lock_guard lock(mu_);
  ++api_bind_errors_[std::string(code_name(code))];
}

void Metrics::observe(const std::string& front, const std::string& verb, const std::string& code, double seconds) {
  std::lock_guard lock(mu_);
  Series& s = series_[{front, verb}];
  ++s.by_code[code];
  std::size_t i = 0;
  while (i < kBuckets.size() && seconds > kBuckets[i]) ++i;
  ++s.buckets[i];
  s.sum += seconds;
  ++s.count;
}

std::string Metrics::render(const LedgerGauges& gauges) const {
  const std::string process = process_metrics_text();  // reads /proc: not while requests wait for mu_
  std::string out;
  out += "# HELP fracpack_requests_total Extender requests by front, verb and result code (http: the HTTP status; grpc: the "
         "gRPC status name).\n";
  out += "# TYPE fracpack_requests_total counter\n";
  std::lock_guard lock(mu_);
  for (const auto& [key, s] : series_) {
    for (const auto& [code, n] : s.by_code) {
      out += fmt::format("fracpack_requests_total{{front=\"{}\",verb=\"{}\",code=\"{}\"}} {}\n", key.first, key.second, code, n);
    }
  }
  out += "# HELP fracpack_request_duration_seconds Extender request latency in the server, by front and verb.\n";
  out += "# TYPE fracpack_request_duration_seconds histogram\n";
  for (const auto& [key, s] : series_) {
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < kBuckets.size(); ++i) {
      cumulative += s.buckets[i];
      out += fmt::format("fracpack_request_duration_seconds_bucket{{front=\"{}\",verb=\"{}\",le=\"{}\"}} {}\n", key.first, key.second,
                         kBuckets[i], cumulative);
    }
    cumulative += s.buckets.back();
    out += fmt::format("fracpack_request_duration_seconds_bucket{{front=\"{}\",verb=\"{}\",le=\"+Inf\"}} {}\n", key.first, key.second,
                       cumulative);
    out += fmt::format("fracpack_request_duration_seconds_sum{{front=\"{}\",verb=\"{}\"}} {}\n", key.first, key.second, s.sum);
    out += fmt::format("fracpack_request_duration_seconds_count{{front=\"{}\",verb=\"{}\"}} {}\n", key.first, key.second, s.count);
  }
  out += "# HELP fracpack_gpus GPUs by state.\n# TYPE fracpack_gpus gauge\n";
  for (const auto& [state, n] : gauges.gpus_by_state) out += fmt::format("fracpack_gpus{{state=\"{}\"}} {}\n", state, n);
  out += "# HELP fracpack_pods_bound Pods holding resources in the ledger.\n# TYPE fracpack_pods_bound gauge\n";
  out += fmt::format("fracpack_pods_bound {}\n", gauges.pods_bound);
  out += "# HELP fracpack_pods_pending Pending pods of ours, counted in their queues' demand.\n# TYPE fracpack_pods_pending gauge\n";
  out += fmt::format("fracpack_pods_pending {}\n", gauges.pods_pending);
  out += "# HELP fracpack_pods_conflicting Running pods the ledger cannot hold as they claim (GPUs fenced).\n"
         "# TYPE fracpack_pods_conflicting gauge\n";
  out += fmt::format("fracpack_pods_conflicting {}\n", gauges.pods_conflicting);
  out += "# HELP fracpack_pods_claim_edited Running pods whose GPU claim was edited after it was recorded: held as recorded, the "
         "edit's GPUs fenced.\n# TYPE fracpack_pods_claim_edited gauge\n";
  out += fmt::format("fracpack_pods_claim_edited {}\n", gauges.pods_claim_edited);
  out += "# HELP fracpack_pod_claim_edits_total Edits of a running pod's GPU claim refused, by who wrote them (managedFields).\n"
         "# TYPE fracpack_pod_claim_edits_total counter\n";
  for (const auto& [writer, n] : gauges.claim_edits_by_writer) {
    out += fmt::format("fracpack_pod_claim_edits_total{{writer=\"{}\"}} {}\n", label_value(writer), n);
  }
  out += "# HELP fracpack_binds_assumed Binds acknowledged, not yet seen in the API server.\n# TYPE fracpack_binds_assumed gauge\n";
  out += fmt::format("fracpack_binds_assumed {}\n", gauges.binds_assumed);
  out += "# HELP fracpack_synced 1 once the first list of every watched kind is applied.\n# TYPE fracpack_synced gauge\n";
  out += fmt::format("fracpack_synced {}\n", gauges.synced ? 1 : 0);
  out += "# HELP fracpack_queue_gpus GPUs allocated to, and the fair share of, each queue.\n";
  out += "# TYPE fracpack_queue_gpus gauge\n";
  for (const auto& q : gauges.queues) {
    out += fmt::format("fracpack_queue_gpus{{queue=\"{}\",kind=\"allocated\"}} {}\n", q.name, q.gpu_allocated);
    out += fmt::format("fracpack_queue_gpus{{queue=\"{}\",kind=\"fair_share\"}} {}\n", q.name, q.gpu_fair_share);
  }
  out += "# HELP fracpack_unschedulable_total Filter answers that passed no node, by what refused: syncing, bound_elsewhere, "
         "gang_waiting, gang, queue, nodes (each node's own verdict).\n# TYPE fracpack_unschedulable_total counter\n";
  for (const auto& [reason, n] : unschedulable_) out += fmt::format("fracpack_unschedulable_total{{reason=\"{}\"}} {}\n", reason, n);
  out += "# HELP fracpack_api_bind_errors_total Bindings the API server did not create, by error.\n"
         "# TYPE fracpack_api_bind_errors_total counter\n";
  for (const auto& [code, n] : api_bind_errors_) out += fmt::format("fracpack_api_bind_errors_total{{code=\"{}\"}} {}\n", code, n);
  out += build_info_text();
  out += process;
  for (const auto& source : sources_) out += source();
  return out;
}

}  // namespace fracpack::api
