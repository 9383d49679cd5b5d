#include "fracpack/quota_job.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <cmath>
#include <fstream>
#include <functional>

#include <fmt/format.h>

#include "fracpack/k8s/decode.hpp"
#include "fracpack/k8s/object_stream.hpp"
#include "fracpack/queues/decode_queue.hpp"
#include "plot/line_plot.hpp"

namespace fracpack {
namespace {

/// Nearest-rank percentile of `v` (seconds); -1 for none.
std::int64_t percentile(std::vector<std::int64_t> v, double p) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<std::size_t>(std::max(1.0, std::ceil(p * static_cast<double>(v.size()))));
  return v[std::min(rank, v.size()) - 1];
}

std::string seconds(std::int64_t s) { return s < 0 ? "—" : fmt::format("{}", s); }

Result<std::vector<NodeSpec>> read_nodes_any(const std::string& path) {
  std::vector<NodeSpec> out;
  if (std::filesystem::path(path).extension() == ".csv") {
    auto rows = trace::read_nodes(path);
    if (!rows) return rows.status();
    for (const auto& r : *rows) out.push_back(trace::to_node_spec(r));
    return out;
  }
  auto objects = k8s::read_objects_file(path);
  if (!objects) return objects.status();
  for (const auto& o : *objects) {
    if (k8s::kind_of(o) != "Node") continue;
    auto n = k8s::decode_node(o, DecodeConfig{});
    if (!n) return invalid_argument("--nodes {}: {}", path, n.status().message());
    out.push_back(std::move(*n));
  }
  if (out.empty()) return invalid_argument("--nodes {}: no Node objects", path);
  return out;
}

Result<std::vector<queues::QueueSpec>> read_queues(const std::string& path) {
  auto objects = k8s::read_objects_file(path);
  if (!objects) return objects.status();
  std::vector<queues::QueueSpec> out;
  for (const auto& o : *objects) {
    if (k8s::kind_of(o) != "Queue") continue;
    auto q = queues::decode_queue(o);
    if (!q) return invalid_argument("--queues {}: {}", path, q.status().message());
    out.push_back(std::move(*q));
  }
  if (out.empty()) return invalid_argument("--queues {}: no Queue objects", path);
  return out;
}

/// Step-shaped (x, y) points of one column of the timeline: values hold until the next cycle.
std::vector<std::pair<double, double>> steps(const quota::ReplayReport& r, const std::function<double(const quota::TimelinePoint&)>& y) {
  std::vector<std::pair<double, double>> out;
  for (std::size_t i = 0; i < r.timeline.size(); ++i) {
    const double x = static_cast<double>(r.timeline[i].time - r.start) / 86400.0;
    if (i > 0) out.emplace_back(x, y(r.timeline[i - 1]));
    out.emplace_back(x, y(r.timeline[i]));
  }
  return out;
}

Status write_timeline(const std::filesystem::path& dir, const quota::ReplayReport& r) {
  std::ofstream csv(dir / "timeline.csv");
  csv << "time_s,cluster_allocated_pct,fragmentation_pct";
  for (const auto& q : r.queues) csv << fmt::format(",{0}_allocated_gpus,{0}_fair_share_gpus", q.queue);
  csv << "\n";
  for (const auto& p : r.timeline) {
    csv << fmt::format("{},{:.3f},{:.3f}", p.time, p.cluster_allocated_pct, p.fragmentation_pct);
    for (std::size_t q = 0; q < p.allocated.size(); ++q) csv << fmt::format(",{:.3f},{:.3f}", p.allocated[q], p.fair_share[q]);
    csv << "\n";
  }
  const double days = std::max(1e-9, static_cast<double>(r.end - r.start) / 86400.0);
  {
    std::ofstream svg(dir / "cluster.svg");
    svg << plot::line_plot_svg(
        plot::Axes{"Cluster: GPU allocated and fragmentation of idle GPU over time", "days", "%", days, 100, false},
        {{"GPU allocated", steps(r, [](const quota::TimelinePoint& p) { return p.cluster_allocated_pct; }), false},
         {"fragmentation of idle GPU", steps(r, [](const quota::TimelinePoint& p) { return p.fragmentation_pct; }), false}});
    if (!svg) return invalid_argument("--out {}: cannot write cluster.svg", dir.string());
  }
  for (std::size_t q = 0; q < r.queues.size(); ++q) {
    double top = std::isnan(r.deserved[q]) ? 0 : r.deserved[q];
    for (const auto& p : r.timeline) top = std::max({top, p.allocated[q], p.fair_share[q]});
    std::vector<plot::Series> lines{
        {"allocated", steps(r, [q](const quota::TimelinePoint& p) { return p.allocated[q]; }), false},
        {"fair share", steps(r, [q](const quota::TimelinePoint& p) { return p.fair_share[q]; }), false},
    };
    if (!std::isnan(r.deserved[q])) lines.push_back({"deserved (quota)", {{0, r.deserved[q]}, {days, r.deserved[q]}}, true});
    std::ofstream svg(dir / fmt::format("queue-{}.svg", r.queues[q].queue));
    svg << plot::line_plot_svg(plot::Axes{fmt::format("Queue {}: GPUs over time", r.queues[q].queue), "days", "GPUs", days,
                                          top > 0 ? top * 1.1 : 1, false},
                               lines);
    if (!svg) return invalid_argument("--out {}: cannot write queue-{}.svg", dir.string(), r.queues[q].queue);
  }
  if (!csv) return invalid_argument("--out {}: cannot write timeline.csv", dir.string());
  return {};
}

}  // namespace

std::vector<std::string> quota_warnings(const std::vector<NodeSpec>& nodes, const std::vector<queues::QueueSpec>& queue_specs) {
  std::int64_t cluster_gpus = 0;
  for (const auto& n : nodes) cluster_gpus += static_cast<std::int64_t>(n.gpus.size());
  std::int64_t quota_milli = 0;
  for (const auto& q : queue_specs) {
    if (q.parent.empty() && q.resource(queues::Resource::kGpu).quota > 0) quota_milli += q.resource(queues::Resource::kGpu).quota;
  }
  std::vector<std::string> out;
  if (quota_milli > cluster_gpus * 1000) {  // allowed (KAI allows it), but rarely meant
    out.push_back(fmt::format("the top-level queues' GPU quotas sum to {} GPUs, more than the cluster's {}; "
                              "not every queue can get its quota at once",
                              queues::format_amount(queues::Resource::kGpu, quota_milli), cluster_gpus));
  }
  return out;
}

std::string replay_table(const quota::ReplayReport& report) {
  std::string out = fmt::format(
      "Replayed {:.1f} days ({} events, {} scheduling cycles).\n\n"
      "| queue | started | never started | pending p50 / p95 / max (s) | GPU-hours used | fair share | deserved | hours over quota | "
      "preemptions suffered / caused |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
      static_cast<double>(report.end - report.start) / 86400.0, report.events, report.cycles);
  for (const auto& q : report.queues) {
    out += fmt::format("| {} | {} | {} | {} / {} / {} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {} / {} |\n", q.queue, q.started,
                       q.never_started, seconds(percentile(q.pending_seconds, 0.50)), seconds(percentile(q.pending_seconds, 0.95)),
                       seconds(percentile(q.pending_seconds, 1.0)), q.gpu_hours, q.fair_share_gpu_hours, q.deserved_gpu_hours,
                       q.over_quota_seconds / 3600.0, q.preemptions_suffered, q.preemptions_caused);
  }
  return out;
}

int run_quota_replay(const QuotaReplayOptions& options) {
  auto fail = [](const Status& st) {
    fmt::print(stderr, "fracpack quota replay: {}\n", st.message());
    return 2;
  };
  auto nodes = read_nodes_any(options.nodes);
  if (!nodes) return fail(nodes.status());
  auto queue_specs = read_queues(options.queues);
  if (!queue_specs) return fail(queue_specs.status());
  Result<quota::TimedWorkload> workload = invalid_argument("no workload");
  if (std::filesystem::path(options.pods).extension() == ".csv") {  // the trace's pod list: queues from the rule file
    if (options.rules.empty()) return fail(invalid_argument("--rules is required with a pod-list CSV (--pods {})", options.pods));
    auto rules = quota::read_rules(options.rules);
    if (!rules) return fail(rules.status());
    auto pods = trace::read_pods(options.pods);
    if (!pods) return fail(pods.status());
    workload = quota::timed_workload(*pods, *rules);
  } else {  // Pod objects: queues from their labels, run times from an annotation
    if (!options.rules.empty()) {
      return fail(invalid_argument("--rules applies to a pod-list CSV; Pod objects name their queue with the kai.scheduler/queue label"));
    }
    auto objects = k8s::read_objects_file(options.pods);
    if (!objects) return fail(objects.status());
    workload = quota::timed_workload_from_objects(*objects, options.pods);
  }
  if (!workload) return fail(workload.status());
  for (const auto& w : workload->warnings) fmt::print(stderr, "warning: {}\n", w);
  for (const auto& w : quota_warnings(*nodes, *queue_specs)) fmt::print(stderr, "warning: {}\n", w);
  quota::ReplayOptions replay_options;
  replay_options.period = options.period;
  replay_options.policy = options.policy;
  const auto started = std::chrono::steady_clock::now();
  auto report = quota::replay(std::move(*nodes), std::move(*queue_specs), *workload, replay_options);
  if (!report) return fail(report.status());
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  fmt::print("{}\n(replay took {:.2f} s wall)\n", replay_table(*report), wall);
  if (!options.out.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(options.out, ec);
    std::ofstream csv(std::filesystem::path(options.out) / "queues.csv");
    if (ec || !csv) return fail(invalid_argument("--out {}: cannot write queues.csv there", options.out));
    if (auto st = write_timeline(options.out, *report); !st.is_ok()) return fail(st);
    csv << "queue,started,never_started,pending_p50_s,pending_p95_s,pending_max_s,gpu_hours,fair_share_gpu_hours,deserved_gpu_hours,"
           "over_quota_hours,preemptions_suffered,preemptions_caused\n";
    for (const auto& q : report->queues) {
      csv << fmt::format("{},{},{},{},{},{},{:.3f},{:.3f},{:.3f},{:.3f},{},{}\n", q.queue, q.started, q.never_started,
                         percentile(q.pending_seconds, 0.5), percentile(q.pending_seconds, 0.95), percentile(q.pending_seconds, 1.0),
                         q.gpu_hours, q.fair_share_gpu_hours, q.deserved_gpu_hours, q.over_quota_seconds / 3600.0,
                         q.preemptions_suffered, q.preemptions_caused);
    }
  }
  return 0;
}

}  // namespace fracpack
