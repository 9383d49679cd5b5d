// `fracpack --version` and the fracpack_build_info gauge: the version, git commit and build date.
#include <regex>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "fracpack/core/build_info.hpp"
#include "plugin_api/metrics.hpp"
#include "support/cli_run.hpp"

namespace fracpack::test {

TEST_CASE("the build info names the version, a git commit (or unknown) and a date") {
  const BuildInfo& b = build_info();
  CHECK(std::regex_match(std::string(b.version), std::regex(R"(\d+\.\d+\.\d+)")));
  CHECK(std::regex_match(std::string(b.revision), std::regex(R"([0-9a-f]{4,40}|unknown)")));
  CHECK(std::regex_match(std::string(b.date), std::regex(R"(\d{4}-\d{2}-\d{2})")));
  CHECK(version_line() == fmt::format("fracpack {} (git {}, built {})", b.version, b.revision, b.date));
}

TEST_CASE("fracpack --version prints the version line and exits 0") {
  auto [out, status] = output_of(fmt::format("'{}' --version", FRACPACK_BINARY));
  CHECK(status == 0);
  CHECK(out == version_line() + "\n");
  CHECK(out.starts_with("fracpack "));
}

TEST_CASE("/metrics has fracpack_build_info{version, revision} 1") {
  api::Metrics metrics;
  const std::string text = metrics.render(LedgerGauges{});
  const BuildInfo& b = build_info();
  CHECK(text.find(fmt::format("fracpack_build_info{{version=\"{}\",revision=\"{}\"}} 1\n", b.version, b.revision)) !=
        std::string::npos);
  CHECK(text.find("# TYPE fracpack_build_info gauge\n") != std::string::npos);
}

}  // namespace fracpack::test
