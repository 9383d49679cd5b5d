// docs/requests.md rules 10–20: what a pod asks for. Every rule and every invalid combination.
// The test names keep older section marks: §1.1 is rules 10 and 14 (NvFractions), §1.2 rules 11
// and 14 (legacy KAI), §1.3 rules 12, 13 and 16 (whole GPUs, replica slots, RDMA), §1.4 rules
// 17–19 (queue, priority, preemptibility).
#include <doctest/doctest.h>

#include "fracpack/k8s/time.hpp"
#include "support/builders.hpp"

namespace fracpack::test {
namespace {

std::string pod_error(const PodBuilder& b) {
  auto p = b.decode();
  REQUIRE_FALSE(p.is_ok());
  CHECK(p.status().code() == Code::kInvalidArgument);
  CHECK(p.status().message().find("pod default/") == 0);  // always names the pod first
  return p.status().message();
}
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST_CASE("§1.1 NvFractions request: a quantity, rounded up to MiB, absolute") {
  CHECK(PodBuilder("p").gpu_memory("16Gi").spec().fraction()->memory == MiB(16384));
  CHECK(PodBuilder("p").gpu_memory("24000Mi").spec().fraction()->memory == MiB(24000));
  CHECK(PodBuilder("p").gpu_memory("20G").spec().fraction()->memory == MiB(19074));
  GpuFraction f = *PodBuilder("p").gpu_memory("16Gi").spec().fraction();
  CHECK(f.memory_on(MiB(143700)) == f.memory_on(MiB(46000)));  // same bytes on every GPU model
  CHECK(f.mode == ComputeMode::kTimeSlicing);
  CHECK(f.container == "main");
  CHECK(f.num_devices == 1);
}

TEST_CASE("§1.1 limit: defaults to the request; request ≤ limit; only a limit sets the request") {
  auto both = PodBuilder("p").gpu_memory("16Gi").annotation("nvidia.com/container.main.gpu-memory.limit", "20Gi").spec();
  CHECK(both.fraction()->memory == MiB(16384));
  CHECK(both.fraction()->memory_limit == MiB(20480));
  auto only_limit = PodBuilder("p").annotation("nvidia.com/container.main.gpu-memory.limit", "8Gi").spec();
  CHECK(only_limit.fraction()->memory == MiB(8192));
  CHECK(contains(pod_error(PodBuilder("p").gpu_memory("16Gi").annotation("nvidia.com/container.main.gpu-memory.limit", "8Gi")),
                 "a limit must be ≥ the request"));
}

TEST_CASE("§1.1 compute mode: time-slicing or sm-sharing, nothing else") {
  CHECK(PodBuilder("p").gpu_memory("8Gi").sm_sharing().spec().fraction()->mode == ComputeMode::kSmSharing);
  CHECK(contains(pod_error(PodBuilder("p").gpu_memory("8Gi").annotation("nvidia.com/container.main.gpu-compute.mode", "mps")),
                 "must be time-slicing or sm-sharing"));
  CHECK(contains(pod_error(PodBuilder("p").sm_sharing()), "no GPU memory is requested"));
}

TEST_CASE("§1.1 keys the scheduler writes at bind time are rejected on a pending pod") {
  CHECK(contains(pod_error(PodBuilder("p").gpu_memory("8Gi").annotation("nvidia.com/container.main.gpus.devices", "0")),
                 "written by the scheduler at bind time"));
  CHECK(contains(pod_error(PodBuilder("p").gpu_memory("8Gi").annotation("nvidia.com/container.main.gpu-compute.portion", "0.5")),
                 "written by the scheduler at bind time"));
  auto bound = PodBuilder("p").gpu_memory("8Gi").annotation("nvidia.com/container.main.gpus.devices", "3,1").bound_to("n1").spec();
  REQUIRE(bound.bound);
  CHECK(bound.bound->node == "n1");
  CHECK(bound.bound->devices == std::vector<int>{3, 1});
}

TEST_CASE("§1.1 the container must exist and only one container may carry the keys") {
  CHECK(contains(pod_error(PodBuilder("p").gpu_memory("8Gi", "sidecar")), "names container \"sidecar\", which is not in the pod"));
  CHECK(contains(pod_error(PodBuilder("p").container("b").gpu_memory("8Gi", "main").gpu_memory("8Gi", "b")),
                 "only one container per pod"));
  auto second = PodBuilder("p").container("worker").gpu_memory("8Gi", "worker").spec();
  CHECK(second.fraction()->container == "worker");
  // 2,000 containers carrying the keys: the message names the first few and counts them all.
  PodBuilder crowd("p");
  for (int i = 0; i < 2000; ++i) crowd.container(fmt::format("c{}", i)).gpu_memory("1Gi", fmt::format("c{}", i));
  const std::string refused = pod_error(crowd);
  CHECK(contains(refused, "… (2000 in all); only one container per pod"));
  CHECK(refused.size() < 1024);
}

TEST_CASE("§1.1 unknown NvFractions keys are typos, not silently ignored") {
  CHECK(contains(pod_error(PodBuilder("p").annotation("nvidia.com/container.main.gpu-memory.requests", "8Gi")),
                 "is not an NvFractions key"));
  CHECK(contains(pod_error(PodBuilder("p").annotation("nvidia.com/container.main", "8Gi")), "is not an NvFractions key"));
}

TEST_CASE("§1.1 bad quantities name the annotation") {
  std::string e = pod_error(PodBuilder("p").gpu_memory("16GB"));
  CHECK(contains(e, "\"16GB\""));
  CHECK(contains(e, "nvidia.com/container.main.gpu-memory.request"));
  CHECK(contains(pod_error(PodBuilder("p").gpu_memory("16gi")), "did you mean \"Gi\""));
  CHECK(contains(pod_error(PodBuilder("p").gpu_memory("0")), "must be > 0"));
  CHECK(contains(pod_error(PodBuilder("p").gpu_memory("-8Gi")), "negative"));
  CHECK(contains(pod_error(PodBuilder("p").gpu_memory("")), "empty"));
}

TEST_CASE("§1.1 a fractional pod must not also request nvidia.com/gpu") {
  CHECK(contains(pod_error(PodBuilder("p").gpu_memory("8Gi").whole(1)), "must not also request nvidia.com/gpu"));
  CHECK(contains(pod_error(PodBuilder("p").fraction("0.5").whole(1)), "must not also request nvidia.com/gpu"));
  CHECK(contains(pod_error(PodBuilder("p").annotation("gpu-memory", "8000").whole(2)), "must not also request"));
}

TEST_CASE("§1.2 gpu-fraction: a decimal in (0, 1], in milli-GPU rounded up") {
  CHECK(PodBuilder("p").fraction("0.5").spec().fraction()->portion == MilliGpu(500));
  CHECK(PodBuilder("p").fraction("1").spec().fraction()->portion == MilliGpu(1000));
  CHECK(PodBuilder("p").fraction("0.3333").spec().fraction()->portion == MilliGpu(334));
  CHECK(PodBuilder("p").fraction(".25").spec().fraction()->portion == MilliGpu(250));
  for (const char* bad : {"0", "1.5", "abc", "-0.5", "50%", "0.5.1", "", "1e-1", "NaN", "inf", "1.0001"}) {
    CAPTURE(bad);
    CHECK(contains(pod_error(PodBuilder("p").fraction(bad)), "must be a decimal in (0, 1]"));
  }
}

TEST_CASE("§1.2 gpu-memory: a whole number of MiB > 0") {
  CHECK(PodBuilder("p").annotation("gpu-memory", "20000").spec().fraction()->memory == MiB(20000));
  for (const char* bad : {"0", "-1", "1.5", "8Gi", "", " 8"}) {
    CAPTURE(bad);
    CHECK(contains(pod_error(PodBuilder("p").annotation("gpu-memory", bad)), "whole number of MiB"));
  }
}

TEST_CASE("§1.2 gpu-fraction and gpu-memory are mutually exclusive") {
  CHECK(contains(pod_error(PodBuilder("p").fraction("0.5").annotation("gpu-memory", "8000")), "mutually exclusive"));
}

TEST_CASE("§1.2 num-devices: ≥ 1, default 1, invalid alone") {
  CHECK(PodBuilder("p").fraction("0.5").devices(2).spec().fraction()->num_devices == 2);
  CHECK(PodBuilder("p").gpu_memory("8Gi").devices(3).spec().fraction()->num_devices == 3);
  CHECK(contains(pod_error(PodBuilder("p").devices(2)), "invalid alone"));
  for (const char* bad : {"0", "two", "1025", "-1"}) {
    CAPTURE(bad);
    CHECK(contains(pod_error(PodBuilder("p").fraction("0.5").annotation("gpu-fraction-num-devices", bad)),
                   "must be a whole number from 1 to 1024"));
  }
}

TEST_CASE("§1.2 gpu-fraction-container-name picks the container; default the first") {
  auto p = PodBuilder("p").container("worker").fraction("0.5").annotation("gpu-fraction-container-name", "worker").spec();
  CHECK(p.fraction()->container == "worker");
  CHECK(PodBuilder("p").container("worker").fraction("0.5").spec().fraction()->container == "main");
  CHECK(contains(pod_error(PodBuilder("p").fraction("0.5").annotation("gpu-fraction-container-name", "nope")),
                 "no such container"));
  CHECK(contains(pod_error(PodBuilder("p").container("w").gpu_memory("8Gi", "main").annotation("gpu-fraction-container-name", "w")),
                 "but the NvFractions keys name container \"main\""));
  CHECK(contains(pod_error(PodBuilder("p").annotation("gpu-fraction-container-name", "main")), "requests no GPU fraction"));
}

TEST_CASE("§1.2 NvFractions request and legacy gpu-memory must agree") {
  auto agree = PodBuilder("p").gpu_memory("8000Mi").annotation("gpu-memory", "8000").spec();
  CHECK(agree.fraction()->memory == MiB(8000));
  CHECK(contains(pod_error(PodBuilder("p").gpu_memory("8Gi").annotation("gpu-memory", "8000")), "they must agree"));
  CHECK(contains(pod_error(PodBuilder("p").gpu_memory("8Gi").fraction("0.5")), "use one form"));
}

TEST_CASE("§1.3 whole GPUs: an integer nvidia.com/gpu, requests equal to limits") {
  auto p = PodBuilder("p").whole(4).spec();
  REQUIRE(p.whole());
  CHECK(p.whole()->count == 4);
  CHECK_FALSE(p.whole()->shared_slot);
  CHECK(PodBuilder("p").whole(0).spec().cpu_only());
  CHECK(contains(pod_error(PodBuilder("p").whole(1).request("nvidia.com/gpu", "2")), "requires them to be equal"));
  CHECK(contains(pod_error(PodBuilder("p").limit("nvidia.com/gpu", "0.5")), "whole number"));
  auto summed = PodBuilder("p").whole(1).container("b").limit("nvidia.com/gpu", "2", 1).spec();
  CHECK(summed.whole()->count == 3);
}

TEST_CASE("§1.3 a replica slot is asked for through the nodeSelector") {
  CHECK(PodBuilder("p").whole(1).selector("nvidia.com/gpu.sharing-strategy", "mps").spec().whole()->shared_slot);
  CHECK(PodBuilder("p").whole(1).selector("nvidia.com/gpu.product", "NVIDIA-L40S-SHARED").spec().whole()->shared_slot);
  CHECK_FALSE(PodBuilder("p").whole(1).selector("nvidia.com/gpu.product", "NVIDIA-L40S").spec().whole()->shared_slot);
}

TEST_CASE("§1.3 RDMA resources mark InfiniBand pods; the names are configurable") {
  auto ib = PodBuilder("p").whole(8).infiniband(4).spec();
  CHECK(ib.infiniband());
  CHECK(ib.rdma.at("rdma/ib") == 4);
  CHECK(PodBuilder("p").whole(8).limit("rdma/rdma_shared_device_a", "1").spec().infiniband());
  CHECK(PodBuilder("p").whole(8).limit("nvidia.com/hostdev", "1").spec().infiniband());
  auto other = PodBuilder("p").whole(1).limit("example.com/fpga", "1").spec();
  CHECK_FALSE(other.infiniband());
  CHECK(other.extended.at("example.com/fpga") == 1);
  DecodeConfig custom;
  custom.rdma_resources = {"example.com/fpga"};
  auto p = k8s::decode_pod(PodBuilder("p").whole(1).limit("example.com/fpga", "1").obj, custom, PriorityClasses{});
  REQUIRE(p.is_ok());
  CHECK(p->infiniband());
}

TEST_CASE("cpu and memory: sum of containers, max with init containers, sidecars, overhead") {
  PodBuilder b("p");
  b.container("b").request("cpu", "500m", 1).request("memory", "1Gi", 1);
  b.obj["spec"]["initContainers"] = nlohmann::json::array(
      {{{"name", "setup"}, {"resources", {{"requests", {{"cpu", "4"}, {"memory", "1Gi"}}}}}}});
  b.obj["spec"]["overhead"] = {{"cpu", "250m"}, {"memory", "100Mi"}};
  auto p = b.spec();
  CHECK(p.cpu == MilliCpu(4250));                                  // max(1.5, 4) + 0.25
  CHECK(p.memory == Bytes((2LL << 30) + (100LL << 20)));           // max(2Gi, 1Gi) + 100Mi

  PodBuilder s("s");  // a sidecar (restartPolicy Always) runs alongside the containers
  s.obj["spec"]["initContainers"] = nlohmann::json::array(
      {{{"name", "mesh"}, {"restartPolicy", "Always"}, {"resources", {{"requests", {{"cpu", "1"}}}}}},
       {{"name", "setup"}, {"resources", {{"requests", {{"cpu", "1500m"}}}}}}});
  CHECK(s.spec().cpu == MilliCpu(2500));  // max(1 + 1 sidecar, 1.5 + 1 sidecar)

  PodBuilder l("l");  // a limit alone sets the request
  l.obj["spec"]["containers"][0]["resources"] = {{"limits", {{"cpu", "3"}, {"memory", "2Gi"}}}};
  CHECK(l.spec().cpu == MilliCpu(3000));
  CHECK(contains(pod_error(PodBuilder("p").limit("cpu", "500m")),
                 "spec.containers[0] (container \"main\").resources: cpu request 1000m is larger than its limit 500m"));
}

TEST_CASE("§1.4 queue label, preemptibility and priority classes") {
  CHECK(PodBuilder("p").spec().queue == "default-queue");
  CHECK(PodBuilder("p").label("kai.scheduler/queue", "team-a").spec().queue == "team-a");
  CHECK(PodBuilder("p").label("runai/queue", "legacy").spec().queue == "legacy");
  CHECK(PodBuilder("p").label("runai/queue", "old").label("kai.scheduler/queue", "new").spec().queue == "new");

  auto train = PodBuilder("p").priority_class("train").spec();
  CHECK(train.priority == 50);
  CHECK(train.preemptible);
  auto inference = PodBuilder("p").priority_class("inference").spec();
  CHECK(inference.priority == 125);
  CHECK_FALSE(inference.preemptible);
  CHECK_FALSE(PodBuilder("p").priority_class("build").spec().preemptible);  // 100 is not below 100
  CHECK(PodBuilder("p").priority_class("build-preemptible").spec().preemptible);
  CHECK(PodBuilder("p").spec().preemptible);  // no class: priority 0
  CHECK(PodBuilder("p").priority_class("inference").label("kai.scheduler/preemptibility", "preemptible").spec().preemptible);
  CHECK_FALSE(PodBuilder("p").priority_class("train").label("kai.scheduler/preemptibility", "non-preemptible").spec().preemptible);
  CHECK(contains(pod_error(PodBuilder("p").label("kai.scheduler/preemptibility", "maybe")), "must be \"preemptible\""));
  CHECK(contains(pod_error(PodBuilder("p").priority_class("gold")), "not a known PriorityClass"));
  PriorityClasses classes;
  classes.add("gold", 1000);
  auto gold = k8s::decode_pod(PodBuilder("p").priority_class("gold").obj, DecodeConfig{}, classes);
  REQUIRE(gold.is_ok());
  CHECK(gold->priority == 1000);
}

TEST_CASE("gang id from the PodGroup annotation") {
  CHECK(PodBuilder("p").gang("job-1").spec().gang == std::optional<std::string>("job-1"));
  CHECK_FALSE(PodBuilder("p").spec().gang.has_value());
}

TEST_CASE("structural errors name the pod and field") {
  nlohmann::json no_spec = {{"kind", "Pod"}, {"metadata", {{"name", "x"}}}};
  auto p = k8s::decode_pod(no_spec, DecodeConfig{}, PriorityClasses{});
  REQUIRE_FALSE(p.is_ok());
  CHECK(p.status().message() == "pod default/x: spec is missing");
  PodBuilder wrong("w");
  wrong.obj["metadata"]["annotations"] = nlohmann::json::array();
  CHECK(contains(pod_error(wrong), "annotations must be a map"));
  PodBuilder empty("e");
  empty.obj["spec"]["containers"] = nlohmann::json::array();
  CHECK(contains(pod_error(empty), "spec.containers is empty"));
  PodBuilder dup("d");
  dup.container("main");
  CHECK(contains(pod_error(dup), "appears twice"));
}

}  // namespace
}  // namespace fracpack::test

namespace fracpack::test {
namespace {

TEST_CASE("RFC 3339 times: offsets and fractions read; days that do not exist refused") {
  CHECK(k8s::parse_rfc3339("1970-01-01T00:00:00Z") == 0);
  CHECK(k8s::parse_rfc3339("2026-01-01T01:00:00.5+01:00") == k8s::parse_rfc3339("2026-01-01T00:00:00Z"));
  CHECK(k8s::parse_rfc3339("2024-02-29T00:00:00Z").has_value());  // a leap year
  CHECK_FALSE(k8s::parse_rfc3339("2026-02-29T00:00:00Z").has_value());
  CHECK_FALSE(k8s::parse_rfc3339("2026-02-30T00:00:00Z").has_value());  // was read as 2 March
  CHECK_FALSE(k8s::parse_rfc3339("2026-04-31T00:00:00Z").has_value());
  CHECK_FALSE(k8s::parse_rfc3339("2026-13-01T00:00:00Z").has_value());
}

TEST_CASE("the PodGroup a pod names is read without decoding the rest, as decode_pod reads it") {
  PodBuilder gang("p");
  gang.gang("train").limit("nvidia.com/gpu", "not-a-number");  // a pod that does not decode
  CHECK_FALSE(k8s::decode_pod(gang.obj, DecodeConfig{}, PriorityClasses{}).is_ok());
  CHECK(k8s::pod_group_of(gang.obj) == std::optional<std::string>("train"));
  PodBuilder labelled("q");
  labelled.label("scheduling.x-k8s.io/pod-group", "by-label");
  CHECK(k8s::pod_group_of(labelled.obj) == std::optional<std::string>("by-label"));
  auto both = labelled;
  both.gang("by-annotation");  // the annotation first, as decode_pod
  CHECK(k8s::pod_group_of(both.obj) == std::optional<std::string>("by-annotation"));
  CHECK(k8s::decode_pod(both.obj, DecodeConfig{}, PriorityClasses{})->gang == std::optional<std::string>("by-annotation"));
  CHECK_FALSE(k8s::pod_group_of(PodBuilder("r").obj).has_value());
  CHECK_FALSE(k8s::pod_group_of(json::array()).has_value());
}

}  // namespace
}  // namespace fracpack::test
