#include "placement_flags.hpp"

#include "fracpack/core/quantity.hpp"

namespace fracpack::cli {

void PlacementFlags::add(CLI::App& app) {
  app.add_option("--sharing-mode", sharing_mode_, "KAI gpuSharingMode (docs/placement.md rule 11)")
      ->check(CLI::IsMember({"NvFractions", "NonMemoryEnforced"}))
      ->capture_default_str();
  app.add_option("--reserved-gpu-memory", reserved_,
                 "Memory kept free on every GPU (KAI issue 2212): a Kubernetes quantity such as 2Gi, or MiB")
      ->capture_default_str();
  app.add_option("--rdma-resource", rdma_,
                 "Resource names that mark InfiniBand pods; a name ending in / is a prefix "
                 "(default: rdma/ nvidia.com/hostdev)");
  app.add_option("--network-leaf-label", network_leaf_label_, "Node label naming the network leaf for InfiniBand gangs")
      ->capture_default_str();
  app.add_option("--scheduler-name", scheduler_names_,
                 "spec.schedulerName of the pods that are ours (placed, counted in queues); repeat for several "
                 "(default: kai-scheduler; pods without one are ours too)");
}

Status PlacementFlags::apply(PlacementConfig& placement, DecodeConfig& decode) const {
  auto reserve = parse_mib_or_quantity(reserved_, "--reserved-gpu-memory");
  if (!reserve) return reserve.status();
  placement.sharing_mode =
      sharing_mode_ == "NonMemoryEnforced" ? GpuSharingMode::kNonMemoryEnforced : GpuSharingMode::kNvFractions;
  placement.reserved_per_gpu = *reserve;
  placement.network_leaf_label = network_leaf_label_;
  if (!rdma_.empty()) decode.rdma_resources = rdma_;
  if (!scheduler_names_.empty()) decode.scheduler_names = scheduler_names_;
  return Status::ok();
}

}  // namespace fracpack::cli
