// libFuzzer target: the Kubernetes quantity parser ("16Gi", "1.5e3m", "0.5"), and the MiB reading
// of the flags and annotations built on it. Any text: a value or an error, never a crash or an
// overflow (UBSan aborts on signed overflow in this build).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fracpack/core/quantity.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)fracpack::parse_quantity(text, "fuzz");
  (void)fracpack::parse_mib_or_quantity(text, "fuzz");
  return 0;
}
