#include "plugin_api/log_format.hpp"

#include <chrono>
#include <memory>

#include <fmt/chrono.h>
#include <nlohmann/json.hpp>
#include <spdlog/pattern_formatter.h>

#include "fracpack/core/quoting.hpp"

namespace fracpack::api {
namespace {

thread_local const LogFields* current_fields = nullptr;

/// "%*": the message, printable().
class EscapedMessage final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm& /*time*/, spdlog::memory_buf_t& dest) override {
    const std::string text = printable(std::string_view(msg.payload.data(), msg.payload.size()));
    dest.append(text.data(), text.data() + text.size());
  }
  [[nodiscard]] std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<EscapedMessage>(); }
};

/// RFC 3339 in UTC with milliseconds: 2026-12-03T11:29:10.123Z.
std::string utc_time(spdlog::log_clock::time_point t) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  // fmt::gmtime, not a time_point: fmt 9 formats a time_point in local time.
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:03}Z", fmt::gmtime(static_cast<std::time_t>(ms / 1000)), ms % 1000);
}

/// One JSON object per line. The JSON encoder escapes control characters; invalid UTF-8 is
/// replaced (U+FFFD), so no message can break the line or the object.
class JsonLines final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    nlohmann::ordered_json line{{"time", utc_time(msg.time)},
                        {"level", std::string(spdlog::level::to_string_view(msg.level).data(),
                                              spdlog::level::to_string_view(msg.level).size())},
                        {"logger", std::string(msg.logger_name.data(), msg.logger_name.size())},
                        {"msg", std::string(msg.payload.data(), msg.payload.size())}};
    if (const LogFields* f = current_fields) add_fields(*f, line);
    const std::string text = line.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + '\n';
    dest.append(text.data(), text.data() + text.size());
  }
  [[nodiscard]] std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<JsonLines>(); }

 private:
  static void add_fields(const LogFields& f, nlohmann::ordered_json& line) {
    auto put = [&](const char* key, std::string_view value) {
      if (!value.empty()) line[key] = std::string(value);
    };
    put("verb", f.verb);
    put("pod", f.pod);
    put("node", f.node);
    if (f.gpus != nullptr) line["gpus"] = *f.gpus;
    put("code", f.code);
    if (f.duration_seconds) line["duration_seconds"] = *f.duration_seconds;
  }
};

}  // namespace

ScopedLogFields::ScopedLogFields(const LogFields& fields) : previous_(current_fields) { current_fields = &fields; }
ScopedLogFields::~ScopedLogFields() { current_fields = previous_; }

void escape_log_messages(spdlog::logger& logger) {
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<EscapedMessage>('*').set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%n] [%^%l%$] %*");
  logger.set_formatter(std::move(formatter));
}

void set_log_format(spdlog::logger& logger, LogFormat format) {
  if (format == LogFormat::kJson) {
    logger.set_formatter(std::make_unique<JsonLines>());
  } else {
    escape_log_messages(logger);
  }
}

}  // namespace fracpack::api
