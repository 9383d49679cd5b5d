// Prometheus text metrics for the fronts: request counts and latency histograms per verb, Filter
// refusals by reason, Bind errors from the API server, plus ledger gauges (GPUs by state, queue
// usage), the process's own (process_*) and fracpack_build_info. Names and labels:
// docs/kube-scheduler.md "Metrics". Internal to src/plugin_api/.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <vector>
#include <map>
#include <mutex>
#include <string>

#include "fracpack/server/extender.hpp"

namespace fracpack::api {

class Metrics {
 public:
  /// Seconds; the last bucket is +Inf.
  static constexpr std::array<double, 12> kBuckets{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                  0.01,   0.025,   0.05,   0.1,   0.5,    1.0};

  /// Records one request of `verb` ("filter", "bind", ...) on `front`: "http" with `code` its
  /// HTTP status ("200", "400", …), "grpc" with its gRPC status name ("OK", "InvalidArgument", …).
  void observe(const std::string& front, const std::string& verb, const std::string& code, double seconds);
  /// A Filter answer that passed no node: fracpack_unschedulable_total{reason}.
  void unschedulable(FilterAnswer::RefusedBy why);
  /// A Binding the API server did not create: fracpack_api_bind_errors_total{code} (code_name()).
  void api_bind_error(Code code);

  /// The exposition text, with `gauges` of the ledger.
  [[nodiscard]] std::string render(const LedgerGauges& gauges) const;
  /// More exposition text appended by render() (the watch's counters).
  void add_source(std::function<std::string()> source) {
    std::lock_guard lock(mu_);
    sources_.push_back(std::move(source));
  }

 private:
  struct Series {
    std::map<std::string, std::uint64_t> by_code;
    std::array<std::uint64_t, kBuckets.size() + 1> buckets{};
    double sum = 0;
    std::uint64_t count = 0;
  };
  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, Series> series_;
  std::vector<std::function<std::string()>> sources_;
  std::map<std::string, std::uint64_t> unschedulable_;   ///< reason → Filter answers
  std::map<std::string, std::uint64_t> api_bind_errors_;  ///< code → Bindings refused
};

/// The gRPC status code's name as gRPC spells it (grpc-go's codes.Code.String(): "OK",
/// "InvalidArgument", "Unavailable", …): the code label of the gRPC front.
std::string grpc_code_name(int code);

/// Times a scope and records it.
class Timer {
 public:
  Timer() : start_(std::chrono::steady_clock::now()) {}
  [[nodiscard]] double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

}  // namespace fracpack::api
