#include "plugin_api/process_metrics.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <sstream>
#include <vector>

#include <fmt/format.h>

namespace fracpack::api {
namespace {

struct ProcStat {
  double cpu_seconds = 0;        ///< utime + stime
  double start_after_boot = 0;   ///< seconds
  double virtual_bytes = 0;
  double resident_bytes = 0;
};

/// /proc/self/stat's fields after the command name (which may hold spaces and parentheses).
std::optional<ProcStat> read_stat() {
  std::ifstream in("/proc/self/stat");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(text.substr(close + 1));
  std::vector<std::string> f{std::istream_iterator<std::string>(rest), std::istream_iterator<std::string>()};
  // From field 3 (state) on: utime is field 14, stime 15, starttime 22, vsize 23, rss 24.
  if (f.size() < 22) return std::nullopt;
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  auto field = [&](int n) { return std::stod(f[static_cast<std::size_t>(n - 3)]); };
  return ProcStat{(field(14) + field(15)) / ticks, field(22) / ticks, field(23), field(24) * page};
}

/// /proc/stat's btime: the boot time, seconds since the epoch.
std::optional<double> boot_time() {
  std::ifstream in("/proc/stat");
  for (std::string key; in >> key;) {
    if (key == "btime") {
      double t = 0;
      if (in >> t) return t;
      return std::nullopt;
    }
    in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return std::nullopt;
}

std::string gauge(const char* name, const char* help, const char* type, double value) {
  return fmt::format("# HELP {0} {1}\n# TYPE {0} {2}\n{0} {3}\n", name, help, type, value);
}

}  // namespace

std::string process_metrics_text() {
  std::string out;
  try {
    if (auto stat = read_stat()) {
      out += gauge("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", "counter", stat->cpu_seconds);
      out += gauge("process_resident_memory_bytes", "Resident memory size in bytes.", "gauge", stat->resident_bytes);
      out += gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.", "gauge", stat->virtual_bytes);
      if (auto boot = boot_time()) {
        out += gauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", "gauge",
                     *boot + stat->start_after_boot);
      }
    }
  } catch (const std::exception&) {  // a /proc that does not read as Linux's: those are left out
  }
  std::error_code ec;
  std::size_t fds = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec)) {
    ++fds;
  }
  if (!ec && fds > 0) out += gauge("process_open_fds", "Number of open file descriptors.", "gauge", static_cast<double>(fds - 1));
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    out += gauge("process_max_fds", "Maximum number of open file descriptors.", "gauge", static_cast<double>(limit.rlim_cur));
  }
  return out;
}

}  // namespace fracpack::api
