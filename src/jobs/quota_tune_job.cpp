// `fracpack quota tune`: reads the inputs, runs the search (quota/tune.hpp), prints the report and
// the recommended Queue objects.

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "fracpack/core/progress.hpp"
#include "fracpack/k8s/yaml_emit.hpp"
#include "fracpack/sim/quota/metrics.hpp"
#include "fracpack/sim/quota_job.hpp"
#include "jobs/quota_output.hpp"
#include "quota_inputs.hpp"

namespace fracpack {
namespace {

using nlohmann::json;
using queues::Resource;

/// A KAI amount as a JSON number: an integer when whole, else three decimals.
json number(double v) {
  const double rounded = std::round(v * 1000.0) / 1000.0;
  if (rounded == std::floor(rounded) && std::abs(rounded) < 9e15) return json(static_cast<std::int64_t>(rounded));
  return json(rounded);
}

std::string gpus(std::int64_t milli) { return milli == queues::kUnlimited ? "unlimited" : fmt::format("{:g}", static_cast<double>(milli) / 1000.0); }
std::string weight(std::int64_t milli) { return fmt::format("{:g}", static_cast<double>(milli) / 1000.0); }

/// "1 round", "15 rounds".
std::string count(std::size_t n, const char* noun) { return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s"); }

std::string value_text(double v) {
  if (std::isinf(v)) return "never starts";
  if (std::abs(v) < 1e-9) return "0";  // rounding (a single queue's share error)
  return std::abs(v) >= 100 ? fmt::format("{:.0f}", v) : fmt::format("{:.3g}", v);
}

/// What `-o` puts where (QuotaTuneOptions::output): a recommendation only when the objective is met.
void print_tune_report(const quota::TuneReport& report, const std::vector<json>& objects, const std::string& yaml,
                       const std::string& output) {
  const bool met = report.candidates.front().score.feasible();
  if (output == "json") {
    fmt::print("{}", document_text(tune_json(report, objects), "json"));
    return;
  }
  const std::string tables = fmt::format("{}\n{}", tune_table(report), before_after_table(report));
  const std::string heading = met ? "Recommended Queue objects (kubectl apply -f):"
                                  : "No recommendation: the objective is not met. The closest candidate's Queue objects, "
                                    "for reference (not for kubectl apply):";
  if (output == "yaml") {
    fmt::print(stderr, "{}\n{}\n", tables, met ? "The recommended Queue objects are on standard output."
                                               : "No recommendation: the objective is not met; standard output is left empty.");
    if (met) fmt::print("{}", yaml);
    return;
  }
  fmt::print("{}\n{}\n{}", tables, heading, yaml);
}

}  // namespace

std::vector<json> recommended_queue_objects(const std::vector<json>& objects, const std::vector<queues::QueueSpec>& recommended) {
  std::map<std::string, const queues::QueueSpec*> by_name;
  for (const auto& q : recommended) by_name.emplace(q.name, &q);
  std::vector<json> out;
  for (json o : objects) {
    o.erase("status");
    if (auto m = o.find("metadata"); m != o.end() && m->is_object()) {
      for (const char* owned : {"resourceVersion", "uid", "generation", "managedFields", "creationTimestamp", "selfLink"}) m->erase(owned);
      if (auto a = m->find("annotations"); a != m->end() && a->is_object()) {
        a->erase("kubectl.kubernetes.io/last-applied-configuration");
        if (a->empty()) m->erase("annotations");
      }
    }
    const std::string name = o.contains("metadata") && o["metadata"].is_object() ? o["metadata"].value("name", "") : "";
    auto it = by_name.find(name);
    if (it != by_name.end()) {
      json& resources = o["spec"]["resources"];
      for (Resource r : queues::kResources) {
        const auto& term = it->second->resource(r);
        json& field = resources[std::string(queues::resource_name(r))];
        const double scale = r == Resource::kGpu ? 1000.0 : r == Resource::kMemory ? 1e6 : 1.0;  // fracpack units → KAI's
        if (r == Resource::kGpu || (field.contains("quota") && term.quota != queues::kUnlimited)) {
          field["quota"] = term.quota == queues::kUnlimited ? json(-1) : number(static_cast<double>(term.quota) / scale);
        }
        if (r == Resource::kGpu) field["overQuotaWeight"] = number(static_cast<double>(term.over_quota_weight) / 1000.0);
      }
    }
    out.push_back(std::move(o));
  }
  return out;
}

std::string tune_table(const quota::TuneReport& report) {
  const auto& objective = report.objective;
  std::string out = fmt::format("Objective: {}\n", objective.text);
  for (const auto& c : objective.constraints) {
    out += fmt::format("  must: {} {} {:g}\n", metric_label(c.ref), c.at_most ? (c.strict ? "<" : "≤") : (c.strict ? ">" : "≥"), c.bound);
  }
  if (objective.goal) out += fmt::format("  then: {} {}\n", objective.goal->maximise ? "maximise" : "minimise", metric_label(objective.goal->ref));
  const char* stop = report.converged        ? "converged (quota step 1 GPU, weight factor 1.5, no better neighbour)"
                     : report.budget_ran_out ? "stopped by the time budget (--budget)"
                                             : "stopped after --max-rounds";
  out += fmt::format("Searched {} in {} on a cluster of {} GPUs, {:.1f} s wall; {}.\n", count(report.evaluated, "candidate"),
                     count(report.rounds, "round"), report.cluster_gpus, report.seconds, stop);
  std::size_t feasible = 0;
  for (const auto& c : report.candidates) feasible += c.score.feasible() ? 1 : 0;
  const quota::Candidate& best = report.candidates.front();
  if (best.score.feasible()) {
    out += fmt::format("The objective is met by {} of {} candidates; the first row is recommended.\n\n", feasible, report.candidates.size());
  } else {
    out += fmt::format("The objective CANNOT be met: none of the {} candidates meets it. Closest (first row) still violates:\n",
                       report.candidates.size());
    for (const auto& v : quota::violations(objective, best.metrics)) out += fmt::format("  - {}\n", v);
    out += "\n";
  }

  std::vector<quota::MetricRef> columns;
  for (const auto& c : objective.constraints) columns.push_back(c.ref);
  if (objective.goal) columns.push_back(objective.goal->ref);
  out += "| candidate |";
  std::string rule = "|---|";
  for (const auto& q : objective.queues) {
    out += fmt::format(" {} quota / weight |", q);
    rule += "---:|";
  }
  for (const auto& c : columns) {
    out += fmt::format(" {} |", metric_label(c));
    rule += "---:|";
  }
  // A share objective shows each queue's share next to its target: why it is (not) met.
  const bool shares = std::any_of(columns.begin(), columns.end(), [](const quota::MetricRef& c) { return c.metric == quota::Metric::kShareError; });
  if (shares) {
    for (std::size_t q = 0; q < objective.queues.size(); ++q) {
      out += fmt::format(" {} share (%, target {:.3g}) |", objective.queues[q], 100.0 * objective.target_share[q]);
      rule += "---:|";
    }
  }
  out += " meets objective |\n" + rule + "---|\n";
  auto row = [&](const std::string& label, const quota::Candidate& c) {
    out += fmt::format("| {} |", label);
    for (const auto& s : c.settings) out += fmt::format(" {} / {} |", gpus(s.gpu_quota), weight(s.gpu_weight));
    for (std::size_t k = 0; k < columns.size(); ++k) {
      const bool larger_is_worse = k < objective.constraints.size() ? objective.constraints[k].at_most : !objective.goal->maximise;
      out += fmt::format(" {} |", value_text(quota::value_of(objective, columns[k], c.metrics, larger_is_worse)));
    }
    if (shares) {
      for (const auto& q : c.metrics.queues) out += fmt::format(" {:.1f} |", q.share_pct);
    }
    const std::string miss = std::isinf(c.score.violation) ? "no (pods that could run never start)"
                                                           : fmt::format("no (violation {:.3g})", c.score.violation);
    out += fmt::format(" {} |\n", !c.not_allowed.empty() ? fmt::format("not allowed: {}", c.not_allowed) : c.score.feasible() ? "yes" : miss);
  };
  const std::size_t shown = std::min(report.candidates.size(), report.shown);
  const bool input_ranked = std::any_of(report.candidates.begin(), report.candidates.begin() + static_cast<std::ptrdiff_t>(shown),
                                        [&](const quota::Candidate& c) { return c.settings == report.input.settings; });
  if (!input_ranked) row("input (the Queue file)", report.input);
  for (std::size_t k = 0; k < shown; ++k) {
    const auto& c = report.candidates[k];
    row(fmt::format("{} ({})", k + 1, c.settings == report.input.settings ? "the Queue file as given" : c.origin), c);
  }
  return out;
}

int run_quota_tune(const QuotaTuneOptions& options) {
  auto fail = [](const Status& st) {
    fmt::print(stderr, "fracpack quota tune: {}\n", st.message());
    return 2;
  };
  auto in = read_quota_inputs(options);
  if (!in) return fail(in.status());
  for (const auto& w : in->warnings) fmt::print(stderr, "warning: {}\n", w);
  if (!options.out.empty()) {  // before a search of minutes, not after it
    std::error_code ec;
    std::filesystem::create_directories(options.out, ec);
    std::ofstream probe(std::filesystem::path(options.out) / "queues.yaml");
    if (ec || !probe) return fail(invalid_argument("--out {}: cannot write there", options.out));
  }
  auto leaves = quota::leaves_and_weights(in->queues);
  if (!leaves) return fail(leaves.status());
  auto objective = quota::parse_objective(options.objective, leaves->first, leaves->second);
  if (!objective) return fail(objective.status());
  quota::TuneOptions tune_options;
  tune_options.replay.period = options.period;
  tune_options.replay.policy = options.policy;
  tune_options.replay.min_runtime = options.min_runtime;
  tune_options.replay.consolidation = options.consolidation;
  tune_options.budget_seconds = options.budget_seconds;
  tune_options.max_rounds = options.max_rounds;
  tune_options.jobs = options.jobs;
  tune_options.scale_cpu_memory = options.scale_cpu_memory;
  tune_options.oversubscribe = options.oversubscribe;
  if (stderr_is_terminal()) {  // one line redrawn per round, for people watching
    tune_options.on_round = [&options](std::size_t round, std::size_t replayed, const quota::Candidate& best, double seconds) {
      fmt::print(stderr, "\r{}\x1b[K", tune_progress_line(round, replayed, best, seconds, options.budget_seconds, options.max_rounds));
    };
  }
  auto report = quota::tune(in->nodes, in->queues, in->workload, *objective, tune_options);
  if (tune_options.on_round) fmt::print(stderr, "\n");
  if (!report) return fail(report.status());
  report->shown = options.top;
  const bool met = report->candidates.front().score.feasible();
  const auto objects = recommended_queue_objects(in->queue_objects, report->recommended);
  const std::string yaml = k8s::to_yaml(objects);
  print_tune_report(*report, objects, yaml, options.output);
  if (!options.out.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(options.out, ec);
    const std::filesystem::path dir(options.out);
    std::ofstream queues_yaml(dir / (met ? "queues.yaml" : "closest-queues.yaml"));
    queues_yaml << yaml;
    std::ofstream csv(dir / "candidates.csv");
    csv << "rank,origin,meets_objective,violation,goal";
    for (const auto& q : objective->queues) csv << fmt::format(",{0}_gpu_quota,{0}_over_quota_weight", q);
    for (const auto& q : objective->queues) csv << fmt::format(",{0}_pending_p95_s,{0}_never_started,{0}_preemptions,{0}_gpu_hours_share_pct", q);
    csv << ",allocation_pct\n";
    for (std::size_t k = 0; k < report->candidates.size(); ++k) {
      const auto& c = report->candidates[k];
      csv << fmt::format("{},{},{},{:.6g},{:.6g}", k + 1, c.origin, c.score.feasible(), c.score.violation, c.score.goal);
      for (const auto& s : c.settings) csv << fmt::format(",{},{}", gpus(s.gpu_quota), weight(s.gpu_weight));
      for (const auto& q : c.metrics.queues) {
        csv << fmt::format(",{},{},{},{:.3f}", quota::seconds_text(q.pending_p95, "", "inf"), q.never_started, q.preemptions, q.share_pct);
      }
      csv << fmt::format(",{:.3f}\n", c.metrics.allocation_pct);
    }
    if (ec || !queues_yaml || !csv) return fail(invalid_argument("--out {}: cannot write queues.yaml / candidates.csv there", options.out));
    // The Queue file and the recommendation replayed once more with their timelines, for plots
    // on the same axes: before (input/) and after (recommended/, with the old quota drawn).
    quota::ReplayOptions replay_options = tune_options.replay;
    auto before = quota::replay(in->nodes, in->queues, in->workload, replay_options);
    if (!before) return fail(before.status());
    auto best = quota::replay(in->nodes, report->recommended, in->workload, replay_options);
    if (!best) return fail(best.status());
    if (auto st = write_replay_files((dir / "input").string(), *before, &*best); !st.is_ok()) return fail(st);
    if (auto st = write_replay_files((dir / "recommended").string(), *best, &*before, true); !st.is_ok()) return fail(st);
  }
  return met ? 0 : 1;
}

}  // namespace fracpack
