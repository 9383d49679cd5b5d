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

std::optional<Policy::Evaluated> evaluate_node(const ClusterState& state, std::size_t n, const PodRequest& pod,
                                               const PodTraits& traits, const Policy& policy) {
  auto e = policy.evaluate(state, n, pod, traits);
  if (e) e->key.position = state.order_label(n);
  return e;
}

void break_tie(const Policy& policy, const PodRequest& pod, const NodeSpec& node, NodeKey& key) {
  switch (policy.ties()) {
    case Policy::Ties::kByName: return;
    case Policy::Ties::kNodeOrder: key.value2 = tie_break(policy.tie_seed(), {}, node.name); return;
    case Policy::Ties::kPerPod: key.value2 = tie_break(policy.tie_seed(), pod.key(), node.name); return;
  }
}

}  // namespace fracpack::binpack

namespace fracpack {

std::optional<Policy::Evaluated> Policy::evaluate(const ClusterState& state, std::size_t node, const PodRequest& pod,
                                                  const PodTraits& traits) const {
  auto choice = binpack::choose_gpus(state, node, pod, traits, *this);
  if (!choice) return std::nullopt;
  Evaluated e;
  e.key = node_key(traits, state.summary(node), *choice);
  e.choice = std::move(*choice);
  return e;
}

std::int64_t tie_break(std::uint64_t seed, std::string_view pod_key, std::string_view node_name) {
  // FNV-1a over both names, then a splitmix64 finaliser: cheap, portable and well mixed.
  std::uint64_t h = 1469598103934665603ULL ^ seed;
  for (std::string_view part : {pod_key, std::string_view("\0", 1), node_name}) {
    for (unsigned char c : part) h = (h ^ c) * 1099511628211ULL;
  }
  h += 0x9e3779b97f4a7c15ULL;
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
  h ^= h >> 31;
  return static_cast<std::int64_t>(h >> 2);
}

}  // namespace fracpack
