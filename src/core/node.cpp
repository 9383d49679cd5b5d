#include "fracpack/core/node.hpp"

namespace fracpack {

std::string_view compute_mode_name(ComputeMode mode) {
  return mode == ComputeMode::kSmSharing ? "sm-sharing" : "time-slicing";
}

std::string_view sharing_kind_name(SharingKind kind) {
  switch (kind) {
    case SharingKind::kExclusive: return "exclusive";
    case SharingKind::kNvFractions: return "nvfractions";
    case SharingKind::kReplicas: return "replicas";
  }
  return "unknown";
}

}  // namespace fracpack
