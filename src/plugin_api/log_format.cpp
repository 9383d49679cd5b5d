#include "plugin_api/log_format.hpp"

#include <memory>

#include <spdlog/pattern_formatter.h>

#include "fracpack/core/quoting.hpp"

namespace fracpack::api {
namespace {

/// "%*": the message, printable().
class EscapedMessage final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm& /*time*/, spdlog::memory_buf_t& dest) override {
    const std::string text = printable(std::string_view(msg.payload.data(), msg.payload.size()));
    dest.append(text.data(), text.data() + text.size());
  }
  [[nodiscard]] std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<EscapedMessage>(); }
};

}  // namespace

void escape_log_messages(spdlog::logger& logger) {
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<EscapedMessage>('*').set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%n] [%^%l%$] %*");
  logger.set_formatter(std::move(formatter));
}

}  // namespace fracpack::api
