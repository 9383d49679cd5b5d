// `fracpack place` as an administrator runs it: -o json|yaml|table, `-` for standard input, the
// shared placement flags, and flag mistakes named as such.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fracpack/k8s/object_stream.hpp"
#include "support/cli_run.hpp"

namespace fracpack::test {
namespace {

std::string place(const std::string& flags) {
  return fmt::format("cd '{}' && '{}' place {}", FRACPACK_SOURCE_DIR, FRACPACK_BINARY, flags);
}

const std::string kExample = "--cluster examples/cluster.yaml --pods examples/workload.yaml";

}  // namespace

TEST_CASE("place -o yaml prints the JSON report's content as YAML, and --pods - reads standard input") {
  auto [json_out, json_status] = output_of(place(kExample + " -o json"));
  REQUIRE(json_status == 0);
  auto [yaml_out, yaml_status] = output_of(place("--cluster examples/cluster.yaml --pods - -o yaml < examples/workload.yaml"));
  REQUIRE(yaml_status == 0);
  auto yaml = k8s::read_objects(yaml_out, "place -o yaml");
  REQUIRE_MESSAGE(yaml.is_ok(), yaml.status().message());
  REQUIRE(yaml->size() == 1);
  const nlohmann::json expected = nlohmann::json::parse(json_out);
  CHECK(yaml->front()["placements"] == expected["placements"]);
  CHECK(yaml->front()["summary"]["placed"] == expected["summary"]["placed"]);
  CHECK(expected["summary"]["placed"].get<int>() > 0);
  auto [table, table_status] = output_of(place(kExample + " --format table"));  // the older spelling
  CHECK(table_status == 0);
  CHECK(table.find("team-a/chat-7b-1") != std::string::npos);
}

TEST_CASE("place names an unknown flag, a repeated flag, and refuses standard input twice") {
  auto [unknown, unknown_status] = output_of(place("--clusters examples/cluster.yaml --pods examples/workload.yaml 2>&1"));
  CHECK(unknown_status == 2);
  CHECK(unknown.find("unknown flag --clusters") != std::string::npos);
  CHECK(unknown.find("is required") == std::string::npos);
  auto [twice, twice_status] = output_of(place(kExample + " --cluster examples/cluster.yaml 2>&1"));
  CHECK(twice_status == 2);
  CHECK(twice.find("--cluster") != std::string::npos);
  auto [stdin_twice, stdin_status] = output_of(place("--cluster - --pods - < /dev/null 2>&1"));
  CHECK(stdin_status == 2);
  CHECK(stdin_twice.find("cannot both be -") != std::string::npos);
}

TEST_CASE("--scheduler-name decides whose pods queues count, in place as in serve") {
  auto queues_of = [](const std::string& flags) {
    auto [out, status] = output_of(place(kExample + flags));
    REQUIRE(status == 0);
    return nlohmann::json::parse(out)["queues"];
  };
  const auto by_default = queues_of("");
  CHECK(queues_of(" --scheduler-name kai-scheduler") == by_default);
  CHECK(queues_of(" --scheduler-name someone-else") != by_default);  // the running kai-scheduler pods are foreign
  auto [serve_out, serve_status] =
      output_of(fmt::format("'{}' serve --reserved-gpu-memory lots --state :memory: 2>&1", FRACPACK_BINARY));
  CHECK(serve_status == 2);
  CHECK(serve_out.find("--reserved-gpu-memory") != std::string::npos);
}

TEST_CASE("replay says why it cannot reach a server, in a whole sentence") {
  auto [out, status] = output_of(fmt::format("cd '{}' && '{}' replay --server http://127.0.0.1:1 --pods examples/workload.yaml 2>&1",
                                             FRACPACK_SOURCE_DIR, FRACPACK_BINARY));
  CHECK(status == 2);
  CHECK(out.find("cannot connect (connection refused") != std::string::npos);
}

}  // namespace fracpack::test
