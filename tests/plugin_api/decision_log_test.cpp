// The decision log: one line per decision at its level (info places, warn refuses, error for the
// API server or the server), with its fields as JSON keys under --log-format json, and a log that
// no name can break; end to end through `fracpack serve --log-format json --log-level`.
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <doctest/doctest.h>
#include <httplib.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "plugin_api/decision_log.hpp"
#include "plugin_api/log_format.hpp"
#include "support/builders.hpp"
#include "support/server_process.hpp"

namespace fracpack::test {
namespace {

namespace fs = std::filesystem;

/// The default logger, in `format` at `level`, into a string while alive.
struct LogInto {
  std::ostringstream out;
  std::shared_ptr<spdlog::logger> previous = spdlog::default_logger();
  LogInto(LogFormat format, spdlog::level::level_enum level = spdlog::level::info) {
    auto logger = std::make_shared<spdlog::logger>("fracpack", std::make_shared<spdlog::sinks::ostream_sink_st>(out));
    api::set_log_format(*logger, format);
    logger->set_level(level);
    spdlog::set_default_logger(logger);
  }
  ~LogInto() { spdlog::set_default_logger(previous); }
  LogInto(const LogInto&) = delete;
  LogInto& operator=(const LogInto&) = delete;

  /// Every line, each parsed as one JSON object (a line that is not one fails the test).
  std::vector<json> objects() const {
    std::vector<json> lines;
    std::istringstream in(out.str());
    for (std::string line; std::getline(in, line);) {
      CAPTURE(line);
      json o = json::parse(line, nullptr, /*allow_exceptions=*/false);
      REQUIRE(o.is_object());
      lines.push_back(std::move(o));
    }
    return lines;
  }
};

BindAnswer bound(const std::string& pod, const std::string& node, std::vector<int> gpus) {
  BindAnswer a;
  a.pod = pod;
  a.node = node;
  a.choice.gpus = std::move(gpus);
  return a;
}

}  // namespace

TEST_CASE("json: a decision's line carries verb, pod, node, gpus, code and duration as keys; a plain line only its message") {
  LogInto log(LogFormat::kJson);
  api::log_bind("default/p", "gpu-1", bound("default/p", "gpu-1", {0, 3}), 0.0025);
  spdlog::info("watch: every kind listed; serving decisions");
  const auto lines = log.objects();
  REQUIRE(lines.size() == 2);
  const json& b = lines[0];
  CHECK(b["level"] == "info");
  CHECK(b["logger"] == "fracpack");
  CHECK(b["verb"] == "bind");
  CHECK(b["pod"] == "default/p");
  CHECK(b["node"] == "gpu-1");
  CHECK(b["gpus"] == json::array({0, 3}));
  CHECK(b["code"] == "Success");
  CHECK(b["duration_seconds"].get<double>() == doctest::Approx(0.0025));
  CHECK(b["msg"].get<std::string>().starts_with("bind default/p to gpu-1 GPUs [0,3]"));
  const std::string time = b["time"];
  CHECK(time.size() == 24);  // 2026-12-03T11:29:10.123Z
  CHECK(time.ends_with("Z"));
  CHECK(time[10] == 'T');
  CHECK(log.out.str().starts_with("{\"time\":\"20"));  // the keys in a fixed order, time first
  const json& plain = lines[1];
  CHECK(plain.size() == 4);  // time, level, logger, msg: the decision's fields do not leak into the next line
  CHECK(plain["msg"] == "watch: every kind listed; serving decisions");
}

TEST_CASE("json: the time is UTC whatever the local time zone") {
  const char* before = std::getenv("TZ");
  const std::string saved = before != nullptr ? before : "";
  setenv("TZ", "America/New_York", 1);
  tzset();
  const std::time_t now = std::time(nullptr);
  std::vector<json> lines;
  {
    LogInto log(LogFormat::kJson);
    spdlog::info("tick");
    lines = log.objects();
  }
  if (before != nullptr) {
    setenv("TZ", saved.c_str(), 1);
  } else {
    unsetenv("TZ");
  }
  tzset();
  REQUIRE(lines.size() == 1);
  std::tm utc{};
  gmtime_r(&now, &utc);
  const std::string logged_hour = lines[0]["time"].get<std::string>().substr(0, 13);  // 2026-12-03T16
  CHECK(logged_hour == fmt::format("{:04}-{:02}-{:02}T{:02}", utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday, utc.tm_hour));
}

TEST_CASE("levels: a placing decision is info, a refusal warn, an API server error error; --log-level warn keeps only the last two") {
  LogInto log(LogFormat::kJson, spdlog::level::warn);
  const json pod = PodBuilder("p").whole(1).obj;
  FilterAnswer fits;
  fits.passed = {"gpu-0"};
  api::log_filter(pod, fits, 2, 0.001);  // info: not written at warn
  FilterAnswer none;
  none.failed.emplace_back("gpu-0", SharedReason("node(s) had GPUs held whole"));
  api::log_filter(pod, none, 1, 0.001);
  api::log_bind("default/p", "gpu-0", Status(Code::kUnschedulable, "pod default/p no longer fits node gpu-0"), 0.002);
  api::log_bind("default/p", "gpu-0", Status(Code::kInternal, "cannot connect to the API server to bind pod default/p"), 0.5);
  api::log_bind("default/p", "gpu-0", Status(Code::kUnavailable, "not the leader: fracpack-1 is"), 0.001);
  api::log_filter(pod, Status(Code::kInvalidArgument, "pod default/p: gpu-memory must be a quantity"), 3, 0.0001);
  const auto lines = log.objects();
  REQUIRE(lines.size() == 5);
  CHECK(lines[0]["level"] == "warning");
  CHECK(lines[0]["verb"] == "filter");
  CHECK(lines[0]["code"] == "Unschedulable");
  CHECK(lines[0]["msg"].get<std::string>().find("0 of 1 nodes fit; gpu-0: node(s) had GPUs held whole") != std::string::npos);
  CHECK(lines[1]["level"] == "warning");
  CHECK(lines[1]["code"] == "Unschedulable");
  CHECK_FALSE(lines[1].contains("gpus"));  // nothing was bound
  CHECK(lines[2]["level"] == "error");
  CHECK(lines[2]["code"] == "Internal");
  CHECK(lines[3]["level"] == "warning");  // a follower's refusal is no error: failovers do not flood the error log
  CHECK(lines[3]["code"] == "Unavailable");
  CHECK(lines[4]["level"] == "warning");
  CHECK(lines[4]["code"] == "InvalidArgument");
}

TEST_CASE("json: a name with a newline, an ESC or bytes that are not UTF-8 stays inside its one line and its string") {
  LogInto log(LogFormat::kJson);
  const std::string evil = "gpu-1\n{\"level\":\"info\",\"msg\":\"forged\"}\x1b[2J\xff\xfe";
  api::log_bind("default/p", evil, Status(Code::kNotFound, "node " + evil + " is not known"), 0.001);
  spdlog::warn("node {} sent by the scheduler", evil);
  const std::string text = log.out.str();
  CHECK(std::count(text.begin(), text.end(), '\n') == 2);
  CHECK(text.find('\x1b') == std::string::npos);
  const auto lines = log.objects();
  REQUIRE(lines.size() == 2);
  CHECK(lines[0]["node"].get<std::string>().starts_with("gpu-1"));
  CHECK(lines[0]["code"] == "NotFound");
}

TEST_CASE("text: a decision is one line with its time in the server") {
  LogInto log(LogFormat::kText);
  api::log_bind("default/p", "gpu-1", bound("default/p", "gpu-1", {1}), 0.00125);
  const std::string text = log.out.str();
  CHECK(std::count(text.begin(), text.end(), '\n') == 1);
  CHECK(text.find("[info] bind default/p to gpu-1 GPUs [1] (1.25 ms)") != std::string::npos);
}

TEST_CASE("serve --log-format json --log-level: every stderr line is a JSON object, decisions carry their fields") {
  const fs::path dir = fs::temp_directory_path() / fmt::format("fracpack-logs-{}", getpid());
  fs::create_directories(dir);
  const std::string cluster = (dir / "cluster.json").string();
  std::ofstream(cluster) << json{{"kind", "List"}, {"items", json::array({nvf("gpu-0", 2, 81920).obj})}}.dump();
  for (const std::string level : {"info", "warn"}) {
    CAPTURE(level);
    const std::string log = (dir / (level + ".log")).string();
    {
      ServerProcess server(FRACPACK_BINARY, {"--state", ":memory:", "--cluster", cluster, "--log-format", "json", "--log-level", level},
                           free_port(), log);
      httplib::Client c("127.0.0.1", server.http_port());
      const json fits = PodBuilder("fits").whole(1).obj;
      const json too_big = PodBuilder("too-big").whole(4).obj;
      for (const json& pod : {fits, too_big}) {
        auto f = c.Post("/filter", json{{"Pod", pod}, {"NodeNames", {"gpu-0"}}}.dump(), "application/json");
        REQUIRE(f);
        REQUIRE(f->status == 200);
      }
      auto b = c.Post("/bind", json{{"PodName", "fits"}, {"PodNamespace", "default"}, {"PodUID", ""}, {"Node", "gpu-0"}}.dump(),
                      "application/json");
      REQUIRE(b);
      REQUIRE(b->status == 200);
      auto m = c.Get("/metrics");
      REQUIRE(m);
      const std::string& metrics = m->body;
      CHECK(metrics.find("fracpack_requests_total{front=\"http\",verb=\"filter\",code=\"200\"} 2") != std::string::npos);
      CHECK(metrics.find("fracpack_request_duration_seconds_count{front=\"http\",verb=\"bind\"} 1") != std::string::npos);
      CHECK(metrics.find("fracpack_unschedulable_total{reason=\"nodes\"} 1") != std::string::npos);
      for (const char* process : {"process_cpu_seconds_total ", "process_resident_memory_bytes ", "process_open_fds ",
                                  "process_max_fds ", "process_start_time_seconds "}) {
        CAPTURE(process);
        CHECK(metrics.find(std::string("\n") + process) != std::string::npos);
      }
      server.kill9();
    }
    std::ifstream in(log);
    std::map<std::string, json> decisions;  // "verb pod" → line
    std::size_t lines = 0;
    for (std::string line; std::getline(in, line); ++lines) {
      CAPTURE(line);
      const json o = json::parse(line, nullptr, false);
      REQUIRE(o.is_object());
      CHECK(o.contains("time"));
      if (level == "warn") CHECK(o["level"] != "info");
      if (o.contains("verb")) decisions[o["verb"].get<std::string>() + " " + o["pod"].get<std::string>()] = o;
    }
    CHECK(lines > 0);
    REQUIRE(decisions.contains("filter default/too-big"));
    CHECK(decisions["filter default/too-big"]["code"] == "Unschedulable");
    if (level == "info") {
      REQUIRE(decisions.size() == 3);  // one line per decision
      CHECK(decisions["filter default/fits"]["code"] == "Success");
      CHECK(decisions["bind default/fits"]["node"] == "gpu-0");
      CHECK(decisions["bind default/fits"]["gpus"].size() == 1);
      CHECK(decisions["bind default/fits"]["duration_seconds"].get<double>() > 0);
    } else {
      CHECK(decisions.size() == 1);
    }
  }
  fs::remove_all(dir);
}

}  // namespace fracpack::test
