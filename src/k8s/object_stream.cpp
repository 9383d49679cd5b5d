#include "fracpack/k8s/object_stream.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <set>

#include "fracpack/core/quoting.hpp"
#include "yaml_reader.hpp"

namespace fracpack::k8s {
namespace {

/// A parser's own message quotes the text it stopped at: kept whole up to this, cut after.
constexpr std::size_t kLibraryMessageChars = 256;

using nlohmann::json;

/// Kubernetes objects nest a dozen levels; anything near this is an attack or a mistake, and
/// deeper input would exhaust the stack of the recursive parsers and copies.
constexpr int kMaxDepth = 128;
/// YAML aliases may repeat a node; more nodes than this, for a text of `bytes`, means aliases are
/// expanding a "billion laughs" file (docs/requests.md rule 23).
std::size_t max_yaml_nodes(std::size_t bytes) { return std::max<std::size_t>(1'000'000, 20 * bytes); }

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

Result<std::vector<json>> read_yaml(std::string_view text, std::string_view source) {
  auto docs = parse_yaml_documents(text, source, kMaxDepth, max_yaml_nodes(text.size()));
  if (!docs) return docs.status();
  std::vector<json> out;
  for (std::size_t i = 0; i < docs->size(); ++i) {
    if (auto st = append_objects((*docs)[i], i, out, source); !st.is_ok()) return st;
  }
  return out;
}

}  // namespace

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

namespace {

/// The whole text of `in` (at most 512 MiB, no NUL bytes); `name` is what messages call it.
Result<std::string> read_text(std::istream& in, const std::string& name) {
  constexpr std::streamsize kMaxBytes = 512LL << 20;
  std::string text;
  std::array<char, 1 << 16> buffer{};
  while (in.read(buffer.data(), buffer.size()) || in.gcount() > 0) {
    const auto got = static_cast<std::size_t>(in.gcount());
    if (std::memchr(buffer.data(), '\0', got) != nullptr) {  // binary data: stop at once
      return invalid_argument("{}: contains NUL bytes; expected YAML or JSON text", name);
    }
    text.append(buffer.data(), got);
    if (static_cast<std::streamsize>(text.size()) > kMaxBytes) {
      return invalid_argument("{}: larger than {} MiB; split the input", name, kMaxBytes >> 20);
    }
  }
  if (in.bad()) return Status(Code::kNotFound, fmt::format("cannot read {}: {}", name, std::strerror(errno)));
  return text;
}

}  // namespace

Result<std::vector<json>> read_objects_file(const std::string& path) {
  if (path == kStandardInput) {
    auto text = read_text(std::cin, "standard input");
    if (!text) return text.status();
    return read_objects(*text, "standard input");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(Code::kNotFound, fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  auto text = read_text(in, path);
  if (!text) return text.status();
  return read_objects(*text, path);
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
  return with_origins(std::move(*objects), path == kStandardInput ? "standard input" : path);
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
