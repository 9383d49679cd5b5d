#include "plugin_api/extender_args.hpp"

#include <fmt/format.h>

#include "fracpack/k8s/object_stream.hpp"
#include "fracpack/core/quoting.hpp"
#include "plugin_api/json_text.hpp"

namespace fracpack::api {
namespace {

namespace od = simdjson::ondemand;

Status invalid(std::string message) { return {Code::kInvalidArgument, std::move(message)}; }

/// The body is not JSON: where and why, in words (nlohmann's), else simdjson's error.
Status not_json(simdjson::error_code e, std::string_view body) {
  std::string why = json_syntax_error(body);
  return invalid(fmt::format("the body is not valid JSON: {}", why.empty() ? simdjson::error_message(e) : why));
}

/// nlohmann's names of JSON types, as the other verbs' messages use them.
const char* type_name(od::json_type t) {
  switch (t) {
    case od::json_type::array: return "array";
    case od::json_type::object: return "object";
    case od::json_type::number: return "number";
    case od::json_type::string: return "string";
    case od::json_type::boolean: return "boolean";
    case od::json_type::null: return "null";
  }
  return "value";
}

/// The text of any value, whatever its type (consumes it).
simdjson::error_code raw_text(od::value& v, od::json_type type, std::string_view& text) {
  if (type == od::json_type::object) {
    od::object o;
    if (auto e = v.get_object().get(o)) return e;
    return o.raw_json().get(text);
  }
  if (type == od::json_type::array) {
    od::array a;
    if (auto e = v.get_array().get(a)) return e;
    return a.raw_json().get(text);
  }
  text = v.raw_json_token();
  return simdjson::SUCCESS;
}

}  // namespace

Status ExtenderArgsReader::read(std::string_view body, const char* type) {
  pod_ = nullptr;
  names_.clear();
  items_.clear();
  documents_.clear();
  objects_.clear();
  objects_built_ = false;
  cache_capable_ = true;
  if (k8s::too_deep_json(body)) return invalid(std::string("the body ") + k8s::kTooDeep);

  od::document doc;
  if (auto e = parser_.iterate(body, doc)) return not_json(e, body);
  od::json_type root_type{};
  if (auto e = doc.type().get(root_type)) return not_json(e, body);
  if (root_type != od::json_type::object) return invalid(fmt::format("the body must be a JSON object, not a {}", type_name(root_type)));
  od::object root;
  if (auto e = doc.get_object().get(root)) return not_json(e, body);

  std::string_view pod_text;
  std::string_view nodes_text;
  bool has_names = false;
  for (auto field_result : root) {
    od::field field;
    if (auto e = std::move(field_result).get(field)) return not_json(e, body);
    std::string_view key;
    if (auto e = field.unescaped_key().get(key)) return not_json(e, body);
    od::value value = field.value();
    od::json_type vt{};
    if (auto e = value.type().get(vt)) return not_json(e, body);
    if (key == "Pod") {
      if (vt != od::json_type::object) return invalid(fmt::format("{}.Pod must be an object", type));
      if (auto e = raw_text(value, vt, pod_text)) return not_json(e, body);
    } else if (key == "NodeNames") {
      names_.clear();  // a field sent twice: the last one counts, as in any JSON decoder
      has_names = vt != od::json_type::null;
      if (vt == od::json_type::null) continue;
      if (vt != od::json_type::array) return invalid(fmt::format("{}.NodeNames must be a list of strings", type));
      od::array names;
      if (auto e = value.get_array().get(names)) return not_json(e, body);
      for (auto item : names) {
        od::json_type it{};
        if (auto e = item.type().get(it)) return not_json(e, body);
        if (it != od::json_type::string) return invalid(fmt::format("{}.NodeNames must be a list of strings", type));
        std::string_view name;
        if (auto e = item.get_string().get(name)) return not_json(e, body);
        names_.push_back(name);
      }
    } else {
      // Nodes, and fields fracpack does not use (read fully, so a malformed value is refused).
      std::string_view text;
      if (auto e = raw_text(value, vt, text)) return not_json(e, body);
      if (key == "Nodes") {
        nodes_text = vt == od::json_type::null ? std::string_view() : text;
      } else if (!nlohmann::json::accept(text)) {
        return invalid(fmt::format("the body is not valid JSON: {}.{} is malformed", type, excerpt(key)));
      }
    }
  }
  if (!doc.current_location().error()) return invalid("the body has content after its JSON object");

  if (pod_text.empty()) return invalid(fmt::format("{}.Pod must be an object", type));
  pod_ = nlohmann::json::parse(pod_text, nullptr, /*allow_exceptions=*/false);
  if (pod_.is_discarded()) return invalid(fmt::format("the body is not valid JSON: {}.Pod is malformed", type));
  if (has_names && !nodes_text.empty()) {
    return invalid(fmt::format("{}: give NodeNames (nodeCacheCapable) or Nodes, not both", type));
  }
  if (has_names) return Status::ok();

  if (nodes_text.empty()) return invalid(fmt::format("{} has neither NodeNames nor Nodes", type));
  cache_capable_ = false;
  return read_nodes(nodes_text, type);
}

Status ExtenderArgsReader::read_nodes(std::string_view text, const char* type) {
  simdjson::dom::element list;
  if (auto e = nodes_parser_.parse(text.data(), text.size()).get(list)) {
    return invalid(fmt::format("the body is not valid JSON: {}.Nodes is malformed ({})", type, simdjson::error_message(e)));
  }
  simdjson::dom::element items;
  if (!list.is_object() || list["items"].get(items) != simdjson::SUCCESS || !(items.is_array() || items.is_null())) {
    return invalid(fmt::format("{}.Nodes must be a NodeList with items", type));
  }
  if (!items.is_array()) return Status::ok();
  std::size_t index = 0;
  for (simdjson::dom::element n : simdjson::dom::array(items)) {
    std::string_view name;
    if (n.at_pointer("/metadata/name").get(name) != simdjson::SUCCESS || name.empty()) {
      return invalid(fmt::format("{}.Nodes.items[{}] needs metadata.name", type, index));
    }
    names_.push_back(name);
    items_.push_back(n);
    ++index;
  }
  return Status::ok();
}

const std::vector<const nlohmann::json*>& ExtenderArgsReader::node_objects() const {
  if (objects_built_) return objects_;
  documents_.reserve(items_.size());
  for (const auto& n : items_) {
    // simdjson parsed and validated each item already; a discarded one (never expected) becomes
    // null, which the node decoder refuses by name.
    auto document = nlohmann::json::parse(simdjson::minify(n), nullptr, /*allow_exceptions=*/false);
    documents_.push_back(document.is_discarded() ? nlohmann::json() : std::move(document));
  }
  for (const auto& d : documents_) objects_.push_back(&d);
  objects_built_ = true;
  return objects_;
}

std::string ExtenderArgsReader::node_text(std::size_t i) const { return simdjson::minify(items_.at(i)); }

void ExtenderArgsReader::trim(std::size_t keep) {
  pod_ = nullptr;
  items_.clear();
  std::vector<nlohmann::json>().swap(documents_);
  objects_.clear();
  objects_built_ = false;
  names_.clear();
  if (nodes_parser_.capacity() > keep) nodes_parser_ = simdjson::dom::parser{};
  if (names_.capacity() * sizeof(std::string_view) > keep) std::vector<std::string_view>().swap(names_);
  parser_.trim(keep);
}

}  // namespace fracpack::api
