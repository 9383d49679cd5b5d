#include "fracpack/k8s/yaml_emit.hpp"

#include <limits>
#include <new>
#include <stdexcept>

#include <fmt/format.h>
#include <yaml.h>

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

/// libyaml's emitter state, freed on scope exit.
class EmitterHandle {
 public:
  EmitterHandle() {
    if (yaml_emitter_initialize(&emitter_) == 0) throw std::bad_alloc();
  }
  ~EmitterHandle() { yaml_emitter_delete(&emitter_); }
  EmitterHandle(const EmitterHandle&) = delete;
  EmitterHandle& operator=(const EmitterHandle&) = delete;
  yaml_emitter_t* get() { return &emitter_; }

 private:
  yaml_emitter_t emitter_{};
};

/// libyaml's emitter writing into a string, block style, two-space indent, lines never folded.
/// Every event is checked as it is made and as it is emitted (yaml_emit.hpp: what throws).
class Emitter {
 public:
  Emitter() {
    yaml_emitter_set_output(emitter_.get(), &Emitter::write, &out_);
    yaml_emitter_set_unicode(emitter_.get(), 1);
    yaml_emitter_set_indent(emitter_.get(), 2);
    yaml_emitter_set_width(emitter_.get(), -1);
    yaml_event_t e{};
    emit(e, yaml_stream_start_event_initialize(&e, YAML_UTF8_ENCODING));
  }

  void document(const nlohmann::json& v) {
    yaml_event_t e{};
    emit(e, yaml_document_start_event_initialize(&e, nullptr, nullptr, nullptr, 0));
    value(v);
    emit(e, yaml_document_end_event_initialize(&e, 1));
  }

  std::string finish() {
    yaml_event_t e{};
    emit(e, yaml_stream_end_event_initialize(&e));
    return std::move(out_);
  }

 private:
  static int write(void* data, unsigned char* buffer, std::size_t size) {
    static_cast<std::string*>(data)->append(reinterpret_cast<const char*>(buffer), size);
    return 1;
  }

  /// Emits `e` if its initializer succeeded (`made` != 0); the emitter frees it either way.
  void emit(yaml_event_t& e, int made) {
    if (made == 0) throw std::invalid_argument("to_yaml: a string is not valid UTF-8");
    if (yaml_emitter_emit(emitter_.get(), &e) == 0) {  // only on a bug of ours: events out of order
      const char* problem = emitter_.get()->problem;
      throw std::logic_error(fmt::format("to_yaml: {}", problem != nullptr ? problem : "the emitter failed"));
    }
  }

  void scalar(const std::string& s, bool quoted) {
    if (s.size() > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
      throw std::length_error("to_yaml: a string longer than 2 GiB");
    }
    yaml_event_t e{};
    emit(e, yaml_scalar_event_initialize(&e, nullptr, nullptr, reinterpret_cast<const yaml_char_t*>(s.data()),
                                         static_cast<int>(s.size()), 1, 1,
                                         quoted ? YAML_DOUBLE_QUOTED_SCALAR_STYLE : YAML_PLAIN_SCALAR_STYLE));
  }

  void value(const nlohmann::json& v) {
    yaml_event_t e{};
    switch (v.type()) {
      case nlohmann::json::value_t::object:
        emit(e, yaml_mapping_start_event_initialize(&e, nullptr, nullptr, 1, YAML_BLOCK_MAPPING_STYLE));
        for (const auto& [key, item] : v.items()) {
          scalar(key, needs_quotes(key));
          value(item);
        }
        emit(e, yaml_mapping_end_event_initialize(&e));
        break;
      case nlohmann::json::value_t::array:
        emit(e, yaml_sequence_start_event_initialize(&e, nullptr, nullptr, 1, YAML_BLOCK_SEQUENCE_STYLE));
        for (const auto& item : v) value(item);
        emit(e, yaml_sequence_end_event_initialize(&e));
        break;
      case nlohmann::json::value_t::string: {
        const auto& s = v.get_ref<const std::string&>();
        scalar(s, needs_quotes(s));
        break;
      }
      case nlohmann::json::value_t::null: scalar("null", false); break;
      default: scalar(v.dump(), false); break;  // numbers and booleans: JSON's text is YAML's
    }
  }

  EmitterHandle emitter_;
  std::string out_;
};

}  // namespace

std::string to_yaml(const std::vector<nlohmann::json>& objects) {
  Emitter out;
  for (const auto& o : objects) out.document(o);
  return out.finish();
}

}  // namespace fracpack::k8s
