#include "fracpack/queues/queue.hpp"

#include <fmt/format.h>

namespace fracpack::queues {

std::string_view resource_name(Resource r) {
  switch (r) {
    case Resource::kGpu: return "gpu";
    case Resource::kCpu: return "cpu";
    case Resource::kMemory: return "memory";
  }
  return "?";
}

std::string format_amount(Resource r, std::int64_t amount) {
  if (amount == kUnlimited) return "-1";
  switch (r) {
    case Resource::kGpu: {
      // Thousandths of a GPU, printed without trailing zeros: 2500 → "2.5".
      std::string s = fmt::format("{}.{:03}", amount / 1000, amount % 1000);
      while (s.back() == '0') s.pop_back();
      if (s.back() == '.') s.pop_back();
      return s;
    }
    case Resource::kCpu: return fmt::format("{}", amount);
    case Resource::kMemory: {
      // Bytes to MB (10^6 bytes), rounded up so a suggested limit is never too small.
      return fmt::format("{}", (amount + 999'999) / 1'000'000);
    }
  }
  return "?";
}

}  // namespace fracpack::queues
