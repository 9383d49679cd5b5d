// One density run: arrivals through the ledger under one policy, with the curves recorded.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>

#include "density/curve.hpp"
#include "fracpack/binpack/cluster_state.hpp"
#include "fracpack/binpack/packing_bound.hpp"
#include "fracpack/sim/density.hpp"
#include "fracpack/binpack/policy.hpp"
#include "fracpack/binpack/scheduler.hpp"
#include "fracpack/binpack/verdict_cache.hpp"
#include "fracpack/sim/capacity_ceiling.hpp"

namespace fracpack::density {
Result<RunResult> run(const Trace& trace, std::string_view policy_name, std::uint64_t seed, double ratio) {
  const auto started = std::chrono::steady_clock::now();
  PolicyOptions options;
  options.seed = seed;
  options.workload = std::make_shared<const std::vector<TypicalPod>>(trace.typical);
  auto policy = make_policy(policy_name, options);
  if (!policy) return policy.status();
  PlacementConfig config;  // no per-GPU reserve: the study gives each GPU its whole memory
  auto created = ClusterState::create(trace.nodes, config);
  if (!created) return created.status();
  ClusterState& state = *created;

  const std::vector<std::size_t> order = inflate(trace.pods, trace.gpus * 1000, ratio, seed);
  VerdictCache cache(trace.shapes + 1);  // every shape stays cached: no re-evaluation after eviction
  std::vector<std::size_t> all(state.node_count());
  for (std::size_t n = 0; n < all.size(); ++n) all[n] = n;
  FragmentationTotals book(state, trace.typical);
  CurveBuilder allocation(trace.gpus);
  CurveBuilder frag_ratio(trace.gpus);

  RunResult r;
  r.policy = std::string(policy_name);
  r.seed = seed;
  std::int64_t arrived = 0;
  std::int64_t used = 0;
  std::map<std::int64_t, std::int64_t> placed_shares;  // single-GPU shares placed, by milli-GPU
  std::vector<const trace::TracePod*> placed_pods;
  std::vector<const trace::TracePod*> failed_pods;
  for (std::size_t k = 0; k < order.size(); ++k) {
    PodRequest pod = trace.requests[order[k]];
    if (k >= trace.pods.size()) pod.name += "-tuned-" + std::to_string(k);
    const std::int64_t demand = trace.pods[order[k]].gpu_total().count();
    auto selected = cache.select(state, pod, **policy, all);
    if (!selected) return Status(Code::kInternal, fmt::format("{} under {}: {}", pod.key(), policy_name, selected.status().message()));
    if (const auto& chosen = *selected) {
      const std::size_t n = chosen->node;
      const Status st = state.reserve(pod, n, chosen->choice);
      if (!st.is_ok()) {
        return Status(Code::kInternal, fmt::format("{} on {} refused by the ledger under {}: {}", pod.key(),
                                                   state.node(n).name, policy_name, st.message()));
      }
      book.refresh(state, n);
      used += demand;
      ++r.placed;
      placed_pods.push_back(&trace.pods[order[k]]);
      if (const auto& tp = trace.pods[order[k]]; tp.num_gpu == 1 && demand > 0 && demand < 1000) ++placed_shares[demand];
    } else {
      ++r.failed;
      failed_pods.push_back(&trace.pods[order[k]]);
    }
    arrived += demand;
    allocation.add(arrived, 100.0 * static_cast<double>(used) / (1000.0 * static_cast<double>(trace.gpus)));
    frag_ratio.add(arrived, book.ratio_pct());
  }
  r.arrivals = static_cast<std::int64_t>(order.size());
  r.allocation = allocation.points();
  r.frag_ratio = frag_ratio.points();
  r.final_allocation = 100.0 * static_cast<double>(used) / (1000.0 * static_cast<double>(trace.gpus));
  r.unallocated_gpus = static_cast<double>(trace.gpus * 1000 - used) / 1000.0;
  r.allocation_ceiling = 100.0 * (1.0 - binpack::packing_waste_bound(placed_shares) / static_cast<double>(trace.gpus));
  // Both bound what the placed shares plus whole-GPU pods can allocate (the failed ones are a
  // part of the LP ceiling's unlimited whole-GPU demand): the lower is a bound too.
  r.cpu_ceiling = std::min(r.allocation_ceiling, capacity_ceiling(trace.nodes, placed_pods, failed_pods).allocation_pct);
  for (std::size_t n = 0; n < state.node_count(); ++n) {
    for (const auto& g : state.usage(n).gpus) r.idle_gpus += g.state == GpuState::kIdle ? 1 : 0;
  }
  r.final_fragmentation = book.fragmentation_milli() / 1000.0;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return r;
}

}  // namespace fracpack::density
