#include "fracpack/core/units.hpp"

namespace fracpack {

std::string format_as(Bytes v) { return fmt::format("{} B", v.count()); }
std::string format_as(MiB v) { return fmt::format("{} MiB", v.count()); }
std::string format_as(MilliGpu v) { return fmt::format("{} mGPU", v.count()); }
std::string format_as(MilliCpu v) { return fmt::format("{}m CPU", v.count()); }

}  // namespace fracpack
