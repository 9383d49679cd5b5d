// Required node affinity: decoded from a v1 Pod with Kubernetes' rules, and a placement rule.
#include <doctest/doctest.h>

#include "support/builders.hpp"

namespace fracpack::test {
namespace {

PodBuilder with_terms(PodBuilder b, json terms) {
  b.obj["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] = std::move(terms);
  return b;
}

json expr(const std::string& key, const std::string& op, json values = nullptr) {
  json e = {{"key", key}, {"operator", op}};
  if (!values.is_null()) e["values"] = std::move(values);
  return e;
}

TEST_CASE("node affinity: terms and expressions decode from the pod spec") {
  PodRequest p = with_terms(PodBuilder("p"), json::array({{{"matchExpressions", json::array({expr("zone", "In", {"a", "b"}),
                                                                                               expr("gpu", "Exists")})}},
                                                           {{"matchExpressions", json::array({expr("big", "Gt", {"8"})})}}}))
                     .spec();
  REQUIRE(p.node_affinity.size() == 2);
  CHECK(p.node_affinity[0].match_expressions.size() == 2);
  CHECK(p.node_affinity[0].match_expressions[0].values == std::vector<std::string>{"a", "b"});
  CHECK(p.node_affinity[1].match_expressions[0].op == NodeSelectorRequirement::Op::kGt);
  CHECK(describe(p.node_affinity) == "zone In [a, b] and gpu Exists or big Gt [8]");
  CHECK(PodBuilder("plain").spec().node_affinity.empty());
}

TEST_CASE("node affinity: invalid rules are refused with the field") {
  struct Case {
    json terms;
    const char* message;
  };
  const std::vector<Case> cases{
      {json::array(), "nodeSelectorTerms must list at least one term"},
      {json::array({{{"matchFields", json::array({expr("metadata.name", "In", {"n1"})})}}}), "matchFields is not supported"},
      {json::array({{{"matchExpressions", json::array({expr("k", "Near", {"x"})})}}}), "operator \"Near\" is not one of"},
      {json::array({{{"matchExpressions", json::array({expr("k", "In")})}}}), "operator In needs at least one value"},
      {json::array({{{"matchExpressions", json::array({expr("k", "Exists", {"x"})})}}}), "operator Exists takes no values"},
      {json::array({{{"matchExpressions", json::array({expr("k", "Gt", {"eight"})})}}}), "operator Gt needs exactly one integer"},
      {json::array({{{"matchExpressions", json::array({{{"operator", "In"}, {"values", {"x"}}}})}}}), "key must be a non-empty string"},
      {json::array({{{"matchExpressions", json::array({expr("k", "In", {1})})}}}), "values must be strings"},
      {json::array({"term"}), "nodeSelectorTerms[0] must be a map"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.terms.dump());
    auto p = with_terms(PodBuilder("p"), c.terms).decode();
    REQUIRE_FALSE(p.is_ok());
    CHECK(p.status().code() == Code::kInvalidArgument);
    CHECK_MESSAGE(p.status().message().find(c.message) != std::string::npos, p.status().message());
    CHECK(p.status().message().find("pod default/p: spec.affinity.nodeAffinity") == 0);
  }
}

TEST_CASE("node affinity: Kubernetes matching semantics") {
  using Op = NodeSelectorRequirement::Op;
  const std::map<std::string, std::string> labels{{"zone", "a"}, {"cores", "16"}};
  CHECK(matches(NodeSelectorRequirement{"zone", Op::kIn, {"a", "b"}}, labels));
  CHECK_FALSE(matches(NodeSelectorRequirement{"zone", Op::kIn, {"b"}}, labels));
  CHECK(matches(NodeSelectorRequirement{"rack", Op::kNotIn, {"x"}}, labels));  // absent label: NotIn holds
  CHECK(matches(NodeSelectorRequirement{"rack", Op::kDoesNotExist, {}}, labels));
  CHECK(matches(NodeSelectorRequirement{"cores", Op::kGt, {"8"}}, labels));
  CHECK_FALSE(matches(NodeSelectorRequirement{"cores", Op::kLt, {"8"}}, labels));
  CHECK_FALSE(matches(NodeSelectorRequirement{"zone", Op::kGt, {"1"}}, labels));  // not an integer label
  CHECK(matches(std::vector<NodeSelectorTerm>{}, labels));
  CHECK_FALSE(matches(std::vector<NodeSelectorTerm>{NodeSelectorTerm{}}, labels));  // an empty term matches nothing
  // Any term may match; every expression of a term must.
  const std::vector<NodeSelectorTerm> terms{{{{"zone", Op::kIn, {"b"}}}}, {{{"zone", Op::kIn, {"a"}}, {"cores", Op::kGt, {"4"}}}}};
  CHECK(matches(terms, labels));
}

TEST_CASE("node affinity: placement only on matching nodes, and the reason says so") {
  ClusterState s = cluster({nvf("t4-node", 2, 15109).label("nvidia.com/gpu.product", "T4"),
                            nvf("v100-node", 2, 32510).label("nvidia.com/gpu.product", "V100M32")});
  auto pod = with_terms(PodBuilder("p").fraction("0.5"),
                        json::array({{{"matchExpressions", json::array({expr("nvidia.com/gpu.product", "In", {"V100M32"})})}}}));
  for (const char* policy_name : {"pack", "spread", "best-fit", "fgd", "study-best-fit"}) {
    CAPTURE(policy_name);
    ClusterState copy = s;
    auto o = place(copy, pod.spec(), policy_name);
    REQUIRE(o.placement);
    CHECK(o.placement->node == "v100-node");
  }
  auto nowhere = with_terms(PodBuilder("q").fraction("0.5"),
                            json::array({{{"matchExpressions", json::array({expr("nvidia.com/gpu.product", "In", {"A10"})})}}}));
  auto o = place(s, nowhere.spec());
  REQUIRE_FALSE(o.placement);
  CHECK(o.why.code == Code::kUnschedulableAndUnresolvable);
  CHECK_MESSAGE(o.why.summary.find("2 node(s) didn't match Pod's node affinity/selector") != std::string::npos, o.why.summary);
}

}  // namespace
}  // namespace fracpack::test
