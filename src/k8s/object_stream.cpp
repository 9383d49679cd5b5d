#include "fracpack/k8s/object_stream.hpp"

#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "fracpack/core/quoting.hpp"

namespace fracpack::k8s {
namespace {

/// A parser's own message quotes the text it stopped at: kept whole up to this, cut after.
constexpr std::size_t kLibraryMessageChars = 256;

using nlohmann::json;

/// Kubernetes objects nest a dozen levels; anything near this is an attack or a mistake, and
/// deeper input would exhaust the stack of the recursive parsers and copies.
constexpr int kMaxDepth = 128;
/// YAML aliases may repeat a node; converting more nodes than the text could hold without them (one
/// per byte) plus this margin means aliases are expanding a "billion laughs" file: stop.
constexpr std::size_t kExpansionMargin = 100'000;

bool is_yaml_null(const std::string& s) {
  return s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL";
}

/// Types a plain YAML scalar: integer, bool, null, else string. Decimals stay text, exactly as
/// written ("0.00001" must not become "1e-05" in an annotation).
json plain_scalar(const std::string& s) {
  if (is_yaml_null(s)) return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  const char* first = s.data();
  const char* last = s.data() + s.size();
  if (*first == '+') ++first;
  std::int64_t i = 0;
  if (auto [p, ec] = std::from_chars(first, last, i); ec == std::errc() && p == last && first != last) return i;
  return s;
}

/// Converts a YAML tree to JSON, refusing alias cycles, runaway alias expansion and duplicate keys.
class YamlToJson {
 public:
  explicit YamlToJson(std::size_t budget) : budget_(budget) {}

  json convert(const YAML::Node& node) {
    if (budget_ == 0) throw std::length_error("YAML aliases expand to too many nodes");
    --budget_;
    for (const auto& ancestor : path_) {
      if (ancestor.is(node)) throw std::length_error("a YAML alias refers to a node that contains it");
    }
    if (path_.size() > static_cast<std::size_t>(kMaxDepth)) throw std::length_error("nesting is too deep");
    switch (node.Type()) {
      case YAML::NodeType::Null:
      case YAML::NodeType::Undefined:
        return nullptr;
      case YAML::NodeType::Scalar:
        // yaml-cpp tags plain scalars "?" and quoted ones "!".
        return node.Tag() == "!" ? json(node.Scalar()) : plain_scalar(node.Scalar());
      case YAML::NodeType::Sequence: {
        path_.push_back(node);
        json out = json::array();
        for (const auto& item : node) out.push_back(convert(item));
        path_.pop_back();
        return out;
      }
      case YAML::NodeType::Map: {
        path_.push_back(node);
        json out = json::object();
        for (const auto& kv : node) {
          if (!kv.first.IsScalar()) throw std::invalid_argument("a map key is not a scalar");
          const std::string key = kv.first.Scalar();
          if (out.contains(key)) throw std::invalid_argument("duplicate key \"" + excerpt(key) + "\"");
          out[key] = convert(kv.second);
        }
        path_.pop_back();
        return out;
      }
    }
    return nullptr;
  }

 private:
  std::size_t budget_;
  std::vector<YAML::Node> path_;
};

/// Appends the objects of one parsed document: an object, a List's items, or an array of objects.
Status append_objects(const json& doc, std::size_t doc_index, std::vector<json>& out, std::string_view source) {
  if (doc.is_null()) return Status::ok();
  const json* items = &doc;
  std::string kind = doc.is_object() ? kind_of(doc) : "";
  if (doc.is_object()) {
    auto it = doc.find("items");
    if (it == doc.end() || !(kind.empty() || kind.ends_with("List"))) {
      out.push_back(doc);
      return Status::ok();
    }
    if (it->is_null()) return Status::ok();
    if (!it->is_array()) {
      return invalid_argument("{}: document {}: {}.items must be a list", source, doc_index + 1,
                              kind.empty() ? "List" : kind);
    }
    items = &*it;
  } else if (!doc.is_array()) {
    return invalid_argument("{}: document {} is a {}, not a Kubernetes object", source, doc_index + 1, doc.type_name());
  }
  for (std::size_t i = 0; i < items->size(); ++i) {
    const json& item = (*items)[i];
    if (!item.is_object()) {
      return invalid_argument("{}: document {}, item {} is a {}, not a Kubernetes object", source, doc_index + 1, i + 1,
                              item.type_name());
    }
    out.push_back(item);
  }
  return Status::ok();
}

}  // namespace

Result<std::vector<json>> read_yaml(std::string_view text, std::string_view source);

Result<std::vector<json>> read_objects(std::string_view text, std::string_view source) {
  std::vector<json> out;
  if (text.find('\0') != std::string_view::npos) {
    return invalid_argument("{}: contains NUL bytes; expected YAML or JSON text", source);
  }
  auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return out;
  const bool is_json = text[first] == '{' || text[first] == '[';
  if (max_bracket_depth(text, is_json) > kMaxDepth) {
    return invalid_argument("{}: nesting is deeper than {} levels; Kubernetes objects are far shallower", source,
                            kMaxDepth);
  }
  if (is_json) {
    json doc;
    std::vector<std::set<std::string>> keys;  // the keys seen in each open object
    std::string duplicate;
    const json::parser_callback_t refuse_duplicates = [&](int /*depth*/, json::parse_event_t event, json& parsed) {
      if (event == json::parse_event_t::object_start) keys.emplace_back();
      if (event == json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
      if (event == json::parse_event_t::key && !keys.empty() && !keys.back().insert(parsed.get<std::string>()).second &&
          duplicate.empty()) {
        duplicate = parsed.get<std::string>();
      }
      return true;
    };
    try {
      doc = json::parse(text.begin(), text.end(), refuse_duplicates);
    } catch (const json::parse_error& e) {
      // `{kind: Pod, ...}` is flow-style YAML, not JSON: try YAML before giving up.
      auto yaml = read_yaml(text, source);
      if (yaml.is_ok()) return yaml;
      return invalid_argument("{}: not valid JSON: {}", source, excerpt(e.what(), kLibraryMessageChars));
    } catch (const json::exception& e) {  // valid syntax, but a number too large for a double
      return invalid_argument("{}: not valid JSON: {}", source, excerpt(e.what(), kLibraryMessageChars));
    }
    if (!duplicate.empty()) return invalid_argument("{}: duplicate key \"{}\" in a JSON object", source, excerpt(duplicate));
    if (auto st = append_objects(doc, 0, out, source); !st.is_ok()) return st;
    return out;
  }
  return read_yaml(text, source);
}

Result<std::vector<json>> read_yaml(std::string_view text, std::string_view source) {
  std::vector<json> out;
  try {
    std::size_t index = 0;
    YamlToJson converter(text.size() + kExpansionMargin);
    for (const auto& doc : YAML::LoadAll(std::string(text))) {
      if (auto st = append_objects(converter.convert(doc), index++, out, source); !st.is_ok()) return st;
    }
  } catch (const YAML::Exception& e) {
    return invalid_argument("{}: not valid YAML: {}", source, excerpt(e.what(), kLibraryMessageChars));
  } catch (const std::exception& e) {
    return invalid_argument("{}: not accepted as YAML: {}", source, excerpt(e.what(), kLibraryMessageChars));
  }
  return out;
}

Result<std::vector<json>> read_objects_file(const std::string& path) {
  constexpr std::streamsize kMaxBytes = 512LL << 20;
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(Code::kNotFound, fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  std::string text;
  std::array<char, 1 << 16> buffer{};
  while (in.read(buffer.data(), buffer.size()) || in.gcount() > 0) {
    const auto got = static_cast<std::size_t>(in.gcount());
    if (std::memchr(buffer.data(), '\0', got) != nullptr) {  // binary data: stop at once
      return invalid_argument("{}: contains NUL bytes; expected YAML or JSON text", path);
    }
    text.append(buffer.data(), got);
    if (static_cast<std::streamsize>(text.size()) > kMaxBytes) {
      return invalid_argument("{}: larger than {} MiB; split the input", path, kMaxBytes >> 20);
    }
  }
  if (in.bad()) return Status(Code::kNotFound, fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  return read_objects(text, path);
}

std::vector<InputObject> with_origins(std::vector<json> objects, std::string_view source) {
  std::vector<InputObject> out;
  out.reserve(objects.size());
  for (std::size_t i = 0; i < objects.size(); ++i) {
    out.push_back({std::move(objects[i]), fmt::format("{}, object {}", source, i + 1)});
  }
  return out;
}

Result<std::vector<InputObject>> read_input_file(const std::string& path) {
  auto objects = read_objects_file(path);
  if (!objects) return objects.status();
  return with_origins(std::move(*objects), path);
}

std::string kind_of(const json& object) {
  auto it = object.find("kind");
  if (it == object.end() || !it->is_string()) return "";
  return it->get<std::string>();
}

std::string metadata_string(const json& object, const char* field) {
  if (!object.is_object()) return "";
  auto md = object.find("metadata");
  if (md == object.end() || !md->is_object()) return "";
  auto it = md->find(field);
  return it != md->end() && it->is_string() ? it->get<std::string>() : "";
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
  if (name.empty()) return fmt::format("{} #{}", excerpt(kind), index + 1);
  if (ns.empty()) return fmt::format("{} {}", excerpt(kind), excerpt(name));
  return fmt::format("{} {}/{}", excerpt(kind), excerpt(ns), excerpt(name));
}

/// Deepest bracket nesting in `text`. JSON strings are skipped; in YAML quotes are not tracked,
/// so brackets inside strings count too (harmless: the limit is far above real objects).
int max_bracket_depth(std::string_view text, bool json_strings) {
  int depth = 0;
  int max_depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"' && json_strings) {
      in_string = true;
    } else if (c == '[' || c == '{') {
      max_depth = std::max(max_depth, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return max_depth;
}

bool too_deep_json(std::string_view text) { return max_bracket_depth(text, true) > kMaxDepth; }

}  // namespace fracpack::k8s
