// fracpack place: place pods on a cluster read from files and explain what does not fit.
#include <fmt/format.h>

#include "commands.hpp"
#include "fracpack/core/quantity.hpp"
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
  std::string sharing_mode_ = "NvFractions";
  std::string reserved_ = "0";
  std::vector<std::string> rdma_;
  PlaceOptions options_;
};

PlaceCommand::PlaceCommand(CLI::App& app) {
  app_ = app.add_subcommand("place", "Place pods on a cluster and explain what does not fit");
  app_->footer(
      "--cluster and --pods are read in that order and merged: Nodes, Pods, PriorityClasses and PodGroups may sit "
      "in either. Pods with spec.nodeName are loaded first; every other pod is placed in input order.");
  app_->add_option("--cluster", cluster_, "Nodes (and running pods) as kubectl get -o yaml|json prints them")
      ->required()
      ->check(CLI::ExistingFile);
  app_->add_option("--pods", pods_, "Pods to place, YAML or JSON")->required()->check(CLI::ExistingFile);
  app_->add_option("--policy", options_.policy, "Placement policy")->check(CLI::IsMember(all_policy_names()))->capture_default_str();
  app_->add_option("--format", format_, "Output format")->check(CLI::IsMember({"json", "table"}))->capture_default_str();
  app_->add_option("--sharing-mode", sharing_mode_, "KAI gpuSharingMode")
      ->check(CLI::IsMember({"NvFractions", "NonMemoryEnforced"}))
      ->capture_default_str();
  app_->add_option("--reserved-gpu-memory", reserved_,
                   "Memory kept free on every GPU (KAI issue 2212): a Kubernetes quantity such as 2Gi, or MiB")
      ->capture_default_str();
  app_->add_option("--rdma-resource", rdma_,
                   "Resource names that mark InfiniBand pods; a name ending in / is a prefix "
                   "(default: rdma/ nvidia.com/hostdev)");
  app_->add_option("--explain-nodes", options_.explain_nodes,
                   "Nodes listed with their own reasons for each pod that fits nowhere (all are counted)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app_->add_option("--network-leaf-label", options_.placement.network_leaf_label,
                   "Node label naming the network leaf for InfiniBand gangs")
      ->capture_default_str();
}

Result<std::vector<k8s::InputObject>> PlaceCommand::read_inputs() const {
  std::vector<k8s::InputObject> objects;
  for (const auto& file : {cluster_, pods_}) {
    auto read = k8s::read_input_file(file);
    if (!read) return read.status();
    objects.insert(objects.end(), read->begin(), read->end());
  }
  return objects;
}

int PlaceCommand::run() {
  options_.placement.sharing_mode =
      sharing_mode_ == "NonMemoryEnforced" ? GpuSharingMode::kNonMemoryEnforced : GpuSharingMode::kNvFractions;
  auto reserve = parse_mib_or_quantity(reserved_, "--reserved-gpu-memory");
  if (!reserve) {
    fmt::print(stderr, "fracpack place: {}\n", reserve.status().message());
    return kInputError;
  }
  options_.placement.reserved_per_gpu = *reserve;
  if (!rdma_.empty()) options_.decode.rdma_resources = rdma_;
  auto objects = read_inputs();
  auto report = objects ? run_place(*objects, options_) : Result<PlaceReport>(objects.status());
  if (!report) {
    fmt::print(stderr, "fracpack place: {}\n", report.status().message());
    return kInputError;
  }
  if (format_ == "table") {
    fmt::print("{}", report_table(*report));
  } else {
    fmt::print("{}\n", report_json_text(*report));
  }
  return 0;
}

}  // namespace

std::unique_ptr<Command> add_place(CLI::App& app) { return std::make_unique<PlaceCommand>(app); }

}  // namespace fracpack::cli
