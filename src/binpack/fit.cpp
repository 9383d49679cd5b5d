#include "binpack/fit.hpp"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "fracpack/core/labels.hpp"
#include "fracpack/core/quoting.hpp"

namespace fracpack::binpack {
namespace {

constexpr Code kNow = Code::kUnschedulable;
constexpr Code kNever = Code::kUnschedulableAndUnresolvable;

/// Builds a verdict; the text is only formatted when an explanation was asked for.
class VerdictBuilder {
 public:
  explicit VerdictBuilder(Detail detail) : detail_(detail) {}

  /// Adds a reason; `text` is a callable returning the detail text, run only for Detail::kFull.
  template <class Text>
  void add(Code code, std::string_view category, Text&& text) {
    // UnschedulableAndUnresolvable wins: nothing helps on this node.
    if (v_.code != kNever) v_.code = code;
    if (detail_ == Detail::kFull) {
      v_.reasons.push_back({std::string(category), std::string(text())});
    } else if (detail_ == Detail::kCategory) {
      v_.reasons.push_back({std::string(category), {}});
    }
  }
  void add(Code code, std::string_view category) {
    add(code, category, [] { return std::string(); });
  }
  [[nodiscard]] bool failed() const { return !v_.fits(); }
  Verdict take() { return std::move(v_); }

 private:
  Detail detail_;
  Verdict v_;
};

/// One GPU's state in a few words, for "why not" details.
std::string describe_gpu(const ClusterState& state, std::size_t n, std::size_t g) {
  const GpuUsage& u = state.usage(n).gpus[g];
  const GpuDevice& d = state.node(n).gpus[g];
  if (u.fenced()) {
    return fmt::format("GPU {} fenced (named by a running pod whose claim the ledger could not adopt, or by an edit of a running "
                       "pod's recorded claim)",
                       d.index);
  }
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

/// CPU, memory, pod slots and extended resources: every short one is a reason of its own.
/// Against allocatable (`used` = nullptr) a shortfall never resolves; against what is free it may.
void check_resources(const NodeSpec& node, const NodeUsage* used, const PodRequest& pod, VerdictBuilder& v) {
  const Code code = used == nullptr ? kNever : kNow;
  const char* of = used == nullptr ? "node allocatable" : "free";
  if (used != nullptr && used->pods + 1 > node.pods) {
    v.add(kNow, "Too many pods", [&] { return fmt::format("node allows {} pods", node.pods); });
  }
  const auto free_text = [&](std::int64_t free, std::string_view unit, std::int64_t scale) {
    if (free < 0) return fmt::format("running pods already hold {}{} more than allocatable", -free / scale, unit);
    return fmt::format("{} {}{}", of, free / scale, unit);
  };
  const std::int64_t cpu_free = saturating_add(node.cpu.count(), used ? -used->cpu.count() : 0);
  if (pod.cpu.count() > cpu_free) {
    v.add(code, "Insufficient cpu",
          [&] { return fmt::format("requested {}m, {}", pod.cpu.count(), free_text(cpu_free, "m", 1)); });
  }
  const std::int64_t memory_free = saturating_add(node.memory.count(), used ? -used->memory.count() : 0);
  if (pod.memory.count() > memory_free) {
    v.add(code, "Insufficient memory", [&] {
      return fmt::format("requested {} MiB, {}", to_mib_ceil(pod.memory).count(),
                         free_text(memory_free, " MiB", kBytesPerMiB));
    });
  }
  // kube-scheduler names each short resource; a pod asking for thousands of names gets the first
  // few and a count, so that neither a verdict nor the summary grows with what the pod made up.
  constexpr std::size_t kNamed = 8;
  std::size_t short_of = 0;
  for (const auto* resources : {&pod.rdma, &pod.extended}) {
    for (const auto& resource : *resources) {
      const std::string& name = resource.first;  // named, not bound: lambdas below capture them
      const std::int64_t amount = resource.second;
      auto have = node.extended.find(name);
      std::int64_t free = have == node.extended.end() ? 0 : have->second;
      if (used != nullptr) {
        auto held = used->extended.find(name);
        free = saturating_add(free, held == used->extended.end() ? 0 : -held->second);
      }
      if (amount <= free || ++short_of > kNamed) continue;
      v.add(code, fmt::format("Insufficient {}", excerpt(name)), [&] { return fmt::format("requested {}, {} {}", amount, of, free); });
    }
  }
  if (short_of > kNamed) v.add(code, "Insufficient other extended resources", [&] { return fmt::format("{} more resources short", short_of - kNamed); });
}

std::string replica_words(const NodeSpec& node) {
  return fmt::format("{} ×{}", node.replica.strategy == ComputeMode::kSmSharing ? "mps" : "time-slicing",
                     node.replica.replicas);
}

/// A whole-GPU pod needs devices, never a replica slot, and no more than the node has.
void check_whole(const NodeSpec& node, const PodTraits& traits, VerdictBuilder& v) {
  if (node.sharing == SharingKind::kReplicas) {
    return v.add(kNever, "node(s) share GPUs by device-plugin replicas", [&] {
      return fmt::format("{}: a whole-GPU pod would get a slot, not a device (a pod asks for a slot with "
                         "nodeSelector {})",
                         replica_words(node), k8s::kSharingStrategyLabel);
    });
  }
  if (static_cast<std::size_t>(traits.devices) > node.gpus.size()) {
    v.add(kNever, "node(s) had fewer GPUs than requested",
          [&] { return fmt::format("requested {}, node has {}", traits.devices, node.gpus.size()); });
  }
}

/// A replica-slot pod needs a node that shares by replicas, with enough slots.
void check_slot(const NodeSpec& node, const PodTraits& traits, VerdictBuilder& v) {
  if (node.sharing != SharingKind::kReplicas) {
    return v.add(kNever, "node(s) don't share GPUs by device-plugin replicas",
                 [] { return std::string("the pod asks for a replica slot (its nodeSelector names a sharing label)"); });
  }
  const std::int64_t slots = static_cast<std::int64_t>(node.gpus.size()) * node.replica.replicas;
  if (traits.devices > slots) {
    v.add(kNever, "node(s) had fewer GPU slots than requested",
          [&] { return fmt::format("requested {}, node has {}", traits.devices, slots); });
  }
}

/// Whether the node can hold the fraction at all: not replica slots, gpu-fractioning running where
/// the sharing mode needs it, each GPU's memory known for a memory-sized request (a gpu-fraction
/// portion goes to an unlabelled node, as in KAI), enough devices. Adds the reason if not.
bool takes_fractions(const ClusterState& state, const NodeSpec& node, const GpuFraction& f, const PodTraits& traits,
                     VerdictBuilder& v) {
  if (node.sharing == SharingKind::kReplicas) {
    v.add(kNever, "node(s) share GPUs by device-plugin replicas", [&] {
      return fmt::format("{}: memory fractions need NvFractions or exclusive GPUs, not replica slots",
                         replica_words(node));
    });
    return false;
  }
  if (state.config().sharing_mode == GpuSharingMode::kNvFractions && node.sharing != SharingKind::kNvFractions) {
    v.add(kNever, "node(s) don't run gpu-fractioning", [] {
      return fmt::format("condition {} is absent; with gpuSharingMode NvFractions fractions only go where it "
                         "is True (--sharing-mode NonMemoryEnforced allows any GPU node)",
                         k8s::kFractioningCondition);
    });
    return false;
  }
  if (state.config().sharing_mode == GpuSharingMode::kNvFractions && !node.fractions_ready) {
    v.add(kNever, "node(s) had gpu-fractioning not ready",
          [] { return fmt::format("condition {} is not True", k8s::kFractioningCondition); });
    return false;
  }
  if (!node.gpu_memory_known && f.memory) {
    v.add(kNever, "node(s) had no GPU memory label", [] {
      return fmt::format("label {} is missing; a memory-sized request needs each GPU's memory (a gpu-fraction "
                         "portion would fit)",
                         k8s::kGpuMemoryLabel);
    });
    return false;
  }
  if (static_cast<std::size_t>(traits.devices) > node.gpus.size()) {
    v.add(kNever, "node(s) had fewer GPUs than requested",
          [&] { return fmt::format("requested {} devices, node has {}", traits.devices, node.gpus.size()); });
    return false;
  }
  return true;
}

/// Enough of the node's GPUs are large enough for the fraction's memory request, and its limit.
void check_fraction_sizes(const ClusterState& state, std::size_t n, const PodRequest& pod, const PodTraits& traits,
                          VerdictBuilder& v) {
  const NodeSpec& node = state.node(n);
  const GpuFraction& f = *pod.fraction();
  std::size_t need_ok = 0;  // GPUs big enough for the request
  std::size_t both_ok = 0;  // ... and for the limit
  MiB largest_usable{0};
  MiB largest{0};
  for (std::size_t g = 0; g < node.gpus.size(); ++g) {
    const bool fits_need = state.usable(n, g).count() > 0 && fraction_need(f, state, n, g) <= state.usable(n, g);
    need_ok += fits_need ? 1 : 0;
    both_ok += fits_need && (!f.memory_limit || *f.memory_limit <= node.gpus[g].memory) ? 1 : 0;
    largest_usable = std::max(largest_usable, state.usable(n, g));
    largest = std::max(largest, node.gpus[g].memory);
  }
  const auto devices = static_cast<std::size_t>(traits.devices);
  if (need_ok < devices) {
    return v.add(kNever, "node(s) had GPUs smaller than the memory request", [&] {
      return fmt::format("requested {} MiB on {} GPU(s); the largest GPU here has {} MiB usable",
                         fraction_need(f, state, n, 0).count(), traits.devices, largest_usable.count());
    });
  }
  if (both_ok < devices) {
    v.add(kNever, "node(s) had GPUs smaller than the memory limit", [&] {
      return fmt::format("limit {} MiB; the largest GPU here has {} MiB", f.memory_limit->count(), largest.count());
    });
  }
}

/// The GPU kind rules that no amount of waiting or preemption changes.
void check_gpu_kind(const ClusterState& state, std::size_t n, const PodRequest& pod, const PodTraits& traits,
                    VerdictBuilder& v) {
  const NodeSpec& node = state.node(n);
  if (pod.infiniband() && node.sharing == SharingKind::kReplicas) {
    return v.add(kNever, "node(s) share GPUs by device-plugin replicas",
                 [&] { return fmt::format("{}: an InfiniBand pod needs whole devices", replica_words(node)); });
  }
  if (traits.hold == GpuHold::kNone) return;
  if (node.gpus.empty()) return v.add(kNever, "node(s) had no GPUs");
  switch (traits.hold) {
    case GpuHold::kNone: return;
    case GpuHold::kWhole: return check_whole(node, traits, v);
    case GpuHold::kSlot: return check_slot(node, traits, v);
    case GpuHold::kFraction:
      if (takes_fractions(state, node, *pod.fraction(), traits, v)) check_fraction_sizes(state, n, pod, traits, v);
      return;
  }
}

/// What stops GPU `g` of node `n` from taking one more device of fraction `pod`, in the order
/// gpu_capacity_for() checks it; kNone when it can take it.
enum class GpuBlock : std::uint8_t { kHeldWhole, kFenced, kOtherMode, kIdleOnly, kCompute, kMemory, kNone };
constexpr std::array<std::string_view, 6> kBlockCategory = {
    "GPU(s) held whole",      "GPU(s) fenced", "GPU(s) shared in the other compute mode",
    "GPU(s) shared, InfiniBand takes idle GPUs only", "Insufficient GPU compute", "Insufficient GPU memory"};

GpuBlock gpu_block(const ClusterState& state, std::size_t n, std::size_t g, const PodRequest& pod) {
  const GpuFraction& f = *pod.fraction();
  const GpuUsage& u = state.usage(n).gpus[g];
  const MiB need = fraction_need(f, state, n, g);
  const MiB usable = state.usable(n, g);
  if (u.fenced()) return GpuBlock::kFenced;
  if (u.state == GpuState::kWhole) return GpuBlock::kHeldWhole;
  // A GPU smaller than the limit, or one the reserve takes whole (a 0 MiB fraction is not a fit).
  if ((f.memory_limit && *f.memory_limit > state.node(n).gpus[g].memory) || usable.count() <= 0) return GpuBlock::kMemory;
  if (u.state == GpuState::kIdle) return need <= usable ? GpuBlock::kNone : GpuBlock::kMemory;
  if (pod.infiniband()) return GpuBlock::kIdleOnly;  // InfiniBand pods take idle GPUs only (rule 3)
  if (u.state != shared_state(f.mode)) return GpuBlock::kOtherMode;
  if (u.used + need > usable) return GpuBlock::kMemory;
  if (f.mode == ComputeMode::kSmSharing && u.compute + compute_portion(need, usable) > 100) return GpuBlock::kCompute;
  return GpuBlock::kNone;
}

/// The category of a node whose GPUs cannot hold the fraction: the cause that blocks the most
/// GPUs (ties in GpuBlock's order), so a node of GPUs held whole is not told "Insufficient GPU memory".
std::string_view fraction_block_category(const ClusterState& state, std::size_t n, const PodRequest& pod) {
  std::array<std::size_t, kBlockCategory.size()> count{};
  for (std::size_t g = 0; g < state.node(n).gpus.size(); ++g) {
    const GpuBlock b = gpu_block(state, n, g, pod);
    if (b != GpuBlock::kNone) ++count[static_cast<std::size_t>(b)];
  }
  const auto most = std::max_element(count.begin(), count.end());
  if (*most == 0) return kBlockCategory.back();
  return kBlockCategory[static_cast<std::size_t>(most - count.begin())];
}

/// Why no set of GPUs on node `n` takes the pod now: the category names the dominant cause.
void explain_gpus(const ClusterState& state, std::size_t n, const PodRequest& pod, const PodTraits& traits,
                  int available, VerdictBuilder& v) {
  switch (traits.hold) {
    case GpuHold::kWhole:
      return v.add(kNow, "Insufficient idle GPUs", [&] {
        return fmt::format("requested {} whole, {} idle: {}", traits.devices, available, describe_gpus(state, n));
      });
    case GpuHold::kSlot:
      return v.add(kNow, "Insufficient GPU slots",
                   [&] { return fmt::format("requested {}, free {}", traits.devices, available); });
    default:
      break;
  }
  const GpuFraction& f = *pod.fraction();
  const std::string_view category = fraction_block_category(state, n, pod);
  v.add(kNow, category, [&] {
    const MiB need = fraction_need(f, state, n, 0);
    return fmt::format("requested {} MiB{} {}{} on {} GPU(s), {} can take it: {}", need.count(),
                       f.mode == ComputeMode::kSmSharing
                           ? fmt::format(" and {}/100 compute", compute_portion(need, state.usable(n, 0)))
                           : std::string(),
                       compute_mode_name(f.mode), pod.infiniband() ? " (InfiniBand: idle GPUs only)" : "",
                       traits.devices, available, describe_gpus(state, n));
  });
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
    t.min_need = f->memory_on(state.min_usable_gpu_memory());
  }
  return t;
}

MiB fraction_need(const GpuFraction& f, const ClusterState& state, std::size_t n, std::size_t g) {
  return f.memory_on(state.usable(n, g));
}

int compute_portion(MiB need, MiB usable) {
  if (usable.count() <= 0) return 100;
  return static_cast<int>(std::min<std::int64_t>(100, (need.count() * 100 + usable.count() - 1) / usable.count()));
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
  if (u.fenced()) return 0;
  switch (traits.hold) {
    case GpuHold::kNone: return 0;
    case GpuHold::kWhole: return u.state == GpuState::kIdle ? 1 : 0;
    case GpuHold::kSlot: return node.sharing == SharingKind::kReplicas ? node.replica.replicas - u.slots : 0;
    case GpuHold::kFraction: return gpu_block(state, n, g, pod) == GpuBlock::kNone ? 1 : 0;
  }
  return 0;
}

namespace {

/// Everything that waiting or preemption cannot change: readiness, cordon, selector, GPU kind,
/// allocatable.
void check_static(const ClusterState& state, std::size_t n, const PodRequest& pod, const PodTraits& traits,
                  VerdictBuilder& v) {
  const NodeSpec& node = state.node(n);
  if (!node.ready) return v.add(kNever, "node(s) were not ready");
  if (!node.schedulable) {
    return v.add(kNever, "node(s) were unschedulable", [] { return std::string("spec.unschedulable is true (cordoned)"); });
  }
  for (const auto& selector : pod.node_selector) {
    const std::string& key = selector.first;  // named, not bound: the lambda below captures them
    const std::string& value = selector.second;
    auto it = node.labels.find(key);
    if (it == node.labels.end() || it->second != value) {
      return v.add(kNever, "node(s) didn't match Pod's node selector", [&] {
        return fmt::format("label {}={} wanted, node has {}", key, value, it == node.labels.end() ? "none" : it->second);
      });
    }
  }
  if (!matches(pod.node_affinity, node.labels)) {
    return v.add(kNever, "node(s) didn't match Pod's node affinity/selector",
                 [&] { return fmt::format("required node affinity {} does not match this node's labels", describe(pod.node_affinity)); });
  }
  check_gpu_kind(state, n, pod, traits, v);
  check_resources(node, nullptr, pod, v);
}

}  // namespace

bool fits_ever(const ClusterState& state, std::size_t n, const PodRequest& pod, const PodTraits& traits) {
  VerdictBuilder v(Detail::kNone);
  check_static(state, n, pod, traits, v);
  return !v.failed();
}

Verdict check_node(const ClusterState& state, std::size_t n, const PodRequest& pod, const PodTraits& traits,
                   Detail detail) {
  const NodeSpec& node = state.node(n);
  VerdictBuilder v(detail);
  check_static(state, n, pod, traits, v);
  if (v.failed()) return v.take();  // nothing below can change an unresolvable verdict

  check_resources(node, &state.usage(n), pod, v);
  if (traits.hold != GpuHold::kNone) {
    int available = 0;
    for (std::size_t g = 0; g < node.gpus.size() && available < traits.devices; ++g) {
      available += gpu_capacity_for(state, n, g, pod, traits);
    }
    if (available < traits.devices) explain_gpus(state, n, pod, traits, available, v);
  }
  return v.take();
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
