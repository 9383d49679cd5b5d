#include "binpack/fit.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "fracpack/k8s/decode.hpp"

namespace fracpack::binpack {
namespace {

Verdict fail(Code code, bool explain, std::string_view category, std::string detail = {}) {
  Verdict v;
  v.code = code;
  if (explain) {
    v.category = std::string(category);
    v.detail = std::move(detail);
  }
  return v;
}

constexpr Code kNow = Code::kUnschedulable;
constexpr Code kNever = Code::kUnschedulableAndUnresolvable;

/// One GPU's state in a few words, for "why not" details.
std::string describe_gpu(const ClusterState& state, std::size_t n, std::size_t g) {
  const GpuUsage& u = state.usage(n).gpus[g];
  const GpuDevice& d = state.node(n).gpus[g];
  switch (u.state) {
    case GpuState::kIdle: return fmt::format("GPU {} idle {} MiB", d.index, state.usable(n, g).count());
    case GpuState::kWhole: return fmt::format("GPU {} held whole", d.index);
    case GpuState::kSharedTimeSlicing:
      return fmt::format("GPU {} time-slicing, free {} MiB", d.index, (state.usable(n, g) - u.used).count());
    case GpuState::kSharedSmSharing:
      return fmt::format("GPU {} sm-sharing, free {} MiB, compute {}/100", d.index,
                         (state.usable(n, g) - u.used).count(), u.compute);
  }
  return {};
}

std::string describe_gpus(const ClusterState& state, std::size_t n) {
  constexpr std::size_t kMaxListed = 16;
  std::vector<std::string> parts;
  const std::size_t count = state.node(n).gpus.size();
  for (std::size_t g = 0; g < std::min(count, kMaxListed); ++g) parts.push_back(describe_gpu(state, n, g));
  if (count > kMaxListed) parts.push_back(fmt::format("… {} more", count - kMaxListed));
  return fmt::format("{}", fmt::join(parts, "; "));
}


/// Rules that no amount of waiting or preemption changes (UnschedulableAndUnresolvable).
Verdict check_static(const ClusterState& state, std::size_t n, const PodRequest& pod, const PodTraits& traits,
                     bool explain) {
  const NodeSpec& node = state.node(n);
  if (!node.ready) return fail(kNever, explain, "node(s) were not ready");
  if (!node.schedulable) return fail(kNever, explain, "node(s) were unschedulable", "spec.unschedulable is true (cordoned)");
  for (const auto& [key, value] : pod.node_selector) {
    auto it = node.labels.find(key);
    if (it == node.labels.end() || it->second != value) {
      return fail(kNever, explain, "node(s) didn't match Pod's node selector",
                  explain ? fmt::format("label {}={} wanted, node has {}", key, value,
                                        it == node.labels.end() ? "none" : it->second)
                          : std::string());
    }
  }
  if (pod.cpu > node.cpu) {
    return fail(kNever, explain, "Insufficient cpu",
                explain ? fmt::format("requested {}m, node allocatable {}m", pod.cpu.count(), node.cpu.count()) : "");
  }
  if (pod.memory > node.memory) {
    return fail(kNever, explain, "Insufficient memory",
                explain ? fmt::format("requested {} bytes, node allocatable {} bytes", pod.memory.count(),
                                      node.memory.count())
                        : "");
  }
  for (const auto* resources : {&pod.rdma, &pod.extended}) {
    for (const auto& [name, amount] : *resources) {
      auto it = node.extended.find(name);
      std::int64_t have = it == node.extended.end() ? 0 : it->second;
      if (amount > have) {
        return fail(kNever, explain, fmt::format("Insufficient {}", name),
                    explain ? fmt::format("requested {}, node allocatable {}", amount, have) : "");
      }
    }
  }
  const bool replicas = node.sharing == SharingKind::kReplicas;
  if (pod.infiniband() && replicas) {
    return fail(kNever, explain, "node(s) share GPUs by device-plugin replicas",
                "an InfiniBand pod needs whole devices and never lands on a replica-shared node");
  }
  if (traits.hold == GpuHold::kNone) return {};
  if (node.gpus.empty()) return fail(kNever, explain, "node(s) had no GPUs");

  const std::size_t physical = node.gpus.size();
  switch (traits.hold) {
    case GpuHold::kWhole:
      if (replicas) {
        return fail(kNever, explain, "node(s) share GPUs by device-plugin replicas",
                    explain ? fmt::format("{} ×{}: a whole-GPU pod would get a slot, not a device",
                                          compute_mode_name(node.replica.strategy), node.replica.replicas)
                            : "");
      }
      if (static_cast<std::size_t>(traits.devices) > physical) {
        return fail(kNever, explain, "node(s) had fewer GPUs than requested",
                    explain ? fmt::format("requested {}, node has {}", traits.devices, physical) : "");
      }
      return {};
    case GpuHold::kSlot: {
      if (!replicas) {
        return fail(kNever, explain, "node(s) don't share GPUs by device-plugin replicas",
                    "the pod asks for a replica slot (its nodeSelector names a sharing label)");
      }
      const std::int64_t slots = static_cast<std::int64_t>(physical) * node.replica.replicas;
      if (traits.devices > slots) {
        return fail(kNever, explain, "node(s) had fewer GPU slots than requested",
                    explain ? fmt::format("requested {}, node has {}", traits.devices, slots) : "");
      }
      return {};
    }
    case GpuHold::kFraction: {
      if (replicas) {
        return fail(kNever, explain, "node(s) share GPUs by device-plugin replicas",
                    "memory fractions need NvFractions or exclusive GPUs, not replica slots");
      }
      if (state.config().sharing_mode == GpuSharingMode::kNvFractions) {
        if (node.sharing != SharingKind::kNvFractions) {
          return fail(kNever, explain, "node(s) don't run gpu-fractioning",
                      fmt::format("condition {} is absent; with gpuSharingMode NvFractions, fractions "
                                  "only go to nodes where it is True",
                                  k8s::kFractioningCondition));
        }
        if (!node.fractions_ready) {
          return fail(kNever, explain, "node(s) had gpu-fractioning not ready",
                      fmt::format("condition {} is not True", k8s::kFractioningCondition));
        }
      }
      if (!node.gpu_memory_known) {
        return fail(kNever, explain, "node(s) had no GPU memory label",
                    fmt::format("label {} is missing; memory-sized requests need each GPU's memory",
                                k8s::kGpuMemoryLabel));
      }
      if (static_cast<std::size_t>(traits.devices) > physical) {
        return fail(kNever, explain, "node(s) had fewer GPUs than requested",
                    explain ? fmt::format("requested {} devices, node has {}", traits.devices, physical) : "");
      }
      const GpuFraction& f = *pod.fraction();
      std::size_t need_ok = 0;  // GPUs big enough for the request
      std::size_t both_ok = 0;  // ... and for the limit
      MiB largest{0};
      for (std::size_t g = 0; g < physical; ++g) {
        const bool fits_need = fraction_need(f, node.gpus[g]) <= state.usable(n, g);
        need_ok += fits_need ? 1 : 0;
        both_ok += fits_need && (!f.memory_limit || *f.memory_limit <= node.gpus[g].memory) ? 1 : 0;
        largest = std::max(largest, state.usable(n, g));
      }
      const auto devices = static_cast<std::size_t>(traits.devices);
      if (need_ok < devices) {
        return fail(kNever, explain, "GPU memory request larger than the node's GPUs",
                    explain ? fmt::format("requested {} MiB on {} GPU(s); largest GPU here has {} MiB usable",
                                          fraction_need(f, node.gpus.front()).count(), traits.devices,
                                          largest.count())
                            : "");
      }
      if (both_ok < devices) {
        return fail(kNever, explain, "GPU memory limit larger than the node's GPUs",
                    explain ? fmt::format("limit {} MiB; the largest GPU here has {} MiB", f.memory_limit->count(),
                                          largest.count())
                            : "");
      }
      return {};
    }
    case GpuHold::kNone: break;
  }
  return {};
}

}  // namespace

PodTraits traits_of(const PodRequest& pod, const ClusterState& state) {
  PodTraits t;
  t.max_node_cpu = state.max_node_cpu();
  t.max_node_gpu_milli = state.max_node_gpu_milli();
  if (const auto* w = pod.whole()) {
    t.hold = w->shared_slot ? GpuHold::kSlot : GpuHold::kWhole;
    t.devices = w->count;
  } else if (const auto* f = pod.fraction()) {
    t.hold = GpuHold::kFraction;
    t.mode = f->mode;
    t.devices = f->num_devices;
    t.min_need = f->memory ? *f->memory : portion_of(*f->portion, state.min_gpu_memory());
  }
  return t;
}

MiB fraction_need(const GpuFraction& f, const GpuDevice& gpu) { return f.memory_on(gpu.memory); }

int compute_portion(MiB need, MiB memory) {
  if (memory.count() <= 0) return 100;
  return static_cast<int>(std::min<std::int64_t>(100, (need.count() * 100 + memory.count() - 1) / memory.count()));
}

MiB slot_memory(const NodeSpec& node, const GpuDevice& gpu) {
  if (node.replica.strategy != ComputeMode::kSmSharing) return MiB{0};
  return MiB(gpu.memory.count() / node.replica.replicas);
}

int slot_compute(const NodeSpec& node) {
  return node.replica.strategy == ComputeMode::kSmSharing ? 100 / node.replica.replicas : 0;
}

int gpu_capacity_for(const ClusterState& state, std::size_t n, std::size_t g, const PodRequest& pod,
                     const PodTraits& traits) {
  const NodeSpec& node = state.node(n);
  const GpuUsage& u = state.usage(n).gpus[g];
  switch (traits.hold) {
    case GpuHold::kNone: return 0;
    case GpuHold::kWhole: return u.state == GpuState::kIdle ? 1 : 0;
    case GpuHold::kSlot: return node.replica.replicas - u.slots;
    case GpuHold::kFraction: {
      const GpuFraction& f = *pod.fraction();
      const GpuDevice& d = node.gpus[g];
      if (f.memory_limit && *f.memory_limit > d.memory) return 0;
      const MiB need = fraction_need(f, d);
      const MiB usable = state.usable(n, g);
      if (u.state == GpuState::kIdle) return need <= usable ? 1 : 0;
      // InfiniBand pods take idle GPUs only (domain.md §3 rule 3).
      if (pod.infiniband() || u.state != shared_state(f.mode)) return 0;
      if (u.used + need > usable) return 0;
      if (f.mode == ComputeMode::kSmSharing && u.compute + compute_portion(need, d.memory) > 100) return 0;
      return 1;
    }
  }
  return 0;
}

Verdict check_node(const ClusterState& state, std::size_t n, const PodRequest& pod, const PodTraits& traits,
                   bool explain) {
  if (Verdict v = check_static(state, n, pod, traits, explain); !v.fits()) return v;
  const NodeSpec& node = state.node(n);
  const NodeUsage& used = state.usage(n);
  if (used.pods + 1 > node.pods) {
    return fail(kNow, explain, "Too many pods", explain ? fmt::format("node allows {} pods", node.pods) : "");
  }
  if (used.cpu + pod.cpu > node.cpu) {
    return fail(kNow, explain, "Insufficient cpu",
                explain ? fmt::format("requested {}m, free {}m", pod.cpu.count(), (node.cpu - used.cpu).count()) : "");
  }
  if (used.memory + pod.memory > node.memory) {
    return fail(kNow, explain, "Insufficient memory",
                explain ? fmt::format("requested {} bytes, free {} bytes", pod.memory.count(),
                                      (node.memory - used.memory).count())
                        : "");
  }
  for (const auto* resources : {&pod.rdma, &pod.extended}) {
    for (const auto& [name, amount] : *resources) {
      auto it = used.extended.find(name);
      const std::int64_t held = it == used.extended.end() ? 0 : it->second;
      const std::int64_t have = node.extended.at(name);  // check_static: present
      if (held + amount > have) {
        return fail(kNow, explain, fmt::format("Insufficient {}", name),
                    explain ? fmt::format("requested {}, free {}", amount, have - held) : "");
      }
    }
  }
  if (traits.hold == GpuHold::kNone) return {};

  int available = 0;
  for (std::size_t g = 0; g < node.gpus.size() && available < traits.devices; ++g) {
    available += gpu_capacity_for(state, n, g, pod, traits);
  }
  if (available >= traits.devices) return {};
  switch (traits.hold) {
    case GpuHold::kWhole:
      return fail(kNow, explain, "Insufficient idle GPUs",
                  explain ? fmt::format("requested {} whole, {} idle: {}", traits.devices, available,
                                        describe_gpus(state, n))
                          : "");
    case GpuHold::kSlot:
      return fail(kNow, explain, "Insufficient GPU slots",
                  explain ? fmt::format("requested {}, free {}", traits.devices, available) : "");
    default: {
      std::string detail;
      if (explain) {
        const GpuFraction& f = *pod.fraction();
        detail = fmt::format("requested {} MiB {}{} on {} GPU(s), {} can take it: {}",
                             fraction_need(f, node.gpus.front()).count(), compute_mode_name(f.mode),
                             pod.infiniband() ? " (InfiniBand: idle GPUs only)" : "", traits.devices, available,
                             describe_gpus(state, n));
      }
      return fail(kNow, explain, "Insufficient GPU memory", std::move(detail));
    }
  }
}

bool could_fit(const PodRequest& pod, const PodTraits& traits, const NodeSummary& hi) {
  if (hi.usable == 0 || hi.free_pods < 1 || hi.free_cpu < pod.cpu.count() || hi.free_memory < pod.memory.count()) {
    return false;
  }
  switch (traits.hold) {
    case GpuHold::kNone: return true;
    case GpuHold::kWhole: return hi.takes_whole != 0 && hi.idle_gpus >= traits.devices;
    case GpuHold::kSlot: return hi.takes_slots != 0 && hi.free_slots >= traits.devices;
    case GpuHold::kFraction: {
      if (hi.takes_fraction == 0) return false;
      const std::int64_t need = traits.min_need.count();
      const bool shared_ok = !pod.infiniband() && hi.max_shared_free[static_cast<int>(traits.mode)] >= need;
      return hi.max_idle_free >= need || shared_ok;
    }
  }
  return false;
}

}  // namespace fracpack::binpack
