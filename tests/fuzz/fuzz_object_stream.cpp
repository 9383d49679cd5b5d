// libFuzzer target: the object-stream reader (YAML or JSON, documents, Lists) that every file
// input goes through (place, serve --cluster, replay, the quota inputs). Any input: an error or
// objects, never a crash, a hang or unbounded memory.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fracpack/k8s/object_stream.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto objects = fracpack::k8s::read_objects(text, "fuzz");
  if (objects) {
    std::size_t i = 0;
    for (const auto& object : *objects) {
      (void)fracpack::k8s::kind_of(object);
      (void)fracpack::k8s::describe(object, i++);
    }
  }
  return 0;
}
