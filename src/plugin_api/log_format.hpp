// The server's log lines (serve --log-level, --log-format):
// - text: spdlog's default layout ("[time] [name] [level] message"), every message through
//   printable() (fracpack/core/quoting.hpp), so a name from a request with a newline or an escape
//   sequence in it cannot forge a log line or drive the terminal of whoever reads the log;
// - json: one JSON object per line, {"time", "level", "logger", "msg"} and, on a decision's line,
//   its fields (LogFields): what log collectors (Loki, Elasticsearch, Cloud Logging) index.
// Sites log names as they are; this is the one place that escapes them, whichever front or watch
// logged. Internal to src/plugin_api/.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include <spdlog/logger.h>

#include "fracpack/server/serve.hpp"

namespace fracpack::api {

/// A decision's structured fields (docs/kube-scheduler.md "Logs"): each set one is a key of the
/// JSON line; text lines carry them in the message. Views: they live as long as the log call.
struct LogFields {
  std::string_view verb;  ///< "filter", "bind"
  std::string_view pod;   ///< namespace/name
  std::string_view node;
  const std::vector<int>* gpus = nullptr;  ///< the devices bound
  std::string_view code;                   ///< code_name(): "Success", "Unschedulable", "InvalidArgument", …
  std::optional<double> duration_seconds;  ///< the decision's time in the server
};

/// While alive, log lines of this thread carry `fields` (a log call is synchronous: its
/// formatter runs inside it, on the caller's thread). It points at `fields`, which must outlive
/// it: a temporary is refused.
class ScopedLogFields {
 public:
  explicit ScopedLogFields(const LogFields& fields);
  explicit ScopedLogFields(LogFields&&) = delete;
  ~ScopedLogFields();
  ScopedLogFields(const ScopedLogFields&) = delete;
  ScopedLogFields& operator=(const ScopedLogFields&) = delete;

 private:
  const LogFields* previous_;
};

/// Sets `logger`'s formatter for `format`.
void set_log_format(spdlog::logger& logger, LogFormat format);
/// Sets `logger`'s pattern to spdlog's default with the message escaped by printable() (text).
void escape_log_messages(spdlog::logger& logger);

}  // namespace fracpack::api
