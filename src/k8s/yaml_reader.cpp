#include "yaml_reader.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <yaml.h>

#include "fracpack/core/quoting.hpp"

namespace fracpack::k8s {
namespace {

using nlohmann::json;

/// A parser's own message quotes the text it stopped at: kept whole up to this, cut after.
constexpr std::size_t kLibraryMessageChars = 256;

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

std::string text_of(const yaml_char_t* s) { return s == nullptr ? std::string() : reinterpret_cast<const char*>(s); }

/// A scalar event's value: quoted and `!!str` scalars are strings, plain ones are typed.
json scalar_value(const yaml_event_t& e) {
  std::string text(reinterpret_cast<const char*>(e.data.scalar.value), e.data.scalar.length);
  const std::string tag = text_of(e.data.scalar.tag);
  if (e.data.scalar.style != YAML_PLAIN_SCALAR_STYLE || tag == "!" || tag == YAML_STR_TAG) return text;
  return plain_scalar(text);
}

/// libyaml's parser over one text, and the event it last produced; both freed on scope exit.
class EventStream {
 public:
  explicit EventStream(std::string_view text) {
    yaml_parser_initialize(&parser_);
    yaml_parser_set_input_string(&parser_, reinterpret_cast<const unsigned char*>(text.data()), text.size());
  }
  ~EventStream() {
    if (has_event_) yaml_event_delete(&event_);
    yaml_parser_delete(&parser_);
  }
  EventStream(const EventStream&) = delete;
  EventStream& operator=(const EventStream&) = delete;

  /// The next event, or nullptr after a syntax error (then error() says where and why).
  const yaml_event_t* next() {
    if (has_event_) yaml_event_delete(&event_);
    has_event_ = yaml_parser_parse(&parser_, &event_) != 0;
    return has_event_ ? &event_ : nullptr;
  }

  std::string error() const {
    std::string where = fmt::format("line {}, column {}", parser_.problem_mark.line + 1, parser_.problem_mark.column + 1);
    std::string problem = parser_.problem != nullptr ? parser_.problem : "unreadable input";
    if (parser_.context != nullptr) problem = fmt::format("{} {}", parser_.context, problem);
    return excerpt(fmt::format("{} at {}", problem, where), kLibraryMessageChars);
  }

 private:
  yaml_parser_t parser_{};
  yaml_event_t event_{};
  bool has_event_ = false;
};

/// Builds JSON documents from parser events: containers on a stack, anchors remembered for their
/// aliases. Throws std::invalid_argument for what YAML allows and Kubernetes objects cannot be.
class DocumentBuilder {
 public:
  DocumentBuilder(int max_depth, std::size_t max_nodes) : max_depth_(max_depth), budget_(max_nodes) {}

  /// Feeds one event; returns a document when `e` ended one.
  std::optional<json> on(const yaml_event_t& e) {
    switch (e.type) {
      case YAML_SCALAR_EVENT: add(scalar(e), text_of(e.data.scalar.anchor)); break;
      case YAML_ALIAS_EVENT: add(alias(text_of(e.data.alias.anchor)), ""); break;
      case YAML_SEQUENCE_START_EVENT: open(json::array(), e.data.sequence_start.anchor); break;
      case YAML_MAPPING_START_EVENT: open(json::object(), e.data.mapping_start.anchor); break;
      case YAML_SEQUENCE_END_EVENT:
      case YAML_MAPPING_END_EVENT: close(); break;
      case YAML_DOCUMENT_END_EVENT: return take_document();
      default: break;  // stream and document starts carry nothing we keep
    }
    return std::nullopt;
  }

 private:
  /// A finished value, the number of nodes it stands for, its height (1 for a scalar: an alias
  /// may bring a tall value into a deep place, and the limit is on the result), and its text when
  /// it was a scalar (a map key must be one).
  struct Value {
    json value;
    std::size_t nodes = 1;
    std::size_t height = 1;
    std::optional<std::string> scalar_text;
  };
  /// An open sequence or mapping, with its anchor and, in a mapping, the key awaiting its value.
  struct Frame {
    Value node;
    std::string anchor;
    std::optional<std::string> key;
  };

  Value scalar(const yaml_event_t& e) {
    charge(1);
    return {scalar_value(e), 1, 1,
            std::string(reinterpret_cast<const char*>(e.data.scalar.value), e.data.scalar.length)};
  }

  Value alias(const std::string& anchor) {
    for (const auto& frame : stack_) {
      if (frame.anchor == anchor) throw std::invalid_argument("a YAML alias refers to a node that contains it");
    }
    auto it = anchors_.find(anchor);
    if (it == anchors_.end()) throw std::invalid_argument(fmt::format("alias *{} names no anchor", excerpt(anchor)));
    charge(it->second.nodes);
    return it->second;
  }

  void open(json container, const yaml_char_t* anchor) {
    if (!stack_.empty() && stack_.back().node.value.is_object() && !stack_.back().key) {
      throw std::invalid_argument("a map key is not a scalar");
    }
    if (stack_.size() >= static_cast<std::size_t>(max_depth_)) throw std::length_error("nesting is too deep");
    charge(1);
    stack_.push_back({{std::move(container), 1, 1, std::nullopt}, text_of(anchor), std::nullopt});
  }

  void close() {
    Frame frame = std::move(stack_.back());
    stack_.pop_back();
    const std::string anchor = std::move(frame.anchor);
    add(std::move(frame.node), anchor);
  }

  /// Puts a finished value in its place (the document, a sequence, a key or a value), and
  /// remembers it under `anchor` when it has one.
  void add(Value v, const std::string& anchor) {
    if (!anchor.empty()) anchors_[anchor] = v;
    if (stack_.empty()) {
      document_ = std::move(v.value);
      return;
    }
    if (stack_.size() + v.height > static_cast<std::size_t>(max_depth_)) throw std::length_error("nesting is too deep");
    Frame& parent = stack_.back();
    parent.node.nodes += v.nodes;
    parent.node.height = std::max(parent.node.height, v.height + 1);
    if (parent.node.value.is_array()) {
      parent.node.value.push_back(std::move(v.value));
    } else if (!parent.key) {
      if (!v.scalar_text) throw std::invalid_argument("a map key is not a scalar");
      if (parent.node.value.contains(*v.scalar_text)) {
        throw std::invalid_argument(fmt::format("duplicate key \"{}\"", excerpt(*v.scalar_text)));
      }
      parent.key = std::move(v.scalar_text);
    } else {
      parent.node.value[*parent.key] = std::move(v.value);
      parent.key.reset();
    }
  }

  void charge(std::size_t nodes) {
    if (nodes > budget_) throw std::length_error("YAML aliases expand to too many nodes");
    budget_ -= nodes;
  }

  std::optional<json> take_document() {
    std::optional<json> out = std::move(document_);
    document_.reset();
    if (!out) out = json(nullptr);
    return out;
  }

  int max_depth_;
  std::size_t budget_;
  std::vector<Frame> stack_;
  std::map<std::string, Value> anchors_;
  std::optional<json> document_;
};

}  // namespace

Result<std::vector<json>> parse_yaml_documents(std::string_view text, std::string_view source, int max_depth,
                                               std::size_t max_nodes) {
  std::vector<json> out;
  EventStream events(text);
  DocumentBuilder builder(max_depth, max_nodes);
  try {
    for (const yaml_event_t* e = events.next();; e = events.next()) {
      if (e == nullptr) return invalid_argument("{}: not valid YAML: {}", source, events.error());
      if (e->type == YAML_STREAM_END_EVENT) return out;
      if (auto doc = builder.on(*e)) out.push_back(std::move(*doc));
    }
  } catch (const std::exception& ex) {
    return invalid_argument("{}: not accepted as YAML: {}", source, excerpt(ex.what(), kLibraryMessageChars));
  }
}

}  // namespace fracpack::k8s
