// docs/requests.md rule 24: KAI's objects, our pod annotations and quota rule files are decoded as
// `kubectl apply --validate=strict` would: unknown fields and wrong types are errors naming the object
// and the field; KAI fields fracpack does not act on are warnings.
#include <chrono>

#include <doctest/doctest.h>

#include "fracpack/k8s/object_stream.hpp"
#include "fracpack/queues/decode_queue.hpp"
#include "fracpack/sim/place_job.hpp"
#include "fracpack/sim/quota/workload.hpp"
#include "support/builders.hpp"
#include "support/temp_files.hpp"

namespace fracpack::test {
namespace {

json yaml_object(const std::string& text) {
  auto objects = k8s::read_objects(text, "test.yaml");
  REQUIRE_MESSAGE(objects.is_ok(), objects.status().message());
  REQUIRE(objects->size() == 1);
  return objects->front();
}

std::string queue_error(const std::string& text) {
  auto q = queues::decode_queue(yaml_object(text));
  REQUIRE_FALSE(q.is_ok());
  return q.status().message();
}

std::string group_error(const std::string& text) {
  auto g = queues::decode_pod_group(yaml_object(text));
  REQUIRE_FALSE(g.is_ok());
  return g.status().message();
}

constexpr const char* kQueueHead = "apiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata: {name: research}\n";

TEST_CASE("a misspelt Queue field is an error naming the queue, the field and the fields beside it") {
  CHECK(queue_error(std::string(kQueueHead) + "spec: {resources: {gpu: {qouta: 2}}}") ==
        "queue research: unknown field \"spec.resources.gpu.qouta\" (strict decoding, as kubectl apply "
        "--validate=strict; Queue spec.resources.gpu has: limit, overQuotaWeight, quota)");
  CHECK(queue_error(std::string(kQueueHead) + "spec: {resources: {gpu: {quota: 2, overQuotaWieght: 3}}}")
            .find("unknown field \"spec.resources.gpu.overQuotaWieght\"") != std::string::npos);
  CHECK(queue_error(std::string(kQueueHead) + "spec: {parentQueu: root, resources: {}}")
            .find("unknown field \"spec.parentQueu\"") != std::string::npos);
  CHECK(queue_error(std::string(kQueueHead) + "spec: {resources: {gpus: {quota: 1}}}")
            .find("unknown field \"spec.resources.gpus\" (strict decoding, as kubectl apply --validate=strict; Queue "
                  "spec.resources has: cpu, gpu, memory)") != std::string::npos);
  CHECK(queue_error(std::string(kQueueHead) + "specs: {}\nspec: {resources: {}}")
            .find("unknown field \"specs\"") != std::string::npos);
}

TEST_CASE("a list written as a map is an error saying it must be a list, with its items' fields") {
  const std::string head = "apiVersion: scheduling.run.ai/v2alpha2\nkind: PodGroup\nmetadata: {name: g, namespace: default}\n";
  const std::string message = group_error(head + "spec: {subGroups: {name: a, minMember: 1}}");
  CAPTURE(message);
  CHECK(message.find("spec.subGroups must be a list, not an object") != std::string::npos);
  CHECK(message.find("PodGroup spec.subGroups[] items have: ") != std::string::npos);
  CHECK(message.find("minMember") != std::string::npos);
  CHECK(message.find("has: )") == std::string::npos);
}

TEST_CASE("a Queue in another version or kind is refused; absent apiVersion and kind are the served ones") {
  CHECK(queue_error("apiVersion: scheduling.run.ai/v1\nkind: Queue\nmetadata: {name: q}\nspec: {resources: {}}") ==
        "queue q: apiVersion \"scheduling.run.ai/v1\" is not a served version; Queue is served as scheduling.run.ai/v2");
  CHECK(queue_error("apiVersion: v1\nkind: Queue\nmetadata: {name: q}\nspec: {resources: {}}")
            .find("is not this kind's group") != std::string::npos);
  CHECK(queue_error("apiVersion: scheduling.run.ai/v2\nkind: Queu\nmetadata: {name: q}\nspec: {resources: {}}") ==
        "queue q: kind \"Queu\" is not Queue");
  CHECK(queues::decode_queue(yaml_object("metadata: {name: q}\nspec: {resources: {gpu: {quota: 1}}}")).is_ok());
}

TEST_CASE("ObjectMeta, labels, annotations and status as kubectl get prints them are accepted") {
  auto q = queues::decode_queue(yaml_object(std::string(kQueueHead) + R"(
spec: {resources: {gpu: {quota: 1, limit: 2, overQuotaWeight: 1}}}
status:
  allocated: {nvidia.com/gpu: "1"}
  childQueues: [a, b]
)"));
  CHECK_MESSAGE(q.is_ok(), q.status().message());
  json full = queue_object("q", "", 1);
  full["metadata"]["labels"] = {{"team", "x"}};
  full["metadata"]["annotations"] = {{"anything/at-all", "y"}};
  full["metadata"]["managedFields"] = json::array({{{"manager", "kubectl"}, {"fieldsV1", {{"f:spec", json::object()}}}}});
  full["metadata"]["uid"] = "u";
  full["metadata"]["resourceVersion"] = "7";
  full["metadata"]["generation"] = 2;
  CHECK(queues::decode_queue(full).is_ok());
  full["metadata"]["uidd"] = "u";
  REQUIRE_FALSE(queues::decode_queue(full).is_ok());
  CHECK(queues::decode_queue(full).status().message().find("unknown field \"metadata.uidd\"") != std::string::npos);
}

TEST_CASE("Queue fields KAI honours and fracpack does not are warnings naming the queue; min runtimes are honoured") {
  std::vector<std::string> warnings;
  auto q = queues::decode_queue(
      yaml_object(std::string(kQueueHead) +
                  "spec: {displayName: Research, preemptMinRuntime: 10m, reclaimMinRuntime: 5m, resources: {}}"),
      &warnings);
  REQUIRE_MESSAGE(q.is_ok(), q.status().message());
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].starts_with("queue research: spec.displayName is not honoured by fracpack"));
  CHECK(q->preempt_min_runtime == std::chrono::minutes(10));
  CHECK(q->reclaim_min_runtime == std::chrono::minutes(5));
}

constexpr const char* kGroupHead = "apiVersion: scheduling.run.ai/v2alpha2\nkind: PodGroup\nmetadata: {name: g, namespace: ml}\n";

TEST_CASE("PodGroups decode strictly, with their sub-groups and topology constraints") {
  CHECK(group_error(std::string(kGroupHead) + "spec: {minMembers: 2}")
            .starts_with("PodGroup ml/g: unknown field \"spec.minMembers\""));
  CHECK(group_error(std::string(kGroupHead) + "spec: {subGroups: [{name: a, minMembr: 1}]}")
            .starts_with("PodGroup ml/g: unknown field \"spec.subGroups[].minMembr\""));
  CHECK(group_error("apiVersion: scheduling.run.ai/v2\nkind: PodGroup\nmetadata: {name: g}\nspec: {}")
            .find("Queue") == std::string::npos);
  CHECK(group_error("apiVersion: scheduling.run.ai/v2\nkind: PodGroup\nmetadata: {name: g}\nspec: {}")
            .find("PodGroup is served as scheduling.run.ai/v2alpha2") != std::string::npos);
  std::vector<std::string> warnings;
  auto g = queues::decode_pod_group(yaml_object(std::string(kGroupHead) + R"(
spec:
  minSubGroup: 1
  subGroups: [{name: a, minSubGroup: 1}, {name: b, minMember: 2, parent: a, topologyConstraint: {requiredTopologyLevel: rack}}]
  topologyConstraint: {requiredTopologyLevel: zone, preferredTopologyLevel: rack, topology: default}
)"),
                                    &warnings);
  REQUIRE_MESSAGE(g.is_ok(), g.status().message());
  CHECK(warnings.empty());
  CHECK(g->min_sub_group == 1);
  CHECK(g->topology.required_level == "zone");
  CHECK(g->topology.preferred_level == "rack");
  REQUIRE(g->sub_groups.size() == 2);
  CHECK(g->sub_groups[0].min_sub_group == 1);
  CHECK(g->sub_groups[1].parent == "a");
  CHECK(g->sub_groups[1].min_member == 2);
  CHECK(g->sub_groups[1].topology.required_level == "rack");
  CHECK(g->structured());
  auto levelless = queues::decode_pod_group(yaml_object(std::string(kGroupHead) + "spec: {topologyConstraint: {topology: t}}"), &warnings);
  REQUIRE(levelless.is_ok());
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("spec.topologyConstraint: names topology t but no required or preferred level") != std::string::npos);
}

TEST_CASE("a PodGroup with KAI's preemptionDelay and stalenessGracePeriod is read (the grace warned as not honoured); a bad duration is refused") {
  // KAI's current v2alpha2 PodGroup has both (KAI #1886); strict decoding once dropped the group.
  std::vector<std::string> warnings;
  auto g = queues::decode_pod_group(
      yaml_object("apiVersion: scheduling.run.ai/v2alpha2\nkind: PodGroup\n"
                  "metadata: {name: g, namespace: ml, creationTimestamp: \"2026-01-01T00:00:00Z\"}\n"
                  "spec: {minMember: 2, preemptionDelay: 30s, stalenessGracePeriod: 5m}"),
      &warnings);
  REQUIRE_MESSAGE(g.is_ok(), g.status().message());
  CHECK(g->min_member == 2);
  REQUIRE(g->preemption_delay);
  CHECK(g->preemption_delay->count() == 30'000'000'000);
  CHECK(g->evicts_from(0) == std::optional<std::int64_t>(1767225600 + 30));
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].starts_with("PodGroup ml/g: spec.stalenessGracePeriod is not honoured by fracpack"));
  CHECK(group_error(std::string(kGroupHead) + "spec: {preemptionDelay: soon}") ==
        "PodGroup ml/g: spec.preemptionDelay = \"soon\": must be a duration such as \"20s\" or \"1h30m\" (Go's time.ParseDuration)");
}

TEST_CASE("PodGroup sub-groups are checked as KAI's validation does, naming the field") {
  const std::string head = std::string(kGroupHead) + "spec:\n";
  CHECK(group_error(head + "  minMember: 2\n  minSubGroup: 1\n  subGroups: [{name: a, minMember: 1}]")
            .starts_with("PodGroup ml/g: spec: minMember and minSubGroup are mutually exclusive"));
  CHECK(group_error(head + "  subGroups: [{name: a, minMember: 1}, {name: b, parent: x}]") ==
        "PodGroup ml/g: spec.subGroups[1].parent = \"x\": no sub-group has that name");
  CHECK(group_error(head + "  subGroups: [{name: a}, {name: a}]") ==
        "PodGroup ml/g: spec.subGroups[1].name = \"a\": another sub-group has that name");
  CHECK(group_error(head + "  subGroups: [{name: a, parent: b}, {name: b, parent: a}]") ==
        "PodGroup ml/g: spec.subGroups[0].parent = \"b\": its parents form a cycle");
  CHECK(group_error(head + "  minSubGroup: 3\n  subGroups: [{name: a}, {name: b}]") ==
        "PodGroup ml/g: spec.minSubGroup = 3: must be from 1 to its 2 child sub-group(s)");
  CHECK(group_error(head + "  subGroups: [{name: a, minSubGroup: 1}]") ==
        "PodGroup ml/g: spec.subGroups[0].minSubGroup = 1: it has no child sub-groups to count");
  std::vector<std::string> warnings;  // KAI's own podgrouper writes minMember on a sub-group with children: KAI ignores it
  auto inner = queues::decode_pod_group(yaml_object(head + "  subGroups: [{name: a, minMember: 2}, {name: b, parent: a, minMember: 1}]"), &warnings);
  REQUIRE_MESSAGE(inner.is_ok(), inner.status().message());
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("spec.subGroups[0].minMember = 2: sub-group a has child sub-groups") != std::string::npos);
  CHECK(group_error(head + "  minSubGroup: 1") == "PodGroup ml/g: spec.minSubGroup = 1: it has no child sub-groups to count");
  CHECK(group_error(head + "  subGroups: [{name: a, minMember: -1}]") ==
        "PodGroup ml/g: spec.subGroups[0].minMember = -1: must be an integer from 0 to 1048576");
  CHECK(group_error(head + "  topologyConstraint: {requiredTopologyLevel: [rack]}").find("requiredTopologyLevel") != std::string::npos);
}

Result<PlaceReport> place(const std::vector<json>& objects) {
  return run_place(k8s::with_origins(objects, "in.yaml"), PlaceOptions{});
}

TEST_CASE("place refuses a misspelt KAI kind and an object without kind; other kinds are skipped with a warning") {
  NodeBuilder n("n");
  n.gpus(1, 80000);
  json queu = queue_object("q", "", 1);
  queu["kind"] = "Queu";
  auto r = place({n.obj, queu});
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().message() ==
        "Queu q (in.yaml, object 2): KAI's API group scheduling.run.ai has no kind \"Queu\" that fracpack knows (Queue, PodGroup)");
  json no_kind = {{"apiVersion", "v1"}, {"metadata", {{"name", "x"}}}};
  auto r2 = place({n.obj, no_kind});
  REQUIRE_FALSE(r2.is_ok());
  CHECK(r2.status().message().find("kind is missing") != std::string::npos);
  json config_map = {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", "c"}}}};
  auto r3 = place({n.obj, config_map});
  REQUIRE(r3.is_ok());
  REQUIRE(r3->warnings.size() == 1);
  CHECK(r3->warnings[0].find("kind \"ConfigMap\" is not used by placement") != std::string::npos);
  json wrong = queue_object("q", "", 1);
  wrong["spec"]["resources"]["gpu"]["qouta"] = 2;
  auto r4 = place({n.obj, wrong});
  REQUIRE_FALSE(r4.is_ok());
  CHECK(r4.status().message().find("unknown field \"spec.resources.gpu.qouta\"") != std::string::npos);
}

TEST_CASE("place prints the KAI fields it does not honour as warnings") {
  NodeBuilder n("n");
  n.gpus(1, 80000);
  json q = queue_object("q", "", 1);
  q["spec"]["displayName"] = "Q";
  q["spec"]["preemptMinRuntime"] = "10m";  // honoured (docs/queues.md rule 13): no warning
  auto r = place({n.obj, q});
  REQUIRE_MESSAGE(r.is_ok(), r.status().message());
  REQUIRE(r->warnings.size() == 1);
  CHECK(r->warnings[0].starts_with("queue q: spec.displayName is not honoured by fracpack"));
  CHECK(r->warnings[0].ends_with("(in.yaml, object 2)"));
}

TEST_CASE("a pod annotation in our families that is none of ours refuses the pod, naming it") {
  NodeBuilder n("n");
  n.gpus(1, 80000).fractions();
  for (const char* key : {"gpu-fraction-num-device", "gpu-memory-request", "fracpack.io/gpu", "gpu-fractions"}) {
    CAPTURE(key);
    auto r = place({n.obj, PodBuilder("p").fraction("0.5").annotation(key, "1").obj});
    REQUIRE_MESSAGE(r.is_ok(), r.status().message());
    CHECK(r->placements.empty());
    REQUIRE(r->unschedulable.size() == 1);
    CHECK(r->unschedulable[0].reason.find(fmt::format("unknown annotation \"{}\"", key)) != std::string::npos);
  }
  auto ok = place({n.obj, PodBuilder("p").fraction("0.5").annotation("fracpack.io/retry", "1").obj});
  REQUIRE(ok.is_ok());
  CHECK(ok->placements.size() == 1);
}

TEST_CASE("a quota rule with an unknown hash key is refused") {
  const auto path = temp_file("strict-rules.yaml", "rules:\n- {qos: LS, queue: a, hash: {buckets: 2, bucket: 1, buckts: 3}}\n");
  auto rules = quota::read_rules(path);
  REQUIRE_FALSE(rules.is_ok());
  CHECK(rules.status().message().find("hash: unknown key \"buckts\" (known: buckets, bucket)") != std::string::npos);
}

}  // namespace
}  // namespace fracpack::test
