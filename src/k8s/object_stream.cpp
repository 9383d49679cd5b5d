#include "fracpack/k8s/object_stream.hpp"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

#include <yaml-cpp/yaml.h>

namespace fracpack::k8s {
namespace {

using nlohmann::json;

bool is_yaml_null(const std::string& s) {
  return s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL";
}

/// Types a plain YAML scalar: integer, decimal, bool, null, else string.
json plain_scalar(const std::string& s) {
  if (is_yaml_null(s)) return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  const char* first = s.data();
  const char* last = s.data() + s.size();
  if (*first == '+') ++first;
  std::int64_t i = 0;
  if (auto [p, ec] = std::from_chars(first, last, i); ec == std::errc() && p == last) return i;
  // A decimal only when it is digits with one point (no "1e3", "inf", ".nan": those stay text
  // so quantity parsing sees them as written).
  bool digit = false;
  bool point = false;
  bool plain_decimal = true;
  for (const char* c = first; c != last; ++c) {
    if (*c >= '0' && *c <= '9') {
      digit = true;
    } else if (*c == '.' && !point) {
      point = true;
    } else if (!(*c == '-' && c == first)) {
      plain_decimal = false;
      break;
    }
  }
  if (plain_decimal && digit && point) {
    double d = 0;
    if (auto [p, ec] = std::from_chars(first, last, d); ec == std::errc() && p == last) return d;
  }
  return s;
}

json to_json(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Scalar:
      // yaml-cpp tags plain scalars "?" and quoted ones "!".
      if (node.Tag() == "!") return node.Scalar();
      return plain_scalar(node.Scalar());
    case YAML::NodeType::Sequence: {
      json out = json::array();
      for (const auto& item : node) out.push_back(to_json(item));
      return out;
    }
    case YAML::NodeType::Map: {
      json out = json::object();
      for (const auto& kv : node) out[kv.first.as<std::string>()] = to_json(kv.second);
      return out;
    }
  }
  return nullptr;
}

/// Appends `doc` to `out`, flattening Lists; null documents (an empty `---`) are skipped.
Status append_objects(const json& doc, std::vector<json>& out, std::string_view source) {
  if (doc.is_null()) return Status::ok();
  if (doc.is_array()) {
    for (const auto& item : doc) {
      if (auto st = append_objects(item, out, source); !st.is_ok()) return st;
    }
    return Status::ok();
  }
  if (!doc.is_object()) {
    return invalid_argument("{}: a document is a {}, not a Kubernetes object", source, doc.type_name());
  }
  auto items = doc.find("items");
  std::string kind = kind_of(doc);
  if (items != doc.end() && (kind.empty() || kind.ends_with("List"))) {
    if (!items->is_array() && !items->is_null()) {
      return invalid_argument("{}: {}.items must be a list", source, kind.empty() ? "List" : kind);
    }
    if (items->is_array()) {
      for (const auto& item : *items) {
        if (auto st = append_objects(item, out, source); !st.is_ok()) return st;
      }
    }
    return Status::ok();
  }
  out.push_back(doc);
  return Status::ok();
}

}  // namespace

Result<std::vector<json>> read_objects(std::string_view text, std::string_view source) {
  std::vector<json> out;
  auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return out;
  if (text[first] == '{' || text[first] == '[') {
    json doc;
    try {
      doc = json::parse(text.begin(), text.end());
    } catch (const json::parse_error& e) {
      return invalid_argument("{}: not valid JSON: {}", source, e.what());
    }
    if (auto st = append_objects(doc, out, source); !st.is_ok()) return st;
    return out;
  }
  try {
    for (const auto& doc : YAML::LoadAll(std::string(text))) {
      if (auto st = append_objects(to_json(doc), out, source); !st.is_ok()) return st;
    }
  } catch (const YAML::Exception& e) {
    return invalid_argument("{}: not valid YAML: {}", source, e.what());
  }
  return out;
}

Result<std::vector<json>> read_objects_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(Code::kNotFound, fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return read_objects(buffer.str(), path);
}

std::string kind_of(const json& object) {
  auto it = object.find("kind");
  if (it == object.end() || !it->is_string()) return "";
  return it->get<std::string>();
}

std::string describe(const json& object, std::size_t index) {
  std::string kind = kind_of(object);
  if (kind.empty()) kind = "object";
  std::string name;
  std::string ns;
  if (auto md = object.find("metadata"); md != object.end() && md->is_object()) {
    if (auto n = md->find("name"); n != md->end() && n->is_string()) name = n->get<std::string>();
    if (auto n = md->find("namespace"); n != md->end() && n->is_string()) ns = n->get<std::string>();
  }
  if (name.empty()) return fmt::format("{} #{}", kind, index + 1);
  if (ns.empty()) return fmt::format("{} {}", kind, name);
  return fmt::format("{} {}/{}", kind, ns, name);
}

}  // namespace fracpack::k8s
