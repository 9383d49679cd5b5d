#include "fracpack/k8s/yaml_emit.hpp"

#include <yaml-cpp/yaml.h>

#include <fmt/format.h>

#include "fracpack/k8s/object_stream.hpp"

namespace fracpack::k8s {
namespace {

/// Whether `s` must be quoted to read back as this string (quoting is always safe; plain is
/// nicer to read): YAML indicators, edge spaces, and anything the reader types as a non-string.
bool needs_quotes(const std::string& s) {
  if (s.empty() || s.front() == ' ' || s.back() == ' ' || s.front() == '-' || s.front() == '?') return true;
  if (s.find_first_of(":#{}[],&*!|>'\"%@`\n\t\\") != std::string::npos) return true;
  auto typed = read_objects(fmt::format("v: {}\n", s), "a string");
  return !typed || typed->size() != 1 || !(*typed)[0]["v"].is_string() || (*typed)[0]["v"].get<std::string>() != s;
}

void emit(YAML::Emitter& out, const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::object:
      out << YAML::BeginMap;
      for (const auto& [key, value] : v.items()) {
        out << YAML::Key;
        if (needs_quotes(key)) out << YAML::DoubleQuoted;
        out << key << YAML::Value;
        emit(out, value);
      }
      out << YAML::EndMap;
      break;
    case nlohmann::json::value_t::array:
      out << YAML::BeginSeq;
      for (const auto& e : v) emit(out, e);
      out << YAML::EndSeq;
      break;
    case nlohmann::json::value_t::string: {
      const auto& s = v.get_ref<const std::string&>();
      if (needs_quotes(s)) out << YAML::DoubleQuoted;
      out << s;
      break;
    }
    case nlohmann::json::value_t::null: out << YAML::Null; break;
    default: out << v.dump(); break;  // numbers and booleans: JSON's text is YAML's
  }
}

}  // namespace

std::string to_yaml(const std::vector<nlohmann::json>& objects) {
  YAML::Emitter out;
  for (const auto& o : objects) {
    out << YAML::BeginDoc;
    emit(out, o);
  }
  return std::string(out.c_str()) + "\n";
}

}  // namespace fracpack::k8s
