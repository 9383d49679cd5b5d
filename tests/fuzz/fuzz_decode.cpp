// libFuzzer target: v1 Pod and v1 Node decoding from JSON (what the watch and every front feed
// the decoders). Any document: a clear error or a valid request or node, never a crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "fracpack/k8s/decode.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const nlohmann::json object = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (object.is_discarded()) return 0;
  static const fracpack::DecodeConfig config;
  static const fracpack::PriorityClasses classes;
  auto pod = fracpack::k8s::decode_pod(object, config, classes);
  if (pod) (void)pod->key();
  auto node = fracpack::k8s::decode_node(object, config);
  if (node) (void)node->name;
  return 0;
}
