// libFuzzer target: the JSON front's request reader (kube-scheduler's ExtenderArgs, and the other
// verbs' bodies through the same reader), then the pod it carries through the decoder.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fracpack/k8s/decode.hpp"
#include "plugin_api/extender_args.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  fracpack::api::ExtenderArgsReader reader;
  if (!reader.read(body).is_ok()) return 0;
  if (!reader.cache_capable()) {
    const auto& objects = reader.node_objects();
    for (std::size_t i = 0; i < objects.size(); ++i) (void)reader.node_text(i);
  }
  static const fracpack::DecodeConfig config;
  static const fracpack::PriorityClasses classes;
  (void)fracpack::k8s::decode_pod(reader.pod(), config, classes);
  return 0;
}
