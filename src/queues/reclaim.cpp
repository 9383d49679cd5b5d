#include "fracpack/queues/reclaim.hpp"

#include <algorithm>
#include <map>

#include "fracpack/scheduler.hpp"

namespace fracpack::queues {
namespace {

MiB memory_of(const Allocation& a) {
  MiB sum{0};
  for (MiB m : a.choice.memory) sum += m;
  return sum;
}

bool is_candidate(const Allocation& a, const PodRequest& pod, const QueueBook& book) {
  if (!a.preemptible) return false;
  if (a.queue == pod.queue) return a.priority < pod.priority;
  auto q = book.tree().find(a.queue);
  return q && book.over_fair_share(*q);
}

bool fits_on(ClusterState& state, const PodRequest& pod, const Policy& policy, std::size_t node) {
  NodeMask only(state.node_count(), false);
  only[node] = true;
  return select(state, pod, policy, &only).has_value();
}

}  // namespace

std::optional<Victims> find_victims(ClusterState& state, const QueueBook& book, const PodRequest& pod,
                                    const Policy& policy) {
  std::map<std::size_t, std::vector<const Allocation*>> by_node;
  for (const std::string& key : state.allocated_pods()) {
    const Allocation* a = state.allocation(key);
    if (is_candidate(*a, pod, book)) by_node[a->node].push_back(a);
  }
  std::optional<Victims> best;
  for (auto& [node, candidates] : by_node) {
    std::vector<Allocation> pool;
    for (const Allocation* a : candidates) pool.push_back(*a);
    std::stable_sort(pool.begin(), pool.end(),
                     [](const Allocation& a, const Allocation& b) { return memory_of(a) > memory_of(b); });
    std::vector<Allocation> removed;
    bool fits = false;
    for (const Allocation& a : pool) {
      removed.push_back(*state.take(a.pod));
      if (fits_on(state, pod, policy, node)) {
        fits = true;
        break;
      }
    }
    if (fits) {
      // Put back every victim the pod does not need, smallest first.
      for (std::size_t i = removed.size(); i-- > 0;) {
        Allocation trial = removed[i];
        state.restore(trial);
        if (fits_on(state, pod, policy, node)) {
          removed.erase(removed.begin() + static_cast<std::ptrdiff_t>(i));
        } else {
          state.take(trial.pod);
        }
      }
      Victims v;
      v.node = state.node(node).name;
      for (const Allocation& a : removed) {
        v.pods.push_back(a.pod);
        v.gpu_memory += memory_of(a);
      }
      std::sort(v.pods.begin(), v.pods.end());
      const auto better = [&](const Victims& x, const Victims& y) {
        if (x.pods.size() != y.pods.size()) return x.pods.size() < y.pods.size();
        if (x.gpu_memory != y.gpu_memory) return x.gpu_memory < y.gpu_memory;
        return x.node < y.node;
      };
      if (!best || better(v, *best)) best = std::move(v);
    }
    for (Allocation& a : removed) state.restore(std::move(a));
  }
  return best;
}

}  // namespace fracpack::queues
