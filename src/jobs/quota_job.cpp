#include "fracpack/sim/quota_job.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <cmath>
#include <fstream>
#include <functional>

#include <fmt/format.h>

#include "fracpack/sim/quota/metrics.hpp"
#include "plot/line_plot.hpp"
#include "quota_inputs.hpp"
#include "jobs/quota_output.hpp"

namespace fracpack {
namespace {

std::string seconds(const std::optional<std::int64_t>& s) { return quota::seconds_text(s, "—", "never"); }
/// A CSV field, quoted when it holds a comma, a quote or a line break (RFC 4180).
std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

/// "161.8 days", "5.0 hours", "90 s".
std::string span_text(std::int64_t seconds) {
  if (seconds >= 2 * 86400) return fmt::format("{:.1f} days", static_cast<double>(seconds) / 86400.0);
  if (seconds >= 2 * 3600) return fmt::format("{:.1f} hours", static_cast<double>(seconds) / 3600.0);
  return fmt::format("{} s", seconds);
}

std::string csv_seconds(const std::optional<std::int64_t>& s) { return quota::seconds_text(s, "", "inf"); }

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

constexpr const char* kFragmentationCaption =
    "Fragmentation of idle GPU: the share of the idle GPU capacity that the workload's typical pods cannot use where it lies "
    "(FGD's fragmentation ratio, Weng et al., ATC '23), in % of the idle GPU.";

double demand_of(const quota::TimelinePoint& p, std::size_t q) { return p.allocated[q] + (p.pending.empty() ? 0 : p.pending[q]); }

/// The top of a queue's plot: the most any line of `r` reaches, and the quota. Demand counts up
/// to the cluster's GPUs only: a backlog of thousands would flatten every other line.
double queue_top(const quota::ReplayReport& r, std::size_t q) {
  double top = std::isnan(r.deserved[q]) ? 0 : r.deserved[q];
  for (const auto& p : r.timeline) {
    const double demand = p.capacity_gpus > 0 ? std::min(demand_of(p, q), p.capacity_gpus) : demand_of(p, q);
    top = std::max({top, p.allocated[q], p.fair_share[q], demand});
  }
  return top;
}

/// A horizontal line across the span.
plot::Series level(std::string name, double y, double days, plot::Stroke stroke, std::string colour) {
  return plot::Series{std::move(name), {{0, y}, {days, y}}, stroke, std::move(colour)};
}

/// One queue's plot: capacity and quotas under, fair share and demand, allocated on top.
/// `before`: the same workload under the Queue file (its quota drawn as the old one).
std::string queue_svg(const quota::ReplayReport& r, std::size_t q, double days, double top, const quota::ReplayReport* before) {
  using plot::Stroke;
  std::vector<plot::Series> lines;
  const double capacity = r.timeline.empty() ? 0 : r.timeline.back().capacity_gpus;
  if (capacity > 0 && capacity <= top) lines.push_back(level(fmt::format("cluster GPUs ({:g})", capacity), capacity, days, Stroke::kDotted, "#7f7f7f"));
  if (before != nullptr && q < before->deserved.size() && !std::isnan(before->deserved[q])) {
    lines.push_back(level(fmt::format("old quota ({:g})", before->deserved[q]), before->deserved[q], days, Stroke::kDashed, "#aaaaaa"));
  }
  if (!std::isnan(r.deserved[q])) {
    lines.push_back(level(fmt::format("{} ({:g})", before != nullptr ? "new quota" : "quota", r.deserved[q]), r.deserved[q], days,
                          Stroke::kDashed, "#2ca02c"));
  }
  lines.push_back({"fair share", steps(r, [q](const quota::TimelinePoint& p) { return p.fair_share[q]; }), Stroke::kSolid, "#9ecae1", 2.5});
  lines.push_back({"demand (allocated + pending)", steps(r, [q](const quota::TimelinePoint& p) { return demand_of(p, q); }),
                   Stroke::kDotted, "#ff7f0e", 1.8});
  lines.push_back({"allocated", steps(r, [q](const quota::TimelinePoint& p) { return p.allocated[q]; }), Stroke::kSolid, "#08306b", 1.6});
  double peak = 0;
  for (const auto& p : r.timeline) peak = std::max(peak, demand_of(p, q));
  std::string caption = capacity > top ? fmt::format("The cluster's {:g} GPUs are above this plot's range.", capacity) : "";
  if (peak > top * 1.1) {
    caption = fmt::format("Demand reaches {:.0f} GPUs, more than the cluster's {:g}: cut at the top of the plot.", peak, capacity);
  }
  return plot::line_plot_svg(plot::Axes{fmt::format("Queue {}: GPUs over time", r.queues[q].queue), "days", "GPUs", days,
                                        top > 0 ? top * 1.1 : 1, false},
                             lines, caption);
}

Status write_timeline(const std::filesystem::path& dir, const quota::ReplayReport& r, const quota::ReplayReport* other, bool other_is_before) {
  std::ofstream csv(dir / "timeline.csv");
  csv << "time_s,cluster_allocated_pct,fragmentation_pct";
  for (const auto& q : r.queues) csv << fmt::format(",{0}_allocated_gpus,{0}_fair_share_gpus,{0}_pending_gpus", q.queue);
  csv << "\n";
  for (const auto& p : r.timeline) {
    csv << fmt::format("{},{:.3f},{:.3f}", p.time, p.cluster_allocated_pct, p.fragmentation_pct);
    for (std::size_t q = 0; q < p.allocated.size(); ++q) {
      csv << fmt::format(",{:.3f},{:.3f},{:.3f}", p.allocated[q], p.fair_share[q], p.pending.empty() ? 0.0 : p.pending[q]);
    }
    csv << "\n";
  }
  // Before and after on the same axes: the longer span, the higher top of the two.
  std::int64_t span = r.end - r.start;
  if (other != nullptr) span = std::max(span, other->end - other->start);
  const double days = std::max(1e-9, static_cast<double>(span) / 86400.0);
  {
    std::ofstream svg(dir / "cluster.svg");
    svg << plot::line_plot_svg(
        plot::Axes{"Cluster: GPU allocated and fragmentation of idle GPU over time", "days", "%", days, 100, false},
        {{"GPU allocated", steps(r, [](const quota::TimelinePoint& p) { return p.cluster_allocated_pct; }), plot::Stroke::kSolid},
         {"fragmentation of idle GPU", steps(r, [](const quota::TimelinePoint& p) { return p.fragmentation_pct; }), plot::Stroke::kDashed}},
        kFragmentationCaption);
    if (!svg) return invalid_argument("--out {}: cannot write cluster.svg", dir.string());
  }
  for (std::size_t q = 0; q < r.queues.size(); ++q) {
    double top = queue_top(r, q);
    const bool paired = other != nullptr && q < other->queues.size() && other->queues[q].queue == r.queues[q].queue;
    if (paired) top = std::max(top, queue_top(*other, q));
    std::ofstream svg(dir / fmt::format("queue-{}.svg", r.queues[q].queue));
    svg << queue_svg(r, q, days, top, paired && other_is_before ? other : nullptr);
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
  for (const auto& q : queue_specs) {
    for (queues::Resource r : queues::kResources) {
      const auto& term = q.resource(r);
      if (term.limit == 0) {  // KAI's MaxAllowed 0: nothing that asks for r runs in this queue (or below it)
        out.push_back(fmt::format("queue {}: {}.limit is {}, which KAI reads as 0: no pod asking for {} can run in it "
                                  "(limit -1 means no limit)",
                                  q.name, queues::resource_name(r), term.limit_set ? "0" : "unset", queues::resource_name(r)));
      } else if (term.limit != queues::kUnlimited && term.quota != queues::kUnlimited && term.quota > term.limit) {
        out.push_back(fmt::format("queue {}: {}.quota {} is above its limit {}; the limit caps it", q.name, queues::resource_name(r),
                                  queues::format_amount(r, term.quota), queues::format_amount(r, term.limit)));
      }
    }
  }
  if (quota_milli > cluster_gpus * 1000) {  // allowed (KAI allows it), but rarely meant
    out.push_back(fmt::format("the top-level queues' GPU quotas sum to {} GPUs, more than the cluster's {}; "
                              "not every queue can get its quota at once",
                              queues::format_amount(queues::Resource::kGpu, quota_milli), cluster_gpus));
  }
  return out;
}

std::string replay_table(const quota::ReplayReport& report) {
  std::string out = fmt::format(
      "Replayed {} ({} events, {} scheduling cycles).\n\n"
      "| queue | started | never started | pending p50 / p95 / max (s) | GPU-hours used | fair share | deserved | hours over quota | "
      "preemptions suffered / caused |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
      span_text(report.end - report.start), report.events, report.cycles);
  const auto metrics = quota::metrics_of(report, 0);
  for (std::size_t k = 0; k < metrics.queues.size(); ++k) {
    const auto& q = metrics.queues[k];
    const std::string deserved = k < report.deserved.size() && std::isnan(report.deserved[k]) ? "unlimited" : fmt::format("{:.1f}", q.deserved_gpu_hours);
    const std::string never = q.never_startable > 0 ? fmt::format("{} ({} fit no node)", q.never_started, q.never_startable)
                                                    : fmt::format("{}", q.never_started);
    out += fmt::format("| {} | {} | {} | {} / {} / {} | {:.1f} | {:.1f} | {} | {:.1f} | {} / {} |\n", q.queue, q.started, never,
                       seconds(q.pending_p50), seconds(q.pending_p95), seconds(q.pending_max), q.gpu_hours, q.fair_share_gpu_hours,
                       deserved, q.over_quota_hours, q.preemptions, q.preemptions_caused);
  }
  if (report.moves > 0) {
    std::string per_queue;
    for (const auto& q : report.queues) {
      if (q.moved > 0 || q.consolidated > 0) per_queue += fmt::format("; {}: {} moved, {} started so", q.queue, q.moved, q.consolidated);
    }
    out += fmt::format("\nConsolidation moved {} running pod(s) to start waiting ones{}.\n", report.moves, per_queue);
  }
  std::string waits;
  for (const auto& q : report.queues) {
    if (q.longest_wait.pod.empty() || q.longest_wait.seconds == 0) continue;
    waits += fmt::format("| {} | {} | {} | {} |\n", q.queue, q.longest_wait.pod, seconds(q.longest_wait.seconds),
                         q.longest_wait.why.empty() ? "—" : q.longest_wait.why);
  }
  if (!waits.empty()) {
    out += "\nLongest wait per queue, and the last reason the scheduler gave before the pod started:\n\n"
           "| queue | pod | waited (s) | why |\n|---|---|---:|---|\n" + waits;
  }
  return out;
}

Status write_replay_files(const std::string& dir, const quota::ReplayReport& report, const quota::ReplayReport* other,
                          bool other_is_before) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::ofstream csv(std::filesystem::path(dir) / "queues.csv");
  if (ec || !csv) return invalid_argument("--out {}: cannot write queues.csv there", dir);
  csv << "queue,started,never_started,never_startable,pending_p50_s,pending_p95_s,pending_p99_s,pending_max_s,gpu_hours,"
         "fair_share_gpu_hours,deserved_gpu_hours,over_quota_hours,preemptions_suffered,preemptions_caused,longest_wait_pod,"
         "longest_wait_s,longest_wait_why\n";
  const auto metrics = quota::metrics_of(report, 0);
  for (std::size_t k = 0; k < metrics.queues.size(); ++k) {
    const auto& q = metrics.queues[k];
    const auto& longest = report.queues[k].longest_wait;
    csv << fmt::format("{},{},{},{},{},{},{},{},{:.3f},{:.3f},{:.3f},{:.3f},{},{},{},{},{}\n", q.queue, q.started, q.never_started,
                       q.never_startable, csv_seconds(q.pending_p50), csv_seconds(q.pending_p95), csv_seconds(q.pending_p99),
                       csv_seconds(q.pending_max), q.gpu_hours, q.fair_share_gpu_hours, q.deserved_gpu_hours, q.over_quota_hours,
                       q.preemptions, q.preemptions_caused, csv_field(longest.pod),
                       longest.pod.empty() ? "" : csv_seconds(longest.seconds), csv_field(longest.why));
  }
  if (!csv) return invalid_argument("--out {}: cannot write queues.csv", dir);
  return write_timeline(dir, report, other, other_is_before);
}

int run_quota_replay(const QuotaReplayOptions& options) {
  auto fail = [](const Status& st) {
    fmt::print(stderr, "fracpack quota replay: {}\n", st.message());
    return 2;
  };
  auto in = read_quota_inputs(options);
  if (!in) return fail(in.status());
  for (const auto& w : in->warnings) fmt::print(stderr, "warning: {}\n", w);
  quota::ReplayOptions replay_options;
  replay_options.period = options.period;
  replay_options.policy = options.policy;
  replay_options.min_runtime = options.min_runtime;
  replay_options.consolidation = options.consolidation;
  const auto started = std::chrono::steady_clock::now();
  auto report = quota::replay(std::move(in->nodes), std::move(in->queues), in->workload, replay_options);
  if (!report) return fail(report.status());
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (options.output == "table") {
    fmt::print("{}\n(replay took {:.2f} s wall)\n", replay_table(*report), wall);
  } else {
    fmt::print("{}", document_text(replay_json(*report), options.output));
  }
  if (!options.out.empty()) {
    if (auto st = write_replay_files(options.out, *report); !st.is_ok()) return fail(st);
  }
  return 0;
}

}  // namespace fracpack
