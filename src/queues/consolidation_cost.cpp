#include "queues/consolidation_cost.hpp"

#include <algorithm>

namespace fracpack::queues::detail {
namespace {

/// GPU memory (MiB) allocation `a` holds on device `g`.
std::int64_t memory_on(const Allocation& a, std::size_t g) {
  std::int64_t sum = 0;
  for (std::size_t i = 0; i < a.choice.gpus.size(); ++i) {
    if (static_cast<std::size_t>(a.choice.gpus[i]) == g && i < a.choice.memory.size()) sum += a.choice.memory[i].count();
  }
  return sum;
}


/// What the pod needs free on GPU `g` (MiB); nullopt when the GPU could never take it.
std::optional<std::int64_t> need_on(const ClusterState& state, std::size_t n, std::size_t g, const PodRequest& pod) {
  if (const GpuFraction* f = pod.fraction()) {
    const MiB need = f->memory_on(state.usable(n, g));
    if (need > state.usable(n, g) || (f->memory_limit && *f->memory_limit > state.node(n).gpus[g].memory)) return std::nullopt;
    return need.count();
  }
  return state.usable(n, g).count();
}

std::optional<GpuCost> cost_of(const ClusterState& state, std::size_t n, std::size_t g, const PodRequest& pod, const NodeHeld& held,
                               const MayMove& may_move) {
  const GpuUsage& usage = state.usage(n).gpus[g];
  if (usage.fenced()) return std::nullopt;
  const auto need = need_on(state, n, g, pod);
  if (!need) return std::nullopt;
  GpuCost cost;
  cost.gpu = g;
  if (usage.state == GpuState::kIdle) return cost;
  const auto& here = held.gpus[g];
  const GpuFraction* f = pod.fraction();
  if (f != nullptr && usage.state == shared_state(f->mode)) {
    // Shared in the pod's mode: the largest pods that may move first, until its request fits
    // beside the rest (none when it fits already: the node may lack only CPU or memory).
    const std::int64_t deficit = *need - (state.usable(n, g) - usage.used).count();
    std::int64_t freed = 0;
    for (const auto& [i, memory] : here) {
      if (freed >= deficit) break;
      if (!may_move(held.pods[i])) continue;
      cost.pods.push_back(i);
      freed += memory;
    }
    if (freed < deficit) return std::nullopt;
    cost.memory = std::max<std::int64_t>(0, deficit);
    return cost;
  }
  // Whole, or shared in the other mode: the GPU must become idle.
  for (const auto& [i, memory] : here) {
    if (!may_move(held.pods[i])) return std::nullopt;
  }
  for (const auto& [i, memory] : here) {
    cost.pods.push_back(i);
    cost.memory += memory;
  }
  return cost;
}

}  // namespace

void read_node(const ClusterState& state, std::size_t n, const std::function<const PodRequest*(const Allocation&)>& movable,
               NodeHeld& held) {
  held.stamp = state.node_stamp(n);
  held.pods.clear();
  held.gpus.assign(state.usage(n).gpus.size(), {});
  held.widest = 1;
  for (const std::string& key : state.pods_on(n)) {
    const Allocation* a = state.allocation(key);
    if (a == nullptr) continue;
    const std::size_t i = held.pods.size();
    const PodRequest* pod = a->holder == Holder::kScheduled ? movable(*a) : nullptr;
    held.pods.push_back({a, pod});
    held.widest = std::max(held.widest, a->choice.gpus.size());
    for (int g : a->choice.gpus) {
      auto& list = held.gpus[static_cast<std::size_t>(g)];
      if (std::none_of(list.begin(), list.end(), [&](const auto& e) { return e.first == i; })) {
        list.emplace_back(i, memory_on(*a, static_cast<std::size_t>(g)));
      }
    }
  }
  for (auto& list : held.gpus) {
    std::sort(list.begin(), list.end(), [&](const auto& x, const auto& y) {
      return x.second != y.second ? x.second > y.second : held.pods[x.first].allocation->pod < held.pods[y.first].allocation->pod;
    });
  }
}

std::size_t devices_needed(const PodRequest& pod) {
  if (const GpuFraction* f = pod.fraction()) return static_cast<std::size_t>(f->num_devices);
  if (const WholeGpus* w = pod.whole(); w != nullptr && !w->shared_slot) return static_cast<std::size_t>(w->count);
  return 0;
}

std::vector<GpuCost> gpu_costs(const ClusterState& state, std::size_t n, const PodRequest& pod, const NodeHeld& held,
                               const MayMove& may_move) {
  std::vector<GpuCost> out;
  if (devices_needed(pod) == 0 || state.node(n).sharing == SharingKind::kReplicas) return out;
  for (std::size_t g = 0; g < state.usage(n).gpus.size(); ++g) {
    if (auto c = cost_of(state, n, g, pod, held, may_move)) out.push_back(std::move(*c));
  }
  std::sort(out.begin(), out.end(), [](const GpuCost& a, const GpuCost& b) {
    if (a.moves() != b.moves()) return a.moves() < b.moves();
    return a.memory != b.memory ? a.memory < b.memory : a.gpu < b.gpu;
  });
  return out;
}

std::optional<NodeBound> node_bound(const PodRequest& pod, const NodeHeld& held, const std::vector<GpuCost>& costs) {
  const std::size_t d = devices_needed(pod);
  if (costs.size() < d) return std::nullopt;
  NodeBound bound;
  std::size_t moves = 0;
  std::vector<std::int64_t> memories;
  for (std::size_t i = 0; i < costs.size(); ++i) {
    if (i < d) moves += costs[i].moves();  // costs are in (moves, memory) order
    memories.push_back(costs[i].memory);
  }
  std::sort(memories.begin(), memories.end());
  for (std::size_t i = 0; i < d; ++i) bound.memory += memories[i];
  // One pod on k GPUs frees k of them at once: divide by the most devices any pod here holds.
  bound.moves = std::max<std::size_t>(1, (moves + held.widest - 1) / held.widest);
  return bound;
}

std::vector<std::size_t> core_victims(const NodeHeld& held, const std::vector<GpuCost>& costs, std::size_t devices) {
  std::vector<std::size_t> out;
  std::vector<bool> listed(held.pods.size(), false);
  for (std::size_t c = 0; c < std::min(devices, costs.size()); ++c) {
    for (std::size_t i : costs[c].pods) {
      if (listed[i]) continue;
      listed[i] = true;
      out.push_back(i);
    }
  }
  return out;
}

std::vector<std::size_t> removal_order(const NodeHeld& held, const std::vector<GpuCost>& costs, const MayMove& may_move,
                                       std::vector<bool> taken) {
  std::vector<std::size_t> order;
  std::vector<bool>& listed = taken;
  for (const GpuCost& c : costs) {
    for (std::size_t i : c.pods) {
      if (listed[i]) continue;
      listed[i] = true;
      order.push_back(i);
    }
  }
  // (sort key, index): CPU-only pods by CPU, then the others by GPU memory, most first; then name.
  std::vector<std::pair<std::pair<bool, std::int64_t>, std::size_t>> rest;
  for (std::size_t i = 0; i < held.pods.size(); ++i) {
    if (listed[i] || !may_move(held.pods[i])) continue;
    const Allocation& a = *held.pods[i].allocation;
    const bool gpus = !a.choice.gpus.empty();
    rest.push_back({{gpus, gpus ? -a.choice.memory_held().count() : -a.cpu.count()}, i});
  }
  std::sort(rest.begin(), rest.end(), [&](const auto& x, const auto& y) {
    return x.first != y.first ? x.first < y.first : held.pods[x.second].allocation->pod < held.pods[y.second].allocation->pod;
  });
  for (const auto& r : rest) order.push_back(r.second);
  return order;
}

}  // namespace fracpack::queues::detail
