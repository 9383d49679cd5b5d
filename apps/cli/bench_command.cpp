// fracpack bench density: packing density on the Alibaba GPU trace, policies × seeds.
#include <fmt/format.h>

#include "commands.hpp"
#include "fracpack/sim/density_job.hpp"

namespace fracpack::cli {
namespace {

class DensityCommand : public Command {
 public:
  explicit DensityCommand(CLI::App& bench) {
    app_ = bench.add_subcommand("density",
                                "Packing density on the Alibaba GPU trace (the FGD study's protocol): policies × seeds");
    app_->add_option("--nodes", density_.nodes_csv, "Node list CSV (openb_node_list_gpu_node.csv)")
        ->required()
        ->check(CLI::ExistingFile);
    app_->add_option("--pods", density_.pods_csv, "Pod list CSV (openb_pod_list_*.csv)")->required()->check(CLI::ExistingFile);
    app_->add_option("--policy", density_.policies,
                     fmt::format("Policies, comma-separated (the study's labels work too); default {}, with --dynamic {}",
                                 kStaticPolicies, kDynamicPolicies));
    app_->add_option("--tune", density_.tune, "Inflation: arrive until demand is this × GPU capacity (default 1.3, with --dynamic 4)");
    app_->add_option("--seeds", density_.seeds, "Seeds: a range 42-51 and/or a list 1,2,3")->capture_default_str();
    app_->add_option("--out", density_.out_dir, "Directory for allo.csv, frag_ratio.csv, summary.md, allocation.svg")
        ->capture_default_str();
    app_->add_option("--published", density_.published, "The study's allo.csv: print ours next to theirs")
        ->check(CLI::ExistingFile);
    app_->add_option("--jobs", density_.jobs, "Runs at once (default: one per core)")->check(CLI::Range(1u, 256u));
    app_->add_flag("!--no-progress", density_.progress, "No progress bar");
    app_->add_flag("--dynamic", density_.dynamic,
                   "Pods arrive at their trace times, compressed to --load, and leave when their run ends (docs/density.md)");
    app_->add_option("--load", density_.loads,
                     "With --dynamic: offered GPU demand over the arrivals × capacity, comma-separated (compresses the trace's times)")
        ->capture_default_str();
    app_->add_option("--consolidation", density_.consolidation, "With --dynamic: KAI's consolidation off, on, or both")
        ->capture_default_str()
        ->check(CLI::IsMember({"off", "on", "both"}));
    app_->add_option("--max-moves-per-hour", density_.max_moves_per_hour,
                     "With --dynamic: pods consolidation may move in any hour of trace time (0: no bound)")
        ->capture_default_str()
        ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 40));
  }

  int run() override { return run_density_job(density_); }

 private:
  DensityJobOptions density_;
};

}  // namespace

std::unique_ptr<Command> add_bench_density(CLI::App& bench) { return std::make_unique<DensityCommand>(bench); }

}  // namespace fracpack::cli
