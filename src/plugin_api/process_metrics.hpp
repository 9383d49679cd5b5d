// The process metrics every Prometheus client library exports (client_golang's process
// collector): CPU time, memory, file descriptors, start time, read from /proc/self. Internal to
// src/plugin_api/.
#pragma once

#include <string>

namespace fracpack::api {

/// process_cpu_seconds_total, process_resident_memory_bytes, process_virtual_memory_bytes,
/// process_open_fds, process_max_fds, process_start_time_seconds, in Prometheus text; the ones
/// /proc cannot tell (not Linux, or /proc not mounted) are left out.
std::string process_metrics_text();

}  // namespace fracpack::api
