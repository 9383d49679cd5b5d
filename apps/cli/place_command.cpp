// fracpack place: place pods on a cluster read from files and explain what does not fit.
#include <fmt/format.h>

#include "commands.hpp"
#include "min_runtime_flags.hpp"
#include "placement_flags.hpp"
#include "fracpack/k8s/object_stream.hpp"
#include "fracpack/sim/place_job.hpp"

namespace fracpack::cli {
namespace {

class PlaceCommand : public Command {
 public:
  explicit PlaceCommand(CLI::App& app);
  int run() override;

 private:
  Result<std::vector<k8s::InputObject>> read_inputs() const;

  std::string cluster_;
  std::string pods_;
  std::string format_ = "json";
  std::string actions_ = "allocate, consolidation, reclaim, preempt, stalegangeviction";
  PlacementFlags placement_;
  MinRuntimeFlags min_runtime_;
  PlaceOptions options_;
};

PlaceCommand::PlaceCommand(CLI::App& app) {
  app_ = app.add_subcommand("place", "Place pods on a cluster and explain what does not fit");
  app_->footer(
      "--cluster and --pods are read in that order and merged: Nodes, Pods, PriorityClasses and PodGroups may sit "
      "in either. Pods with spec.nodeName are loaded first; every other pod is placed in input order.");
  app_->add_option("--cluster", cluster_, "Nodes (and running pods) as kubectl get -o yaml|json prints them")
      ->required()
      ->check(input_file());
  app_->add_option("--pods", pods_, "Pods to place, YAML or JSON (- for standard input)")->required()->check(input_file());
  app_->add_option("--policy", options_.policy, "Placement policy")->check(CLI::IsMember(all_policy_names()))->capture_default_str();
  app_->add_option("-o,--output,--format", format_, "Output format (--format is the older spelling)")
      ->check(CLI::IsMember({"json", "yaml", "table"}))
      ->capture_default_str();
  placement_.add(*app_);
  min_runtime_.add(*app_);
  app_->add_option("--actions", actions_,
                   "KAI's actions, in order (KAI's `actions` setting; with Queues: what allocation leaves waiting may be "
                   "placed by consolidation, reclaim or preempt)")
      ->capture_default_str();
  app_->add_option("--explain-nodes", options_.explain_nodes,
                   "Nodes listed with their own reasons for each pod that fits nowhere (all are counted)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
}

Result<std::vector<k8s::InputObject>> PlaceCommand::read_inputs() const {
  if (cluster_ == k8s::kStandardInput && pods_ == k8s::kStandardInput) {
    return Status(Code::kInvalidArgument, "--cluster and --pods cannot both be - (standard input is read once)");
  }
  std::vector<k8s::InputObject> objects;
  for (const auto& file : {cluster_, pods_}) {
    auto read = k8s::read_input_file(file);
    if (!read) return read.status();
    objects.insert(objects.end(), read->begin(), read->end());
  }
  return objects;
}

int PlaceCommand::run() {
  Status flags = placement_.apply(options_.placement, options_.decode);
  if (flags.is_ok()) flags = min_runtime_.apply(options_.min_runtime);
  if (flags.is_ok()) {
    auto actions = cycle::parse_actions(actions_);
    flags = actions ? Status::ok() : Status(actions.status().code(), "--" + actions.status().message());
    if (actions) options_.actions = *actions;
  }
  if (!flags.is_ok()) {
    fmt::print(stderr, "fracpack place: {}\n", flags.message());
    return kInputError;
  }
  auto objects = read_inputs();
  auto report = objects ? run_place(*objects, options_) : Result<PlaceReport>(objects.status());
  if (!report) {
    fmt::print(stderr, "fracpack place: {}\n", report.status().message());
    return kInputError;
  }
  if (format_ == "table") {
    fmt::print("{}", report_table(*report));
  } else if (format_ == "yaml") {
    fmt::print("{}", report_yaml_text(*report));
  } else {
    fmt::print("{}\n", report_json_text(*report));
  }
  return 0;
}

}  // namespace

std::unique_ptr<Command> add_place(CLI::App& app) { return std::make_unique<PlaceCommand>(app); }

}  // namespace fracpack::cli
