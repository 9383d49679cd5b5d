#include "binpack/study_policy.hpp"

#include <limits>

#include "binpack/fit.hpp"
#include "binpack/gpu_choice.hpp"

namespace fracpack::binpack {

StudyPod study_pod(const ClusterState& state, std::size_t n, const PodRequest& pod) {
  StudyPod p;
  p.cpu = pod.cpu.count() == 0 ? 100 : pod.cpu.count();
  if (const auto* f = pod.fraction()) {
    p.gpus = f->num_devices;
    if (f->portion) {
      p.milli = f->portion->count();
    } else if (!state.node(n).gpus.empty() && state.usable(n, 0).count() > 0) {
      p.milli = std::min<std::int64_t>(1000, f->memory->count() * 1000 / state.usable(n, 0).count());
    }
  } else if (const auto* w = pod.whole()) {
    p.milli = 1000;
    p.gpus = w->count;
  }
  return p;
}

std::optional<std::vector<int>> study_best_gpus(const ClusterState& state, std::size_t n, const PodRequest& pod,
                                                const PodTraits& traits) {
  std::vector<int> out;
  if (traits.hold == GpuHold::kNone) return out;
  const std::size_t count = state.node(n).gpus.size();
  if (traits.hold == GpuHold::kFraction && traits.devices == 1) {
    int best = -1;
    std::int64_t best_free = 0;
    for (std::size_t g = 0; g < count; ++g) {
      if (gpu_capacity_for(state, n, g, pod, traits) <= 0) continue;
      const std::int64_t free = free_milli(state, n, g);
      if (best < 0 || free < best_free) {
        best = static_cast<int>(g);
        best_free = free;
      }
    }
    if (best < 0) return std::nullopt;
    return std::vector<int>{best};
  }
  for (std::size_t g = 0; g < count && static_cast<int>(out.size()) < traits.devices; ++g) {
    for (int k = gpu_capacity_for(state, n, g, pod, traits); k > 0 && static_cast<int>(out.size()) < traits.devices; --k) {
      out.push_back(static_cast<int>(g));
      if (traits.hold != GpuHold::kSlot) break;  // fractions and whole GPUs: distinct devices
    }
  }
  if (static_cast<int>(out.size()) < traits.devices) return std::nullopt;
  return out;
}

NodeKey StudyPolicy::key_lower_bound(const PodTraits&, const SummaryRange& range) const {
  NodeKey key;
  key.tier = std::numeric_limits<std::int64_t>::min();
  key.value = std::numeric_limits<std::int64_t>::min();
  key.value2 = std::numeric_limits<std::int64_t>::min();
  key.position = range.lo.position;
  return key;
}

std::optional<std::vector<int>> StudyPolicy::choose(const ClusterState& state, std::size_t n, const PodRequest& pod,
                                                    const PodTraits& traits) const {
  return study_best_gpus(state, n, pod, traits);
}

std::optional<StudyPolicy::Scored> StudyPolicy::choose_scored(const ClusterState& state, std::size_t n,
                                                              const PodRequest& pod, const PodTraits& traits) const {
  auto gpus = choose(state, n, pod, traits);
  if (!gpus) return std::nullopt;
  const std::int64_t s = score(state, n, pod, *gpus);
  return Scored{std::move(*gpus), s};
}

std::optional<Policy::Evaluated> StudyPolicy::evaluate(const ClusterState& state, std::size_t n, const PodRequest& pod,
                                                       const PodTraits& traits) const {
  auto scored = choose_scored(state, n, pod, traits);
  if (!scored) return std::nullopt;
  Evaluated e;
  e.key.tier = -scored->score;
  e.key.value = secondary(state, n, pod, scored->gpus);
  e.choice = make_choice(state, n, pod, traits, std::move(scored->gpus));
  return e;
}

}  // namespace fracpack::binpack
