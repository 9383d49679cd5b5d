#include "binpack/gpu_choice.hpp"

#include <algorithm>
#include <functional>
#include <queue>

#include "binpack/fit.hpp"

namespace fracpack::binpack {
namespace {

GpuCandidate candidate(const ClusterState& state, std::size_t n, std::size_t g, const PodRequest& pod,
                       const PodTraits& traits, int extra_slots) {
  const NodeSpec& node = state.node(n);
  const GpuDevice& d = node.gpus[g];
  const GpuUsage& u = state.usage(n).gpus[g];
  GpuCandidate c;
  c.index = d.index;
  c.memory = d.memory;
  c.usable = state.usable(n, g);
  c.used = u.used;
  switch (traits.hold) {
    case GpuHold::kFraction:
      c.need = fraction_need(*pod.fraction(), state, n, g);
      c.shared = u.state == shared_state(traits.mode);
      break;
    case GpuHold::kSlot:
      // Slots rank by how many are taken, seen as memory: each slot is 1/N of the device.
      c.need = MiB(d.memory.count() / node.replica.replicas);
      c.used = MiB(d.memory.count() * (u.slots + extra_slots) / node.replica.replicas);
      c.shared = u.slots + extra_slots > 0;
      break;
    default:
      c.need = d.memory;
      break;
  }
  return c;
}

}  // namespace

GpuChoice make_choice(const ClusterState& state, std::size_t n, const PodRequest& pod, const PodTraits& traits,
                      std::vector<int> gpus) {
  const NodeSpec& node = state.node(n);
  std::sort(gpus.begin(), gpus.end());
  GpuChoice choice;
  choice.hold = traits.hold;
  choice.mode = traits.hold == GpuHold::kSlot ? node.replica.strategy : traits.mode;
  for (std::size_t k = 0; k < gpus.size(); ++k) {
    const auto g = static_cast<std::size_t>(gpus[k]);
    const GpuDevice& d = node.gpus[g];
    const GpuUsage& u = state.usage(n).gpus[g];
    MiB memory{0};
    int compute = 0;
    switch (traits.hold) {
      case GpuHold::kFraction:
        memory = fraction_need(*pod.fraction(), state, n, g);
        compute = compute_portion(memory, state.usable(n, g));
        if (u.state == shared_state(traits.mode)) ++choice.shared_before;
        choice.free_after += state.usable(n, g) - u.used - memory;
        break;
      case GpuHold::kSlot:
        memory = slot_memory(node, d);
        compute = slot_compute(node);
        if (u.slots > 0) ++choice.shared_before;
        break;
      case GpuHold::kWhole:
        memory = d.memory;
        compute = 100;
        break;
      case GpuHold::kNone:
        break;
    }
    choice.memory.push_back(memory);
    choice.compute.push_back(compute);
  }
  choice.gpus = std::move(gpus);
  return choice;
}

std::optional<GpuChoice> choose_gpus(const ClusterState& state, std::size_t n, const PodRequest& pod,
                                     const PodTraits& traits, const Policy& policy) {
  if (traits.hold == GpuHold::kNone) return make_choice(state, n, pod, traits, {});
  const std::size_t count = state.node(n).gpus.size();
  struct Ranked {
    std::int64_t rank;
    int index;
    auto operator<=>(const Ranked&) const = default;
  };
  std::vector<int> taken;
  if (traits.hold == GpuHold::kSlot) {
    // Slots one at a time, best GPU first; each slot taken changes that GPU's rank for the next.
    // A heap keeps this O((slots + GPUs) log GPUs).
    std::vector<int> extra(count, 0);
    std::vector<int> left(count, 0);
    std::priority_queue<Ranked, std::vector<Ranked>, std::greater<>> heap;
    for (std::size_t g = 0; g < count; ++g) {
      left[g] = gpu_capacity_for(state, n, g, pod, traits);
      if (left[g] > 0) heap.push({policy.gpu_rank(traits, candidate(state, n, g, pod, traits, 0)), static_cast<int>(g)});
    }
    for (int k = 0; k < traits.devices; ++k) {
      if (heap.empty()) return std::nullopt;
      const auto g = static_cast<std::size_t>(heap.top().index);
      heap.pop();
      taken.push_back(static_cast<int>(g));
      if (--left[g] > 0) {
        heap.push({policy.gpu_rank(traits, candidate(state, n, g, pod, traits, ++extra[g])), static_cast<int>(g)});
      }
    }
    return make_choice(state, n, pod, traits, std::move(taken));
  }
  std::vector<Ranked> ranked;
  ranked.reserve(count);
  for (std::size_t g = 0; g < count; ++g) {
    if (gpu_capacity_for(state, n, g, pod, traits) <= 0) continue;
    ranked.push_back({policy.gpu_rank(traits, candidate(state, n, g, pod, traits, 0)), static_cast<int>(g)});
  }
  const auto devices = static_cast<std::size_t>(traits.devices);
  if (ranked.size() < devices) return std::nullopt;
  std::partial_sort(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(devices), ranked.end());
  for (std::size_t k = 0; k < devices; ++k) taken.push_back(ranked[k].index);
  return make_choice(state, n, pod, traits, std::move(taken));
}

}  // namespace fracpack::binpack
