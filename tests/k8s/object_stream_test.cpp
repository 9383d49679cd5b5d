#include "fracpack/k8s/object_stream.hpp"

#include <doctest/doctest.h>

namespace fracpack::k8s {
namespace {

TEST_CASE("a multi-document YAML stream with a List inside") {
  const char* text = R"(
apiVersion: v1
kind: Node
metadata: {name: a}
---
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Pod, metadata: {name: p1}}
- {apiVersion: v1, kind: Pod, metadata: {name: p2}}
---
)";
  auto objects = read_objects(text, "stream.yaml");
  REQUIRE(objects.is_ok());
  REQUIRE(objects->size() == 3);
  CHECK(kind_of((*objects)[0]) == "Node");
  CHECK((*objects)[2]["metadata"]["name"] == "p2");
}

TEST_CASE("JSON List, JSON array and NodeList") {
  auto list = read_objects(R"({"kind":"List","items":[{"kind":"Node","metadata":{"name":"a"}}]})", "x.json");
  REQUIRE(list.is_ok());
  CHECK(list->size() == 1);
  auto array = read_objects(R"([{"kind":"Pod"},{"kind":"Pod"}])", "x.json");
  REQUIRE(array.is_ok());
  CHECK(array->size() == 2);
  auto nodelist = read_objects("kind: NodeList\nitems:\n- kind: Node\n", "x.yaml");
  REQUIRE(nodelist.is_ok());
  CHECK(nodelist->size() == 1);
}

TEST_CASE("YAML scalars: quoted stay strings, plain ones get their type") {
  auto objects = read_objects(R"(
kind: Pod
metadata:
  annotations: {a: "0.5", b: 0.5, c: 16Gi, d: "true", e: 12, f: 1e3, g: null, h: '007'}
)",
                              "x.yaml");
  REQUIRE(objects.is_ok());
  const auto& a = (*objects)[0]["metadata"]["annotations"];
  CHECK(a["a"].is_string());
  CHECK(a["b"] == "0.5");  // decimals stay as written
  CHECK(a["c"] == "16Gi");
  CHECK(a["d"].is_string());
  CHECK(a["e"].is_number_integer());
  CHECK(a["f"] == "1e3");  // kept as text so quantity parsing sees it as written
  CHECK(a["g"].is_null());
  CHECK(a["h"] == "007");
}

TEST_CASE("malformed input is an error naming the source") {
  auto bad_json = read_objects(R"({"kind": "Pod", )", "pods.json");
  REQUIRE_FALSE(bad_json.is_ok());
  CHECK(bad_json.status().message().find("pods.json: not valid JSON") == 0);
  auto bad_yaml = read_objects("kind: Pod\n  bad: [unclosed\n", "pods.yaml");
  REQUIRE_FALSE(bad_yaml.is_ok());
  CHECK(bad_yaml.status().message().find("pods.yaml: not valid YAML") == 0);
  auto scalar = read_objects("kind: Pod\n---\njust a string\n", "s.yaml");
  REQUIRE_FALSE(scalar.is_ok());
  CHECK(scalar.status().message() == "s.yaml: document 2 is a string, not a Kubernetes object");
  auto missing = read_objects_file("/nonexistent/file.yaml");
  REQUIRE_FALSE(missing.is_ok());
  CHECK(missing.status().code() == Code::kNotFound);
  auto empty = read_objects("  \n", "e.yaml");
  REQUIRE(empty.is_ok());
  CHECK(empty->empty());
}

TEST_CASE("hostile input is refused with a message, never a crash or a hang") {
  auto expect = [](std::string_view text, std::string_view part) {
    auto r = read_objects(text, "x");
    REQUIRE_FALSE(r.is_ok());
    CHECK_MESSAGE(r.status().message().find(part) != std::string::npos, r.status().message());
  };
  expect(R"([{"kind":"Widget","x":-1e400}])", "not valid JSON");                  // beyond a double
  expect(std::string(50000, '[') + std::string(50000, ']'), "nesting is deeper");  // stack exhaustion
  expect(std::string(100000, '{'), "nesting is deeper");
  expect("kind: Pod\nmetadata: &m\n  name: p\n  self: *m\n", "alias refers to a node that contains it");
  std::string laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'i'; ++c) {
    laughs += fmt::format("{}: &{} [*{}, *{}, *{}, *{}, *{}, *{}, *{}, *{}, *{}, *{}]\n", c, c, char(c - 1), char(c - 1),
                          char(c - 1), char(c - 1), char(c - 1), char(c - 1), char(c - 1), char(c - 1), char(c - 1),
                          char(c - 1));
  }
  expect(laughs, "expand to too many nodes");
  expect("kind: Pod\nkind: Node\n", "duplicate key \"kind\"");
  expect(std::string("kind: Pod\0x", 11), "NUL bytes");
  expect("[1, 2]", "item 1 is a number");
}

TEST_CASE("YAML the fuzzer and the spec found: refused or read, always answered") {
  // tests/fuzz/regressions/object_stream/yaml-cpp-flow-hang: yaml-cpp 0.7 looped for ever on it.
  auto hang = read_objects(", {\" {\"a\":a\":6][ ]}]", "hang.yaml");
  REQUIRE_FALSE(hang.is_ok());
  CHECK_MESSAGE(hang.status().message().find("hang.yaml: not valid YAML: ") == 0, hang.status().message());
  CHECK_MESSAGE(hang.status().message().find("line 1, column ") != std::string::npos, hang.status().message());
  auto undefined = read_objects("kind: Pod\nmetadata: *nowhere\n", "a.yaml");
  REQUIRE_FALSE(undefined.is_ok());
  CHECK(undefined.status().message() == "a.yaml: not accepted as YAML: alias *nowhere names no anchor");
  auto complex_key = read_objects("? [a, b]\n: c\n", "k.yaml");
  REQUIRE_FALSE(complex_key.is_ok());
  CHECK(complex_key.status().message().find("a map key is not a scalar") != std::string::npos);
  // An alias may not bring a tall value into a deep place: the limit is on the result (128).
  std::string tall = "a0: &a0 x\n";
  for (int k = 1; k <= 3; ++k) {
    tall += fmt::format("a{}: &a{} {}*a{}{}\n", k, k, std::string(60, '['), k - 1, std::string(60, ']'));
  }
  auto towers = read_objects(tall, "t.yaml");
  REQUIRE_FALSE(towers.is_ok());
  CHECK_MESSAGE(towers.status().message().find("nesting is too deep") != std::string::npos, towers.status().message());
  auto short_towers = read_objects(tall.substr(0, tall.rfind("a3:")), "t.yaml");
  CHECK_MESSAGE(short_towers.is_ok(), short_towers.status().message());  // 121 levels: within the limit
  // Aliases within the budget expand; `!!str` keeps a plain scalar a string; `---` alone is empty.
  auto ok = read_objects("kind: Pod\nmetadata:\n  labels: &l {a: !!str 12, b: 12}\n  annotations: *l\n---\n", "o.yaml");
  REQUIRE(ok.is_ok());
  REQUIRE(ok->size() == 1);
  CHECK((*ok)[0]["metadata"]["annotations"] == (*ok)[0]["metadata"]["labels"]);
  CHECK((*ok)[0]["metadata"]["labels"]["a"] == "12");
  CHECK((*ok)[0]["metadata"]["labels"]["b"] == 12);
}

TEST_CASE("flow-style YAML that starts like JSON is read as YAML") {
  auto r = read_objects("{kind: Pod, metadata: {name: p}}\n", "flow.yaml");
  REQUIRE(r.is_ok());
  CHECK((*r)[0]["metadata"]["name"] == "p");
}

TEST_CASE("describe names objects for messages") {
  auto objects = read_objects(R"([{"kind":"Pod","metadata":{"name":"p","namespace":"ns"}},{"kind":"Node"}])", "x");
  REQUIRE(objects.is_ok());
  CHECK(describe((*objects)[0], 0) == "Pod ns/p");
  CHECK(describe((*objects)[1], 1) == "Node #2");
}

}  // namespace
}  // namespace fracpack::k8s
