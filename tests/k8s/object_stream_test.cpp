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
  CHECK(a["b"].is_number_float());
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
  auto scalar = read_objects("just a string\n", "s.yaml");
  REQUIRE_FALSE(scalar.is_ok());
  CHECK(scalar.status().message().find("not a Kubernetes object") != std::string::npos);
  auto missing = read_objects_file("/nonexistent/file.yaml");
  REQUIRE_FALSE(missing.is_ok());
  CHECK(missing.status().code() == Code::kNotFound);
  auto empty = read_objects("  \n", "e.yaml");
  REQUIRE(empty.is_ok());
  CHECK(empty->empty());
}

TEST_CASE("describe names objects for messages") {
  auto objects = read_objects(R"([{"kind":"Pod","metadata":{"name":"p","namespace":"ns"}},{"kind":"Node"}])", "x");
  REQUIRE(objects.is_ok());
  CHECK(describe((*objects)[0], 0) == "Pod ns/p");
  CHECK(describe((*objects)[1], 1) == "Node #2");
}

}  // namespace
}  // namespace fracpack::k8s
