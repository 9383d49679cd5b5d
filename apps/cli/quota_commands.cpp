// fracpack quota replay and quota tune: queues over time, and quotas searched for an objective.
#include "commands.hpp"
#include "fracpack/sim/quota_job.hpp"
#include "min_runtime_flags.hpp"

namespace fracpack::cli {
namespace {

/// The inputs both quota commands read; --cluster and --workload are aliases of --nodes and --pods.
void add_inputs(CLI::App* cmd, QuotaInputFiles& files) {
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
      ->check(decimal_check(0, 1, false, "(0, 1]"))
      ->capture_default_str();
}

/// A bad flag value: the message on stderr, exit status 2.
int flag_error(const char* command, const Status& st) {
  fmt::print(stderr, "fracpack {}: {}\n", command, st.message());
  return kInputError;
}

/// -o, as kubectl's.
void add_output(CLI::App* cmd, std::string& output, const std::string& help) {
  cmd->add_option("-o,--output", output, help)->check(CLI::IsMember({"table", "json", "yaml"}))->capture_default_str();
}

/// --period, --policy and the min-runtime defaults, the same for both.
template <class Options>
void add_cycle(CLI::App* cmd, Options& options, MinRuntimeFlags& min_runtime) {
  min_runtime.add(*cmd);
  cmd->add_option("--period", options.period, "Seconds between scheduling cycles")->check(CLI::Range(1, 86400))->capture_default_str();
  cmd->add_option("--policy", options.policy, "Placement policy (fgd, fgd-cpu, fgd-lp: the workload's typical pods are the target)")
      ->check(CLI::IsMember(all_policy_names()))
      ->capture_default_str();
  cmd->add_flag("--consolidation", options.consolidation,
                "KAI's consolidation action in every cycle: a waiting pod gets room by moving running ones (docs/queues.md rule 14)");
}

class QuotaReplayCommand : public Command {
 public:
  explicit QuotaReplayCommand(CLI::App& quota) {
    app_ = quota.add_subcommand("replay", "Replay the trace's pods over time through queues and report per queue");
    add_inputs(app_, options_);
    add_cycle(app_, options_, min_runtime_);
    app_->add_option("--out", options_.out, "Directory for queues.csv, timeline.csv and the SVG timelines");
    add_output(app_, options_.output, "table: the per-queue table; json, yaml: the same numbers as one document");
  }

  int run() override {
    if (Status st = min_runtime_.apply(options_.min_runtime); !st.is_ok()) return flag_error("quota replay", st);
    return run_quota_replay(options_);
  }

 private:
  QuotaReplayOptions options_;
  MinRuntimeFlags min_runtime_;
};

class QuotaTuneCommand : public Command {
 public:
  explicit QuotaTuneCommand(CLI::App& quota);
  int run() override {
    if (Status st = min_runtime_.apply(options_.min_runtime); !st.is_ok()) return flag_error("quota tune", st);
    options_.scale_cpu_memory = !keep_cpu_memory_;
    return run_quota_tune(options_);
  }

 private:
  QuotaTuneOptions options_;
  MinRuntimeFlags min_runtime_;
  bool keep_cpu_memory_ = false;
};

QuotaTuneCommand::QuotaTuneCommand(CLI::App& quota) {
  app_ = quota.add_subcommand("tune", "Search GPU quotas and over-quota weights per queue for an objective");
  add_inputs(app_, options_);
  app_->add_option("--objective", options_.objective,
                   "What to achieve, e.g. \"p95 pending of inference <= 60s, then maximise allocation\" or "
                   "\"share within 10% of weight\" (see docs/quota-tuning.md)")
      ->required();
  add_cycle(app_, options_, min_runtime_);
  app_->add_option("--budget", options_.budget_seconds, "Wall-time budget in seconds, checked between rounds (0: none)")
      ->check(decimal_check(0, 7.0 * 86400, true, "[0, 604800]"))
      ->capture_default_str();
  app_->add_option("--max-rounds", options_.max_rounds,
                   "Stop after this many search rounds (0: until converged); same answer on every machine")
      ->check(CLI::Range(std::size_t{0}, std::size_t{1'000'000}))
      ->capture_default_str();
  app_->add_option("--jobs", options_.jobs, "Candidates replayed at once (default: one per core)")->check(CLI::Range(1u, 256u));
  app_->add_option("--top", options_.top, "Candidates shown in the table")->check(CLI::Range(std::size_t{1}, std::size_t{1000}))->capture_default_str();
  app_->add_flag("--keep-cpu-memory", keep_cpu_memory_, "Leave finite CPU/memory quotas as they are (default: scale with the GPU quota)");
  app_->add_flag("--oversubscribe", options_.oversubscribe,
                 "Allow GPU quotas that add up to more than the cluster (KAI allows it; they are then not all guaranteed)");
  app_->add_option("--out", options_.out, "Directory for queues.yaml, candidates.csv and the recommendation's replay (recommended/)");
  add_output(app_, options_.output,
             "table: the report and the Queue objects; yaml: only the recommended Queue objects on stdout "
             "(| kubectl apply -f -), the report on stderr; json: one document");
}

}  // namespace

std::unique_ptr<Command> add_quota_replay(CLI::App& quota) { return std::make_unique<QuotaReplayCommand>(quota); }
std::unique_ptr<Command> add_quota_tune(CLI::App& quota) { return std::make_unique<QuotaTuneCommand>(quota); }

}  // namespace fracpack::cli
