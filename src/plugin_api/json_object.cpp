#include "plugin_api/json_object.hpp"

#include <fmt/format.h>

#include "fracpack/k8s/object_stream.hpp"

namespace fracpack::api {

Result<nlohmann::json> parse_object(const std::string& bytes, const std::string& field) {
  if (k8s::too_deep_json(bytes)) {
    return Status(Code::kInvalidArgument, fmt::format("{}: {}", field, k8s::kTooDeep), field);
  }
  nlohmann::json object = nlohmann::json::parse(bytes, nullptr, /*allow_exceptions=*/false);
  if (object.is_discarded()) {
    return Status(Code::kInvalidArgument, fmt::format("{}: not JSON ({} bytes); send the object as the API server serves it", field, bytes.size()), field);
  }
  if (!object.is_object()) {
    return Status(Code::kInvalidArgument, fmt::format("{}: must be a JSON object, not a {}", field, object.type_name()), field);
  }
  return object;
}

}  // namespace fracpack::api
