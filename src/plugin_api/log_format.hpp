// The server's log lines: every message goes through printable() (fracpack/core/quoting.hpp), so a name
// from a request with a newline or an escape sequence in it cannot forge a log line or drive the
// terminal of whoever reads the log. Sites log names as they are; this is the one place that
// escapes them, whichever front or watch logged. Internal to src/plugin_api/.
#pragma once

#include <spdlog/logger.h>

namespace fracpack::api {

/// Sets `logger`'s pattern to spdlog's default ("[time] [name] [level] message", the level in
/// colour where the sink has colours) with the message escaped by printable().
void escape_log_messages(spdlog::logger& logger);

}  // namespace fracpack::api
