#include <algorithm>
#include <limits>

#include "fracpack/k8s/decode.hpp"
#include "fracpack/core/quantity.hpp"
#include "fracpack/k8s/json_fields.hpp"
#include "fracpack/k8s/names.hpp"
#include "k8s/pod_parts.hpp"

namespace fracpack::k8s {

using nlohmann::json;
namespace {

/// One container's requests: "cpu" in millicores, "memory" in bytes, others as whole counts.
using ResourceVector = std::map<std::string, std::int64_t>;

/// Saturating: an absurd sum stays the largest count (it then fits nowhere) instead of wrapping.
std::int64_t add_saturating(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? std::numeric_limits<std::int64_t>::max() : r;
}
void add_into(ResourceVector& into, const ResourceVector& v) {
  for (const auto& [k, n] : v) into[k] = add_saturating(into[k], n);
}
void max_into(ResourceVector& into, const ResourceVector& v) {
  for (const auto& [k, n] : v) into[k] = std::max(into[k], n);
}

bool ignored_resource(const std::string& name) {
  return name == "ephemeral-storage" || name.starts_with("hugepages-");
}

Result<std::int64_t> parse_quantity_of(const std::string& name, const std::string& text,
                                       const std::string& what) {
  if (name == "cpu") {
    auto v = parse_milli_cpu(text, what);
    if (!v) return v.status();
    return v->count();
  }
  if (name == "memory") {
    auto v = parse_bytes(text, what);
    if (!v) return v.status();
    return v->count();
  }
  return parse_count(text, what);
}

/// parse_quantity_of() with errors that start with the pod: "pod a/b: invalid quantity ...".
Result<std::int64_t> parse_resource(const std::string& name, const std::string& text, const std::string& who,
                                    const std::string& what) {
  auto v = parse_quantity_of(name, text, what);
  if (!v) return in_context(v.status(), who);
  return v;
}

Result<ResourceVector> container_requests(const json& container, const std::string& who,
                                          const std::string& field, const std::string& where) {
  ResourceVector out;
  auto resources = optional_object(container, "resources", where);
  if (!resources) return resources.status();
  if (*resources == nullptr) return out;
  auto requests = string_map(**resources, "requests", where + ".resources");
  auto limits = string_map(**resources, "limits", where + ".resources");
  if (!requests) return requests.status();
  if (!limits) return limits.status();

  ResourceVector req;
  ResourceVector lim;
  for (const auto& [name, text] : *requests) {
    if (ignored_resource(name)) continue;
    auto v = parse_resource(name, text, who, fmt::format("{}.resources.requests[\"{}\"]", field, excerpt(name)));
    if (!v) return v.status();
    req[name] = *v;
  }
  for (const auto& [name, text] : *limits) {
    if (ignored_resource(name)) continue;
    auto v = parse_resource(name, text, who, fmt::format("{}.resources.limits[\"{}\"]", field, excerpt(name)));
    if (!v) return v.status();
    lim[name] = *v;
  }
  out = req;
  for (const auto& [name, v] : lim) {
    auto r = req.find(name);
    if (r == req.end()) {
      out[name] = v;  // Kubernetes defaults a missing request to its limit
    } else if (name != "cpu" && name != "memory" && r->second != v) {
      return invalid_argument(
          "{}.resources: extended resource \"{}\" has request {} but limit {}; Kubernetes requires "
          "them to be equal",
          where, excerpt(name), r->second, v);
    } else if ((name == "cpu" || name == "memory") && r->second > v) {
      const char* unit = name == "cpu" ? "m" : " bytes";
      const json* container_name = member(container, "name");
      return invalid_argument("{} (container \"{}\").resources: {} request {}{} is larger than its limit {}{}", where,
                              excerpt(container_name ? scalar_text(*container_name).value_or("?") : "?"), name, r->second,
                              unit, v, unit);
    }
  }
  return out;
}

bool is_rdma(const std::string& name, const DecodeConfig& config) {
  return std::any_of(config.rdma_resources.begin(), config.rdma_resources.end(),
                     [&](const std::string& r) {
                       return r.ends_with('/') ? name.starts_with(r) : name == r;
                     });
}

/// spec.containers: each named once, with a DNS label; their requests summed into `total`.
Status add_app_containers(const json& containers, const std::string& who, PodResources& out, ResourceVector& total) {
  std::size_t index = 0;
  for (const auto& c : containers) {
    const std::string field = fmt::format("spec.containers[{}]", index++);
    const std::string where = fmt::format("{}: {}", who, field);
    if (!c.is_object()) return invalid_argument("{} must be a map, not a {}", where, c.type_name());
    auto name = optional_string(c, "name", where);
    if (!name) return name.status();
    if (!name->has_value() || (*name)->empty()) return invalid_argument("{}.name is missing", where);
    if (!is_dns_label(**name)) {
      return invalid_argument("{}.name \"{}\" must be a DNS label (lowercase letters, digits and '-', at most 63)",
                              where, excerpt(**name));
    }
    if (std::find(out.containers.begin(), out.containers.end(), **name) != out.containers.end()) {
      return invalid_argument("{}: container name \"{}\" appears twice", who, **name);
    }
    out.containers.push_back(**name);
    auto req = container_requests(c, who, field, where);
    if (!req) return req.status();
    if (req->count(std::string(kGpuResource)) && req->at(std::string(kGpuResource)) > 0) {
      out.gpu_containers.push_back(**name);
    }
    add_into(total, *req);
  }
  return Status::ok();
}

/// spec.initContainers, as the kubelet sizes them: a sidecar (restartPolicy Always) adds to the
/// pod for its whole life; the others run one at a time, beside the sidecars started before them,
/// and the pod needs the peak of those.
Status add_init_containers(const json& init, const std::string& who, PodResources& out, ResourceVector& total) {
  ResourceVector sidecars;
  ResourceVector init_peak;
  std::size_t index = 0;
  for (const auto& c : init) {
    const std::string field = fmt::format("spec.initContainers[{}]", index++);
    const std::string where = fmt::format("{}: {}", who, field);
    if (!c.is_object()) return invalid_argument("{} must be a map, not a {}", where, c.type_name());
    auto req = container_requests(c, who, field, where);
    if (!req) return req.status();
    auto policy = optional_string(c, "restartPolicy", where);
    if (!policy) return policy.status();
    if (req->count(std::string(kGpuResource)) && req->at(std::string(kGpuResource)) > 0) {
      auto name = optional_string(c, "name", where);
      out.gpu_containers.push_back(excerpt(name.is_ok() ? name->value_or("") : ""));  // quoted in errors
    }
    ResourceVector effective = *req;
    if (policy->value_or("") == "Always") {  // a sidecar runs for the pod's whole life
      add_into(total, *req);
      add_into(sidecars, *req);
      effective = sidecars;
    } else {
      add_into(effective, sidecars);
    }
    max_into(init_peak, effective);
  }
  max_into(total, init_peak);
  return Status::ok();
}

/// spec.overhead (the RuntimeClass's), added to the pod's total.
Status add_overhead(const json& spec, const std::string& who, ResourceVector& total) {
  auto overhead = string_map(spec, "overhead", who + ": spec");
  if (!overhead) return overhead.status();
  for (const auto& [name, text] : *overhead) {
    if (ignored_resource(name)) continue;
    auto v = parse_resource(name, text, who, fmt::format("spec.overhead[\"{}\"]", excerpt(name)));
    if (!v) return v.status();
    total[name] = add_saturating(total[name], *v);
  }
  return Status::ok();
}

/// The pod's totals into their typed fields: CPU, memory, GPUs, RDMA, other extended resources.
void assign_totals(const ResourceVector& total, const DecodeConfig& config, PodResources& out) {
  for (const auto& [name, v] : total) {
    if (name == "cpu") {
      out.cpu = MilliCpu(v);
    } else if (name == "memory") {
      out.memory = Bytes(v);
    } else if (name == kGpuResource) {
      out.gpus = v;
    } else if (v == 0) {
      continue;
    } else if (is_rdma(name, config)) {
      out.rdma[name] = v;
    } else {
      out.extended[name] = v;
    }
  }
}

}  // namespace

Result<PodResources> read_pod_resources(const json& spec, const std::string& who,
                                        const DecodeConfig& config) {
  PodResources out;
  auto containers = optional_array(spec, "containers", who + ": spec");
  if (!containers) return containers.status();
  if (*containers == nullptr || (*containers)->empty()) {
    return invalid_argument("{}: spec.containers is empty; a pod needs at least one container", who);
  }
  auto init = optional_array(spec, "initContainers", who + ": spec");
  if (!init) return init.status();
  ResourceVector total;
  if (auto s = add_app_containers(**containers, who, out, total); !s.is_ok()) return s;
  if (*init != nullptr) {
    if (auto s = add_init_containers(**init, who, out, total); !s.is_ok()) return s;
  }
  if (auto s = add_overhead(spec, who, total); !s.is_ok()) return s;
  assign_totals(total, config, out);
  return out;
}

}  // namespace fracpack::k8s
