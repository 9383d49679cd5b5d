// Value types that describe where a pod goes and why it does not fit.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fracpack/core/node.hpp"
#include "fracpack/core/status.hpp"
#include "fracpack/core/units.hpp"

namespace fracpack {

/// How a pod holds its GPUs.
enum class GpuHold : std::uint8_t {
  kNone,      ///< CPU-only pod
  kWhole,     ///< whole idle devices
  kFraction,  ///< memory fractions of shared devices (NvFractions or legacy KAI)
  kSlot,      ///< device-plugin replica slots
};
std::string_view gpu_hold_name(GpuHold hold);

/// The GPUs chosen on one node, with what is held on each.
struct GpuChoice {
  GpuHold hold = GpuHold::kNone;
  ComputeMode mode = ComputeMode::kTimeSlicing;  ///< for kFraction and kSlot
  std::vector<int> gpus;          ///< device indices (a slot pod may list one device twice)
  std::vector<MiB> memory;        ///< memory held on each entry of `gpus` (whole: the device's memory)
  std::vector<int> compute;       ///< compute portion per entry, hundredths of the device (1..100)
  int shared_before = 0;          ///< how many chosen GPUs already carried fractions of this mode
  MiB free_after{0};              ///< sum of usable memory left on the chosen GPUs after placement

  /// GPU memory held over every entry of `gpus`.
  [[nodiscard]] MiB memory_held() const {
    MiB sum{0};
    for (MiB m : memory) sum += m;
    return sum;
  }

  bool operator==(const GpuChoice& o) const {
    return hold == o.hold && mode == o.mode && gpus == o.gpus && memory == o.memory && compute == o.compute;
  }
};

/// A decision: this pod goes on this node with these GPUs.
struct Placement {
  std::string pod;   ///< "namespace/name"
  std::string node;
  GpuChoice choice;
  double score = 0;  ///< the node's normalised score in [0, 10] among the feasible nodes
};

/// One reason a pod does not fit a node.
struct Reason {
  std::string category;  ///< short and shared across nodes: "Insufficient GPU memory"
  std::string detail;    ///< this node's numbers: "requested 16384 MiB on 1 GPU(s), 0 can take it: ..."
  [[nodiscard]] std::string text() const { return detail.empty() ? category : category + ": " + detail; }
};

/// Why a pod does or does not fit one node (kube-scheduler framework Status, per node). Like
/// kube-scheduler's NodeResourcesFit, every short resource is a reason of its own.
struct Verdict {
  Code code = Code::kOk;         ///< kOk, kUnschedulable or kUnschedulableAndUnresolvable
  std::vector<Reason> reasons;   ///< empty when the pod fits, or when no explanation was asked for

  [[nodiscard]] bool fits() const { return code == Code::kOk; }
  /// All reasons, "; "-separated.
  [[nodiscard]] std::string text() const;
};

}  // namespace fracpack
