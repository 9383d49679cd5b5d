#include "fracpack/core/placement.hpp"

namespace fracpack {

std::string_view gpu_hold_name(GpuHold hold) {
  switch (hold) {
    case GpuHold::kNone: return "none";
    case GpuHold::kWhole: return "whole";
    case GpuHold::kFraction: return "fraction";
    case GpuHold::kSlot: return "slot";
  }
  return "unknown";
}

std::string Verdict::text() const {
  std::string out;
  for (const auto& r : reasons) {
    if (!out.empty()) out += "; ";
    out += r.text();
  }
  return out;
}

}  // namespace fracpack
