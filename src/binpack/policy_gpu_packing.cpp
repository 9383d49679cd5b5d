// `gpu-packing`: the study's GpuPacking (gpu_packing_score.go): prefer GPUs already in use, then
// nodes already in use, then idle nodes. A node with every GPU idle scores max(33 − GPUs, GPUs);
// else the pod's GPUs are picked from the least free up: if one of them is idle, max(50 − idle
// ones taken, 33); otherwise max(100 − Σ⌊free·100/1000⌋ / 10, 50). CPU-only pods score 0.
#include <algorithm>
#include <numeric>

#include "binpack/study_policies.hpp"
#include "binpack/study_policy.hpp"

namespace fracpack::binpack {
namespace {

class GpuPackingPolicy final : public StudyPolicy {
 public:
  using StudyPolicy::StudyPolicy;
  std::string_view name() const override { return "gpu-packing"; }
  std::string_view summary() const override { return "FGD study baseline: used GPUs first, then used nodes, then idle nodes"; }

 protected:
  std::int64_t score(const ClusterState& state, std::size_t n, const PodRequest& pod, const std::vector<int>&) const override {
    const StudyPod p = study_pod(state, n, pod);
    if (p.gpus == 0) return 0;
    const NodeFree free = node_free(state, n);
    const auto gpus = static_cast<std::int64_t>(free.gpu_milli.size());
    if (std::all_of(free.gpu_milli.begin(), free.gpu_milli.end(), [](std::int64_t f) { return f == 1000; })) {
      return std::max<std::int64_t>(33 - gpus, gpus);
    }
    std::vector<std::size_t> order(free.gpu_milli.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return free.gpu_milli[a] < free.gpu_milli[b]; });
    int taken = 0;
    int idle_taken = 0;
    std::int64_t left_sum = 0;
    for (std::size_t g : order) {
      if (taken == p.gpus) break;
      if (free.gpu_milli[g] < p.milli) continue;
      ++taken;
      if (free.gpu_milli[g] == 1000) ++idle_taken;
      left_sum += free.gpu_milli[g] * 100 / 1000;
    }
    if (idle_taken > 0) return std::max<std::int64_t>(50 - idle_taken, 33);
    return std::max<std::int64_t>(100 - left_sum / 10, 50);
  }
};

}  // namespace

std::shared_ptr<const Policy> make_gpu_packing_policy(std::uint64_t seed) { return std::make_shared<GpuPackingPolicy>(seed); }

}  // namespace fracpack::binpack
