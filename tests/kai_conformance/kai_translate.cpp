// KAI's TestTopologyBasic → Kubernetes objects, following KAI's test builder
// (pkg/scheduler/test_utils at the pinned commit; docs/kai-compatibility.md):
//   - a node allocates 20000 CPUs (its CPUMillis read as a quantity), 20G memory, 110 pods and its GPUs, each of 100 MiB
//     (node_info.DefaultGpuMemory) unless GPUMemory says; label kai.scheduler/type = its name;
//   - a task asks 1 CPU and 1G (resources_fake defaults) unless its job says, and its job's GPUs:
//     whole as nvidia.com/gpu, a fraction as gpu-fraction, GPU memory as gpu-memory;
//   - a job is a PodGroup whose minMember is its task count (jobs_fake.BuildJobInfo), or whose
//     sub-groups and topology constraints are its RootSubGroupSet's; jobs are ordered by priority (stable) and
//     the first is the oldest, a minute apart (or JobAgeInMinutes);
//   - without Departments, every queue sits under a "default" department without quota or limit;
//     a department's over-quota weight is its deserved GPUs (test_utils_builder.go).
#include <algorithm>
#include <chrono>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "fracpack/k8s/time.hpp"
#include "kai_conformance/kai_scenario.hpp"

namespace fracpack::test::kai {

std::string dns(std::string name) {
  for (char& c : name) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.') c = '-';
  }
  return name;
}

namespace {

const json kNull;
const json kNoObject = json::object();
const json kNoArray = json::array();

/// `v` when it is an object (an array), else an empty one: what a scenario leaves out.
const json& object_or_empty(const json& v) { return v.is_object() ? v : kNoObject; }
const json& array_or_empty(const json& v) { return v.is_array() ? v : kNoArray; }

const json& field(const json& object, const std::string& key) {
  if (!object.is_object()) return kNull;
  auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

double number(const json& object, const std::string& key, double otherwise = 0) {
  const json& v = field(object, key);
  return v.is_number() ? v.get<double>() : otherwise;
}

std::string text(const json& object, const std::string& key, const std::string& otherwise = "") {
  const json& v = field(object, key);
  return v.is_string() ? v.get<std::string>() : otherwise;
}

/// A number as KAI's builder prints it (strconv.FormatFloat 'f', -1): no trailing zeros.
std::string decimal(double v) {
  std::string s = fmt::format("{:.6f}", v);
  s.erase(s.find_last_not_of('0') + 1);
  if (s.back() == '.') s.pop_back();
  return s;
}

std::string rfc3339(std::int64_t seconds) {
  return k8s::format_micro_time(std::chrono::system_clock::time_point(std::chrono::seconds(seconds)));
}

json dns_all(const json& names) {
  json out = json::array();
  for (const json& n : names) out.push_back(dns(n.get<std::string>()));
  return out;
}

/// Collects what a scenario uses that is not translated.
class Gaps {
 public:
  explicit Gaps(std::vector<std::string>& out) : out_(out) {}
  void add(const std::string& why) {
    if (std::find(out_.begin(), out_.end(), why) == out_.end()) out_.push_back(why);
  }
  /// Every key of `object` outside `known`, as "<what>.<key>".
  void unknown_keys(const json& object, const std::string& what, const std::set<std::string>& known) {
    if (!object.is_object()) return;
    for (const auto& [key, value] : object.items()) {
      if (!known.count(key) && !value.is_null()) add(fmt::format("{}.{}", what, key));
    }
  }

 private:
  std::vector<std::string>& out_;
};

json node_object(const std::string& name, const json& node, Gaps& gaps) {
  gaps.unknown_keys(node, "node", {"GPUs", "GPUMemory", "CPUMillis", "CPUMemory", "MaxTaskNum", "Labels", "GPUName"});
  if (field(node, "GpuMemorySynced").is_boolean() && !field(node, "GpuMemorySynced").get<bool>()) gaps.add("node.GpuMemorySynced=false");
  const int gpus = static_cast<int>(number(node, "GPUs"));
  const double cpu_millis = number(node, "CPUMillis");
  const double memory = number(node, "CPUMemory");
  const double max_pods = number(node, "MaxTaskNum");
  json labels = {{"kubernetes.io/hostname", name}, {"kai.scheduler/type", name}};
  if (gpus > 0) {
    labels["nvidia.com/gpu.count"] = std::to_string(gpus);
    labels["nvidia.com/gpu.memory"] = decimal(number(node, "GPUMemory") > 0 ? number(node, "GPUMemory") : 100);
  }
  for (const auto& [k, v] : object_or_empty(field(node, "Labels")).items()) labels[k] = v;
  // KAI's builder parses CPUMillis (default "20000") as a quantity: whole CPUs, despite the name.
  json allocatable = {{"cpu", cpu_millis > 0 ? decimal(cpu_millis) : "20000"},
                      {"memory", memory > 0 ? decimal(memory) : "20G"},
                      {"pods", max_pods > 0 ? decimal(max_pods) : "110"}};
  if (gpus > 0) allocatable["nvidia.com/gpu"] = std::to_string(gpus);
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", name}, {"labels", labels}}},
          {"spec", json::object()},
          {"status",
           {{"allocatable", allocatable},
            {"conditions",
             {{{"type", "Ready"}, {"status", "True"}}, {{"type", "gpu-fractioning.nvidia.com/Ready"}, {"status", "True"}}}}}}};
}

json resource(double quota, double limit, double weight) {
  return {{"quota", quota}, {"limit", limit}, {"overQuotaWeight", weight}};
}

json queue_object(const std::string& name, const std::string& parent, std::int64_t created, json resources,
                  const json& priority, const json& min_runtime) {
  json spec = {{"resources", std::move(resources)}};
  if (!parent.empty()) spec["parentQueue"] = parent;
  if (priority.is_number()) spec["priority"] = priority;
  if (min_runtime.is_number()) spec["reclaimMinRuntime"] = fmt::format("{}s", min_runtime.get<std::int64_t>() / 1000000000);
  return {{"apiVersion", "scheduling.run.ai/v2"},
          {"kind", "Queue"},
          {"metadata", {{"name", name}, {"creationTimestamp", rfc3339(created)}}},
          {"spec", spec}};
}

/// A cpu or memory quota and limit: -1 (none) unless the test sets it.
json optional_resource(const json& q, const std::string& quota_key, const std::string& limit_key) {
  return resource(number(q, quota_key, -1), number(q, limit_key, -1), 1);
}

void add_queues(const json& topology, std::int64_t now, Translation& out, Gaps& gaps) {
  const json& departments = field(topology, "Departments");
  const bool no_departments = !departments.is_array() || departments.empty();
  const bool flat = field(topology, "DisableDefaultDepartment").is_boolean() && field(topology, "DisableDefaultDepartment").get<bool>();
  if (no_departments && !flat) {
    // KAI's default department: quota and limit -1, weight -1 (its deserved GPUs); alone at the
    // top, its weight divides nothing, so 1 (fracpack refuses a negative weight).
    out.objects.push_back(queue_object("default", "", now, {{"gpu", resource(-1, -1, 1)}, {"cpu", resource(-1, -1, 1)}, {"memory", resource(-1, -1, 1)}}, kNull, kNull));
  }
  std::size_t index = 0;
  for (const json& d : array_or_empty(departments)) {
    gaps.unknown_keys(d, "department", {"Name", "DeservedGPUs", "MaxAllowedGPUs", "MaxAllowedCPUs", "MaxAllowedMemory"});
    const double deserved = number(d, "DeservedGPUs");
    const double max = number(d, "MaxAllowedGPUs") != 0 ? number(d, "MaxAllowedGPUs") : -1;
    // Its over-quota weight is its deserved GPUs; an unlimited (-1) one weighs 1 (fracpack
    // refuses a negative weight).
    json resources = {{"gpu", resource(deserved, max, deserved >= 0 ? deserved : 1)},
                      {"cpu", resource(-1, number(d, "MaxAllowedCPUs", -1), 1)},
                      {"memory", resource(-1, number(d, "MaxAllowedMemory", -1), 1)}};
    out.objects.push_back(queue_object(dns(text(d, "Name")), "", now + 60 * static_cast<std::int64_t>(index++), resources, kNull, kNull));
  }
  index = 0;
  for (const json& q : array_or_empty(field(topology, "Queues"))) {
    gaps.unknown_keys(q, "queue", {"Name", "Priority", "DeservedGPUs", "DeservedCPUs", "DeservedMemory", "MaxAllowedGPUs",
                                   "MaxAllowedCPUs", "MaxAllowedMemory", "GPUOverQuotaWeight", "ParentQueue", "ReclaimMinRuntime"});
    if (field(q, "V1").is_boolean() && field(q, "V1").get<bool>()) gaps.add("queue.V1 (a Queue without resources)");
    const std::string parent = no_departments && !flat ? "default" : dns(text(q, "ParentQueue"));
    const double max = number(q, "MaxAllowedGPUs") != 0 ? number(q, "MaxAllowedGPUs") : -1;
    json resources = {{"gpu", resource(number(q, "DeservedGPUs"), max, number(q, "GPUOverQuotaWeight"))},
                      {"cpu", optional_resource(q, "DeservedCPUs", "MaxAllowedCPUs")},
                      {"memory", optional_resource(q, "DeservedMemory", "MaxAllowedMemory")}};
    out.objects.push_back(queue_object(dns(text(q, "Name")), parent, now + 60 * static_cast<std::int64_t>(index++), resources,
                                       field(q, "Priority"), field(q, "ReclaimMinRuntime")));
  }
}

/// The GPU devices of the bound pods of one node, allocated as KAI's builder adds them (tasks
/// by name): a whole pod takes the lowest free devices; a shared pod its GPU group's device,
/// the lowest free one when the group is new; a shared pod without a group a device of its own
/// (KAI gives it a fresh group), or — when no device is free, where KAI's builder lets the node
/// run over — the lowest shared device with room for its portion.
class NodeDevices {
 public:
  explicit NodeDevices(int count) : count_(count) {}
  std::vector<int> whole(int count) {
    std::vector<int> out;
    for (int i = 0; static_cast<int>(out.size()) < count; ++i) {
      if (!used_.count(i)) out.push_back(i);
    }
    used_.insert(out.begin(), out.end());
    return out;
  }
  /// `portion`: of the device, in (0, 1]; 0 for a memory request.
  int group(const std::string& name, double portion) {
    if (!name.empty()) {
      if (auto it = groups_.find(name); it != groups_.end()) return share(it->second, portion);
    }
    int device = -1;
    if (name.empty() && static_cast<int>(used_.size()) >= count_) {
      for (const auto& [d, held] : shared_) {
        if (held + portion <= 1.0 + 1e-9) {
          device = d;
          break;
        }
      }
    }
    if (device < 0) device = whole(1).front();
    if (!name.empty()) groups_[name] = device;
    return share(device, portion);
  }

 private:
  int share(int device, double portion) {
    shared_[device] += portion;
    return device;
  }
  int count_;
  std::set<int> used_;
  std::map<std::string, int> groups_;
  std::map<int, double> shared_;  ///< device → portion held by shared pods
};

struct JobTerms {
  std::string name;
  std::string ns;
  double gpus = 0;
  bool fraction = false;
  std::int64_t created = 0;
  std::int32_t priority = 0;
};

/// The task states fracpack reads from a pod: waiting, or on its node.
const std::set<std::string> kBoundStates = {"Running", "Bound", "Binding", "Allocated"};

json pod_object(const json& job, const JobTerms& terms, const json& task, std::size_t index, std::int64_t now, Gaps& gaps) {
  json requests = json::object();
  json limits = json::object();
  json annotations = {{"pod-group-name", dns(terms.name)}};
  const bool best_effort = field(job, "IsBestEffortJob").is_boolean() && field(job, "IsBestEffortJob").get<bool>();
  if (!best_effort) {
    requests["cpu"] = number(job, "RequiredCPUsPerTask") != 0 ? decimal(number(job, "RequiredCPUsPerTask")) : "1";
    requests["memory"] = number(job, "RequiredMemoryPerTask") != 0 ? decimal(number(job, "RequiredMemoryPerTask")) : "1G";
    double whole = terms.fraction ? 0 : terms.gpus;
    if (field(task, "RequiredGPUs").is_number()) whole = number(task, "RequiredGPUs");
    if (whole > 0) limits["nvidia.com/gpu"] = decimal(whole);
    if (terms.fraction) annotations["gpu-fraction"] = decimal(terms.gpus);
    if (number(job, "RequiredGpuMemory") > 0) annotations["gpu-memory"] = decimal(number(job, "RequiredGpuMemory"));
    if (field(job, "RequiredMultiFractionDevicesPerTask").is_number()) {
      annotations["gpu-fraction-num-devices"] = decimal(number(job, "RequiredMultiFractionDevicesPerTask"));
    }
  }
  for (const auto& [k, v] : object_or_empty(field(task, "Annotations")).items()) annotations[k] = v;
  json container = {{"name", "main"}, {"image", "busybox"}, {"resources", {{"requests", requests}}}};
  if (!limits.empty()) container["resources"]["limits"] = limits;
  const std::string name = dns(fmt::format("{}-{}", terms.name, index));
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"name", name}, {"namespace", terms.ns}, {"uid", name}, {"creationTimestamp", rfc3339(terms.created)},
                {"annotations", annotations}}},
              {"spec", {{"priority", terms.priority}, {"containers", json::array({container})}}},
              {"status", {{"phase", "Pending"}}}};
  if (!text(task, "SubGroupName").empty()) pod["metadata"]["labels"]["kai.scheduler/subgroup-name"] = dns(text(task, "SubGroupName"));
  if (const json& affinity = field(task, "NodeAffinityNames"); affinity.is_array() && !affinity.empty()) {
    pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] = json::array(
        {{{"matchExpressions", json::array({{{"key", "kai.scheduler/type"}, {"operator", "In"}, {"values", dns_all(affinity)}}})}}});
  }
  const std::string state = text(task, "State", "Pending");
  if (state == "Succeeded" || state == "Failed") pod["status"]["phase"] = state;
  if (kBoundStates.count(state)) {
    pod["status"]["phase"] = "Running";
    pod["status"]["startTime"] = rfc3339(now - 60);
  }
  if (kBoundStates.count(state) || state == "Succeeded" || state == "Failed") {
    if (text(task, "NodeName").empty()) gaps.add("a " + state + " task without a node");
    pod["spec"]["nodeName"] = dns(text(task, "NodeName"));
  } else if (state != "Pending") {
    gaps.add("task state " + state);
  }
  return pod;
}

/// KAI's TopologyConstraintInfo as a PodGroup's topologyConstraint (null: none). Levels are node
/// label keys in both.
json topology_constraint(const json& info) {
  if (!info.is_object()) return kNull;
  json out = json::object();
  for (const auto& [from, to] : {std::pair{"Topology", "topology"}, std::pair{"RequiredLevel", "requiredTopologyLevel"},
                                 std::pair{"PreferredLevel", "preferredTopologyLevel"}}) {
    if (!text(info, from).empty()) out[to] = text(info, from);
  }
  return out.empty() ? kNull : out;
}

/// A sub-group set's children as PodGroup spec.subGroups entries under `parent` ("" : the
/// PodGroup), pod sets (leaves, minMember) and sub-group sets (minSubGroup) in KAI's order.
void add_sub_groups(const json& set, const std::string& parent, json& out) {
  for (const json& leaf : array_or_empty(field(set, "podSets"))) {
    json g = {{"name", dns(text(leaf, "name"))}, {"minMember", static_cast<int>(number(leaf, "minAvailable"))}};
    if (!parent.empty()) g["parent"] = parent;
    if (json t = topology_constraint(field(leaf, "topology")); !t.is_null()) g["topologyConstraint"] = t;
    out.push_back(g);
  }
  for (const json& child : array_or_empty(field(set, "subGroupSets"))) {
    json g = {{"name", dns(text(child, "name"))}};
    if (!parent.empty()) g["parent"] = parent;
    if (field(child, "minSubGroup").is_number()) g["minSubGroup"] = static_cast<int>(number(child, "minSubGroup"));
    if (json t = topology_constraint(field(child, "topology")); !t.is_null()) g["topologyConstraint"] = t;
    out.push_back(g);
    add_sub_groups(child, g["name"], out);
  }
}

/// The PodGroup spec's gang terms from the job's RootSubGroupSet (jobs_fake.BuildJobInfo): none
/// (or jobs_fake.DefaultSubGroup(n), one pod set "default") is minMember; tasks naming no
/// sub-group join a pod set "default" that KAI adds, its minimum every task of the job.
void gang_terms(const json& job, json& spec, Gaps& gaps) {
  const json& tasks = array_or_empty(field(job, "Tasks"));
  const json& root = field(field(job, "RootSubGroupSet"), "$subGroupSet");
  if (field(job, "RootSubGroupSet").is_null()) {
    spec["minMember"] = tasks.size();
    return;
  }
  if (!root.is_object()) {
    gaps.add("job.RootSubGroupSet");
    return;
  }
  if (json t = topology_constraint(field(root, "topology")); !t.is_null()) spec["topologyConstraint"] = t;
  if (field(root, "minSubGroup").is_number()) spec["minSubGroup"] = static_cast<int>(number(root, "minSubGroup"));
  json groups = json::array();
  add_sub_groups(root, "", groups);
  const bool unnamed = std::any_of(tasks.begin(), tasks.end(), [](const json& t) { return text(t, "SubGroupName").empty(); });
  const bool has_default = std::any_of(groups.begin(), groups.end(), [](const json& g) { return g["name"] == "default"; });
  if (unnamed && !has_default) groups.push_back({{"name", "default"}, {"minMember", tasks.size()}});
  // One leaf "default" at the top, and nothing else: a plain gang.
  if (groups.size() == 1 && groups[0]["name"] == "default" && !spec.contains("minSubGroup")) {
    spec["minMember"] = groups[0]["minMember"];
    return;
  }
  spec["subGroups"] = groups;
}

/// GPU groups of each bound task, by pod name (tasks_fake.TestTaskBasic.GPUGroups).
using GpuGroups = std::map<std::string, std::vector<std::string>>;

void add_job(const json& job, std::int64_t created, std::int64_t now, Translation& out, GpuGroups& groups, Gaps& gaps) {
  gaps.unknown_keys(job, "job",
                    {"RequiredGPUsPerTask", "RequiredGpuMemory", "RequiredCPUsPerTask", "RequiredMemoryPerTask",
                     "RequiredMultiFractionDevicesPerTask", "Priority", "Preemptibility", "Name", "Namespace", "QueueName",
                     "IsBestEffortJob", "JobAgeInMinutes", "Tasks", "RootSubGroupSet", "QOSClass", "PreemptionDelay"});
  JobTerms terms;
  terms.name = text(job, "Name");
  terms.ns = text(job, "Namespace", "default");
  if (terms.ns.empty()) terms.ns = "default";
  terms.gpus = number(job, "RequiredGPUsPerTask");
  terms.fraction = terms.gpus != std::floor(terms.gpus);
  terms.created = created;
  terms.priority = static_cast<std::int32_t>(number(job, "Priority"));
  json group_spec = {{"queue", dns(text(job, "QueueName"))}};
  gang_terms(job, group_spec, gaps);
  if (!text(job, "Preemptibility").empty()) group_spec["preemptibility"] = text(job, "Preemptibility");
  if (const json& delay = field(job, "PreemptionDelay"); delay.is_object()) {  // a metav1.Duration: nanoseconds
    group_spec["preemptionDelay"] = fmt::format("{}ns", static_cast<std::int64_t>(number(delay, "Duration")));
  }
  out.objects.push_back({{"apiVersion", "scheduling.run.ai/v2alpha2"},
                         {"kind", "PodGroup"},
                         {"metadata", {{"name", dns(terms.name)}, {"namespace", terms.ns}, {"creationTimestamp", rfc3339(created)}}},
                         {"spec", group_spec}});
  std::size_t index = 0;
  for (const json& task : array_or_empty(field(job, "Tasks"))) {
    gaps.unknown_keys(task, "task", {"Name", "GPUGroups", "RequiredGPUs", "State", "NodeName", "NodeAffinityNames", "Annotations", "SubGroupName"});
    json pod = pod_object(job, terms, task, index++, now, gaps);
    const std::string name = pod["metadata"]["name"];
    out.tasks.push_back({terms.name, fmt::format("{}-{}", terms.name, index - 1), terms.ns + "/" + name, text(task, "State", "Pending")});
    out.objects.push_back(std::move(pod));
    if (field(task, "GPUGroups").is_array()) groups[name] = field(task, "GPUGroups").get<std::vector<std::string>>();
  }
}

/// Device annotations of the bound pods, node by node, tasks in name order (KAI's toSorted).
void assign_devices(Translation& out, const GpuGroups& groups) {
  std::map<std::string, int> gpu_count;  // node → its GPUs
  for (const json& o : out.objects) {
    if (o["kind"] == "Node") gpu_count[o["metadata"]["name"]] = std::stoi(o["status"]["allocatable"].value("nvidia.com/gpu", "0"));
  }
  std::map<std::string, std::vector<json*>> by_node;
  for (json& o : out.objects) {
    if (o["kind"] == "Pod" && o["spec"].contains("nodeName") && o["status"]["phase"] == "Running") by_node[o["spec"]["nodeName"]].push_back(&o);
  }
  for (auto& [node, pods] : by_node) {
    std::sort(pods.begin(), pods.end(), [](const json* a, const json* b) { return a->at("metadata").at("name") < b->at("metadata").at("name"); });
    NodeDevices devices(gpu_count.count(node) ? gpu_count.at(node) : 0);
    for (json* pod : pods) {
      json& meta = (*pod)["metadata"];
      const json& limits = (*pod)["spec"]["containers"][0]["resources"].value("limits", json::object());
      std::vector<int> held;
      if (limits.contains("nvidia.com/gpu")) {
        held = devices.whole(std::stoi(limits["nvidia.com/gpu"].get<std::string>()));
      } else if (meta["annotations"].contains("gpu-fraction") || meta["annotations"].contains("gpu-memory")) {
        auto it = groups.find(meta["name"].get<std::string>());
        const std::vector<std::string> named = it == groups.end() ? std::vector<std::string>{} : it->second;
        const int count = meta["annotations"].contains("gpu-fraction-num-devices")
                              ? std::stoi(meta["annotations"]["gpu-fraction-num-devices"].get<std::string>())
                              : 1;
        const double portion = meta["annotations"].contains("gpu-fraction") ? std::stod(meta["annotations"]["gpu-fraction"].get<std::string>()) : 0;
        for (int i = 0; i < count; ++i) held.push_back(devices.group(i < static_cast<int>(named.size()) ? named[i] : "", portion));
      }
      if (held.empty()) continue;
      std::vector<std::string> names;
      for (int d : held) names.push_back(std::to_string(d));
      meta["annotations"]["nvidia.com/container.main.gpus.devices"] = fmt::format("{}", fmt::join(names, ","));
    }
  }
}

/// Every value the generator could not evaluate ("$expr:<Go source>").
void find_expressions(const json& value, const std::string& key, Gaps& gaps) {
  if (value.is_string()) {
    const std::string& s = value.get_ref<const std::string&>();
    if (s.rfind("$expr:", 0) == 0) {
      gaps.add(key + " = " + s.substr(6, 80));
    }
  } else if (value.is_object()) {
    for (const auto& [k, v] : value.items()) find_expressions(v, k, gaps);
  } else if (value.is_array()) {
    for (const json& v : value) find_expressions(v, key, gaps);
  }
}

// Topologies (KAI Topology objects) name the levels a constraint may use; fracpack reads the
// levels off node labels, the same keys, so they add nothing to translate.
void check_topology_keys(const json& topology, Gaps& gaps) {
  find_expressions(topology, "topology", gaps);
  gaps.unknown_keys(topology, "topology",
                    {"Name", "Jobs", "Nodes", "Queues", "Departments", "DisableDefaultDepartment", "JobExpectedResults", "Topologies",
                     "TaskExpectedResults", "ExpectedNodesResources", "Mocks"});
  if (const json& mocks = field(topology, "Mocks"); mocks.is_object()) {
    gaps.unknown_keys(mocks, "Mocks", {"CacheRequirements"});
  }
}

}  // namespace

Translation translate(const Scenario& scenario, std::int64_t now) {
  Translation out;
  Gaps gaps(out.untranslated);
  const json& topology = scenario.topology;
  if (scenario.function == "TestHandleElasticJobCommitFailure") gaps.add("a bind that always fails (not a table scenario)");
  check_topology_keys(topology, gaps);
  add_queues(topology, now - 3600, out, gaps);
  for (const auto& [name, node] : object_or_empty(field(topology, "Nodes")).items()) {
    out.objects.push_back(node_object(dns(name), node, gaps));
  }
  // KAI's builder: jobs by priority, highest first (stable); the first is the oldest.
  std::vector<const json*> jobs;
  for (const json& job : array_or_empty(field(topology, "Jobs"))) jobs.push_back(&job);
  std::stable_sort(jobs.begin(), jobs.end(), [](const json* a, const json* b) { return number(*a, "Priority") > number(*b, "Priority"); });
  GpuGroups groups;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const double age = number(*jobs[i], "JobAgeInMinutes");
    const std::int64_t minutes = age != 0 ? static_cast<std::int64_t>(age) : static_cast<std::int64_t>(jobs.size() - i);
    add_job(*jobs[i], now - 60 * minutes, now, out, groups, gaps);
  }
  assign_devices(out, groups);
  return out;
}

}  // namespace fracpack::test::kai
