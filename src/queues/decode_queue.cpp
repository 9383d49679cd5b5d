#include "fracpack/queues/decode_queue.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <ctime>

#include <fmt/format.h>

#include "fracpack/k8s/time.hpp"
#include "fracpack/core/quoting.hpp"
#include "fracpack/k8s/json_fields.hpp"
#include "fracpack/k8s/names.hpp"
#include "fracpack/k8s/strict_fields.hpp"

namespace fracpack::queues {
namespace {

using nlohmann::json;
using k8s::member;

/// A number written as a JSON number or a decimal string; nullopt when it is neither or not finite.
std::optional<double> number_of(const json& v) {
  if (v.is_number()) {
    const double d = v.get<double>();
    return std::isfinite(d) ? std::optional<double>(d) : std::nullopt;
  }
  if (!v.is_string()) return std::nullopt;
  const std::string& s = v.get_ref<const std::string&>();
  double d = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size() || !std::isfinite(d)) return std::nullopt;
  return d;
}

/// Scale per resource: KAI's unit → fracpack's (GPUs → milli-GPU, millicores → milli-CPU, MB → bytes).
double scale(Resource r) {
  switch (r) {
    case Resource::kGpu: return 1000.0;
    case Resource::kCpu: return 1.0;
    case Resource::kMemory: return 1e6;
  }
  return 1.0;
}

/// Reads spec.resources.<r>.<field>; `minus_one` allows -1 (unlimited).
Result<std::optional<std::int64_t>> amount(const json& resource, const std::string& who, Resource r,
                                           std::string_view field, bool minus_one, double field_scale) {
  const json* v = member(resource, field);
  if (v == nullptr) return std::optional<std::int64_t>{};
  const std::string where = fmt::format("queue {}: spec.resources.{}.{}", who, resource_name(r), field);
  auto d = number_of(*v);
  if (!d) return invalid_argument("{} = {}: must be a finite number", where, excerpt(v->dump()));
  if (*d == -1 && minus_one) return std::optional<std::int64_t>{kUnlimited};
  if (*d < 0) {
    return invalid_argument("{} = {}: must be ≥ 0{}", where, excerpt(v->dump()), minus_one ? ", or -1 for unlimited" : "");
  }
  const double scaled = std::round(*d * field_scale);
  if (scaled > 9.0e18) return invalid_argument("{} = {}: too large", where, excerpt(v->dump()));
  return std::optional<std::int64_t>{static_cast<std::int64_t>(scaled)};
}

/// spec.<field>, a metav1.Duration: a string in Go's duration syntax ("20s", "1h30m"). A
/// negative one is kept as written (the API server accepts it) and protects nothing, as in KAI.
Result<std::optional<std::chrono::nanoseconds>> duration_field(const json& spec, const char* field, const std::string& who) {
  const json* v = member(spec, field);
  if (v == nullptr || v->is_null()) return std::optional<std::chrono::nanoseconds>{};
  auto d = v->is_string() ? k8s::parse_go_duration(v->get_ref<const std::string&>()) : std::nullopt;
  if (!d) {
    return invalid_argument("{}: spec.{} = {}: must be a duration such as \"20s\" or \"1h30m\" (Go's time.ParseDuration)", who,
                            field, excerpt(v->dump()));
  }
  return std::optional<std::chrono::nanoseconds>{*d};
}

/// KAI's Queue (pkg/apis/scheduling/v2: queue_types.go, resources.go).
const k8s::TypeSchema& queue_schema() {
  static const k8s::TypeSchema schema(
      "scheduling.run.ai/v2", "Queue",
      {"spec", "spec.displayName", "spec.parentQueue", "spec.resources", "spec.priority", "spec.preemptMinRuntime",
       "spec.reclaimMinRuntime", "spec.resources.gpu", "spec.resources.cpu", "spec.resources.memory",
       "spec.resources.gpu.quota", "spec.resources.gpu.limit", "spec.resources.gpu.overQuotaWeight",
       "spec.resources.cpu.quota", "spec.resources.cpu.limit", "spec.resources.cpu.overQuotaWeight",
       "spec.resources.memory.quota", "spec.resources.memory.limit", "spec.resources.memory.overQuotaWeight"});
  return schema;
}

/// KAI's PodGroup (pkg/apis/scheduling/v2alpha2/podgroup_types.go), with minSubGroup from KAI's
/// min-subgroups design.
const k8s::TypeSchema& pod_group_schema() {
  static const k8s::TypeSchema schema(
      "scheduling.run.ai/v2alpha2", "PodGroup",
      {"spec", "spec.minMember", "spec.queue", "spec.priorityClassName", "spec.preemptibility", "spec.parallelism",
       "spec.completions", "spec.backoffLimit", "spec.markUnschedulable", "spec.schedulingBackoff",
       "spec.preemptionDelay", "spec.stalenessGracePeriod",
       "spec.topologyConstraint", "spec.topologyConstraint.preferredTopologyLevel",
       "spec.topologyConstraint.requiredTopologyLevel", "spec.topologyConstraint.topology", "spec.minSubGroup",
       "spec.subGroups", "spec.subGroups[].name", "spec.subGroups[].minMember", "spec.subGroups[].minSubGroup",
       "spec.subGroups[].parent", "spec.subGroups[].topologyConstraint",
       "spec.subGroups[].topologyConstraint.preferredTopologyLevel",
       "spec.subGroups[].topologyConstraint.requiredTopologyLevel", "spec.subGroups[].topologyConstraint.topology"});
  return schema;
}

/// An integer count from 0 to 2^20 at `field` of `object` (`where` names it); nullopt when absent.
Result<std::optional<int>> count_at(const json& object, const char* field, const std::string& where) {
  const json* v = member(object, field);
  if (v == nullptr || v->is_null()) return std::optional<int>{};
  const bool ok = (v->is_number_unsigned() && v->get<std::uint64_t>() <= (1u << 20)) ||
                  (v->is_number_integer() && !v->is_number_unsigned() && v->get<std::int64_t>() >= 0 &&
                   v->get<std::int64_t>() <= (1 << 20));
  if (!ok) return invalid_argument("{}.{} = {}: must be an integer from 0 to {}", where, field, excerpt(v->dump()), 1 << 20);
  return std::optional<int>{static_cast<int>(v->get<std::int64_t>())};
}

/// KAI's TopologyConstraint at `field` of `object`: its levels are node label keys.
Result<TopologyConstraint> topology_at(const json& object, const std::string& where, std::vector<std::string>* warnings) {
  TopologyConstraint t;
  const json* v = member(object, "topologyConstraint");
  if (v == nullptr || v->is_null()) return t;
  const std::string at = where + ".topologyConstraint";
  if (!v->is_object()) return invalid_argument("{} must be a map", at);
  for (auto [field, into] : {std::pair{"topology", &t.topology}, std::pair{"requiredTopologyLevel", &t.required_level},
                             std::pair{"preferredTopologyLevel", &t.preferred_level}}) {
    auto value = k8s::optional_string(*v, field, at);
    if (!value) return value.status();
    *into = value->value_or("");
  }
  if (t.empty() && !t.topology.empty() && warnings != nullptr) {
    warnings->push_back(fmt::format("{}: names topology {} but no required or preferred level; it constrains nothing", at, t.topology));
  }
  return t;
}

/// spec.subGroups: KAI's SubGroup list.
Result<std::vector<SubGroupSpec>> sub_groups_of(const json& spec, const std::string& who, std::vector<std::string>* warnings) {
  std::vector<SubGroupSpec> out;
  const json* list = member(spec, "subGroups");
  if (list == nullptr || list->is_null()) return out;
  if (!list->is_array()) return invalid_argument("{}: spec.subGroups must be a list", who);
  for (std::size_t i = 0; i < list->size(); ++i) {
    const std::string where = fmt::format("{}: spec.subGroups[{}]", who, i);
    const json& item = (*list)[i];
    if (!item.is_object()) return invalid_argument("{} must be a map", where);
    SubGroupSpec s;
    auto name = k8s::optional_string(item, "name", where);
    auto parent = k8s::optional_string(item, "parent", where);
    auto min_member = count_at(item, "minMember", where);
    auto min_sub_group = count_at(item, "minSubGroup", where);
    auto topology = topology_at(item, where, warnings);
    if (!name) return name.status();
    if (!parent) return parent.status();
    if (!min_member) return min_member.status();
    if (!min_sub_group) return min_sub_group.status();
    if (!topology) return topology.status();
    s.name = name->value_or("");
    s.parent = parent->value_or("");
    s.min_member = min_member->value_or(0);
    s.min_sub_group = *min_sub_group;
    s.topology = std::move(*topology);
    out.push_back(std::move(s));
  }
  return out;
}

/// minMember, minSubGroup, subGroups and topologyConstraint, checked as KAI does (check_gang_rule).
Status read_gang_rule(const json& spec, const std::string& who, GangRule& rule, std::vector<std::string>* warnings) {
  auto min_member = count_at(spec, "minMember", who + ": spec");
  auto min_sub_group = count_at(spec, "minSubGroup", who + ": spec");
  auto topology = topology_at(spec, who + ": spec", warnings);
  auto sub_groups = sub_groups_of(spec, who, warnings);
  if (!min_member) return min_member.status();
  if (!min_sub_group) return min_sub_group.status();
  if (!topology) return topology.status();
  if (!sub_groups) return sub_groups.status();
  rule.min_member = min_member->value_or(0);
  rule.min_sub_group = *min_sub_group;
  rule.topology = std::move(*topology);
  rule.sub_groups = std::move(*sub_groups);
  if (auto bad = check_gang_rule(rule)) return invalid_argument("{}: {}", who, *bad);
  for (std::size_t i = 0; i < rule.sub_groups.size(); ++i) {
    const SubGroupSpec& s = rule.sub_groups[i];
    const bool inner = std::any_of(rule.sub_groups.begin(), rule.sub_groups.end(), [&](const SubGroupSpec& c) { return c.parent == s.name; });
    if (inner && s.min_member > 0 && warnings != nullptr) {
      warnings->push_back(fmt::format("{}: spec.subGroups[{}].minMember = {}: sub-group {} has child sub-groups; pods are counted "
                                      "at its leaves (use minSubGroup to count children), so it is ignored, as KAI does",
                                      who, i, s.min_member, s.name));
    }
  }
  return Status::ok();
}

/// KAI fields fracpack reads and does not act on (docs/requests.md rule 24): a warning each.
void warn_unhonoured(const json* spec, std::initializer_list<std::pair<const char*, const char*>> fields,
                     const std::string& who, std::vector<std::string>* warnings) {
  if (warnings == nullptr || spec == nullptr) return;
  for (const auto& [field, what] : fields) {
    if (member(*spec, field) != nullptr) {
      warnings->push_back(fmt::format("{}: spec.{} is not honoured by fracpack ({}); it is ignored", who, field, what));
    }
  }
}

}  // namespace

Result<QueueSpec> decode_queue(const json& object, std::vector<std::string>* warnings) {
  QueueSpec q;
  const json* metadata = member(object, "metadata");
  auto name = metadata ? k8s::optional_string(*metadata, "name", "queue: metadata") : Result<std::optional<std::string>>(std::optional<std::string>{});
  if (!name) return name.status();
  if (!name->has_value() || (*name)->empty()) return invalid_argument("queue: metadata.name is missing");
  q.name = **name;
  if (!k8s::is_dns_subdomain(q.name)) {
    return invalid_argument("queue \"{}\": metadata.name must be a DNS subdomain (lowercase letters, digits, '-', '.')",
                            excerpt(q.name));
  }
  if (auto s = queue_schema().check(object, "queue " + q.name); !s.is_ok()) return s;
  if (const json* created = member(*metadata, "creationTimestamp")) {
    auto seconds = created->is_string() ? k8s::parse_rfc3339(created->get<std::string>()) : std::nullopt;
    if (!seconds) return invalid_argument("queue {}: metadata.creationTimestamp must be an RFC 3339 time", q.name);
    q.created = *seconds;
  }
  const json* spec = member(object, "spec");
  if (spec == nullptr || !spec->is_object()) return invalid_argument("queue {}: spec is missing", q.name);
  warn_unhonoured(spec, {{"displayName", "a name for KAI's UI"}}, "queue " + q.name, warnings);
  for (auto [field, into] : {std::pair{"preemptMinRuntime", &q.preempt_min_runtime}, std::pair{"reclaimMinRuntime", &q.reclaim_min_runtime}}) {
    auto d = duration_field(*spec, field, "queue " + q.name);
    if (!d) return d.status();
    *into = *d;
  }
  auto parent = k8s::optional_string(*spec, "parentQueue", "queue " + q.name + ": spec");
  if (!parent) return parent.status();
  q.parent = parent->value_or("");
  if (const json* priority = member(*spec, "priority")) {
    if (!priority->is_number_integer() || priority->get<std::int64_t>() < INT32_MIN ||
        priority->get<std::int64_t>() > INT32_MAX || (priority->is_number_unsigned() && priority->get<std::uint64_t>() > INT32_MAX)) {
      return invalid_argument("queue {}: spec.priority = {}: must be a 32-bit integer", q.name, excerpt(priority->dump()));
    }
    q.priority = static_cast<std::int32_t>(priority->get<std::int64_t>());
  }
  const json* resources = member(*spec, "resources");
  if (resources == nullptr || !resources->is_object()) {
    return invalid_argument("queue {}: spec.resources is missing; KAI requires gpu, cpu and memory terms", q.name);
  }
  for (Resource r : kResources) {
    const json* res = member(*resources, resource_name(r));
    if (res == nullptr) continue;  // all zero: no quota, and a limit of 0 that blocks the resource
    if (!res->is_object()) {
      return invalid_argument("queue {}: spec.resources.{} must be a map", q.name, resource_name(r));
    }
    QueueResource& out = q.resource(r);
    auto quota = amount(*res, q.name, r, "quota", true, scale(r));
    auto limit = amount(*res, q.name, r, "limit", true, scale(r));
    auto weight = amount(*res, q.name, r, "overQuotaWeight", false, 1000.0);
    if (!quota) return quota.status();
    if (!limit) return limit.status();
    if (!weight) return weight.status();
    out.quota = quota->value_or(0);
    out.limit = limit->value_or(0);
    out.limit_set = limit->has_value();
    out.over_quota_weight = weight->value_or(0);
  }
  return q;
}

Result<PodGroupSpec> decode_pod_group(const json& object, std::vector<std::string>* warnings) {
  PodGroupSpec g;
  const json* metadata = member(object, "metadata");
  if (metadata == nullptr) return invalid_argument("PodGroup: metadata is missing");
  auto name = k8s::optional_string(*metadata, "name", "PodGroup: metadata");
  auto ns = k8s::optional_string(*metadata, "namespace", "PodGroup: metadata");
  if (!name) return name.status();
  if (!ns) return ns.status();
  if (!name->has_value() || (*name)->empty()) return invalid_argument("PodGroup: metadata.name is missing");
  g.name = **name;
  if (ns->has_value() && !(*ns)->empty()) g.namespace_name = **ns;
  const std::string who = "PodGroup " + excerpt(g.key());  // its name is not validated
  if (const json* created = member(*metadata, "creationTimestamp"); created != nullptr && created->is_string()) {
    g.created = k8s::parse_rfc3339(created->get_ref<const std::string&>());  // the API server writes it: unreadable is unset
  }
  if (auto s = pod_group_schema().check(object, who); !s.is_ok()) return s;
  const json* spec = member(object, "spec");
  if (spec == nullptr) return g;
  if (auto st = read_gang_rule(*spec, who, g, warnings); !st.is_ok()) return st;
  for (auto [field, target] : {std::pair{"queue", &g.queue}, std::pair{"priorityClassName", &g.priority_class},
                               std::pair{"preemptibility", &g.preemptibility}}) {
    auto v = k8s::optional_string(*spec, field, who + ": spec");
    if (!v) return v.status();
    if (v->has_value() && !(*v)->empty()) *target = **v;
  }
  if (g.preemptibility && *g.preemptibility != "preemptible" && *g.preemptibility != "non-preemptible") {
    return invalid_argument("{}: spec.preemptibility = \"{}\": must be preemptible or non-preemptible", who,
                            excerpt(*g.preemptibility));
  }
  // KAI's metav1.Durations (podgroup_types.go): read, so a bad one is refused, naming it.
  auto delay = duration_field(*spec, "preemptionDelay", who);
  if (!delay) return delay.status();
  g.preemption_delay = *delay;
  if (auto d = duration_field(*spec, "stalenessGracePeriod", who); !d) return d.status();
  warn_unhonoured(spec, {{"stalenessGracePeriod", "fracpack's is serve's --staleness-grace-period, for every gang"}}, who, warnings);
  return g;
}

}  // namespace fracpack::queues
