#include "fracpack/binpack/fragmentation.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace fracpack {
namespace {

/// The study's typical-pod key: CPU (non-zero), milli per GPU, GPUs, allowed models.
using ShapeKey = std::tuple<std::int64_t, std::int64_t, int, std::string>;

/// Allowed GPU models when the pod's required affinity is exactly `gpu.product In [...]`.
std::vector<std::string> allowed_models(const PodRequest& pod) {
  if (pod.node_affinity.size() != 1 || pod.node_affinity[0].match_expressions.size() != 1) return {};
  const auto& r = pod.node_affinity[0].match_expressions[0];
  if (r.key != "nvidia.com/gpu.product" || r.op != NodeSelectorRequirement::Op::kIn) return {};
  return r.values;
}

}  // namespace

std::vector<TypicalPod> typical_pods(const std::vector<PodRequest>& pods, double coverage) {
  std::map<ShapeKey, std::int64_t> counts;
  std::int64_t total = 0;
  for (const auto& p : pods) {
    std::int64_t milli = 0;
    int gpus = 0;
    if (const auto* f = p.fraction()) {
      if (!f->portion) continue;  // a memory-sized fraction has no milli-GPU shape
      milli = f->portion->count();
      gpus = f->num_devices;
    } else if (const auto* w = p.whole()) {
      milli = 1000;
      gpus = w->count;
    }
    const std::int64_t cpu = p.cpu.count() == 0 ? 100 : p.cpu.count();
    ++counts[{cpu, milli, gpus, fmt::format("{}", fmt::join(allowed_models(p), "|"))}];
    ++total;
  }
  std::vector<std::pair<std::int64_t, ShapeKey>> order;
  for (const auto& [key, count] : counts) order.emplace_back(count, key);
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a > b; });
  std::vector<TypicalPod> out;
  std::int64_t kept = 0;
  for (const auto& [count, key] : order) {
    if (total == 0 || static_cast<double>(kept) >= coverage * static_cast<double>(total)) break;
    if (out.size() == kMaxTypicalShapes) break;
    kept += count;
    TypicalPod t;
    t.cpu = MilliCpu(std::get<0>(key));
    t.milli = MilliGpu(std::get<1>(key));
    t.gpus = std::get<2>(key);
    std::string_view rest = std::get<3>(key);
    while (!rest.empty()) {
      const auto bar = rest.find('|');
      t.models.emplace_back(rest.substr(0, bar));
      rest = bar == std::string_view::npos ? std::string_view{} : rest.substr(bar + 1);
    }
    for (const auto& model : t.models) t.model_hashes.push_back(std::hash<std::string>{}(model));
    t.weight = static_cast<double>(count);
    out.push_back(std::move(t));
  }
  for (auto& t : out) t.weight /= static_cast<double>(kept);
  return out;
}

std::int64_t free_milli(const ClusterState& state, std::size_t n, std::size_t g) {
  const GpuUsage& u = state.usage(n).gpus[g];
  if (u.fenced() || u.state == GpuState::kWhole) return 0;
  if (u.state == GpuState::kIdle) return 1000;
  const std::int64_t usable = state.usable(n, g).count();
  if (usable <= 0) return 0;
  return std::max<std::int64_t>(0, (usable - u.used.count()) * 1000 / usable);
}

const std::string* gpu_model(const ClusterState& state, std::size_t n) {
  const auto& labels = state.node(n).labels;
  auto it = labels.find("nvidia.com/gpu.product");
  return it == labels.end() ? nullptr : &it->second;
}

NodeFree node_free(const ClusterState& state, std::size_t n) {
  NodeFree f;
  f.cpu = (state.node(n).cpu - state.usage(n).cpu).count();
  f.gpu_milli.resize(state.node(n).gpus.size());
  for (std::size_t g = 0; g < f.gpu_milli.size(); ++g) f.gpu_milli[g] = free_milli(state, n, g);
  f.model = gpu_model(state, n);
  if (f.model != nullptr) f.model_hash = std::hash<std::string>{}(*f.model);
  return f;
}

bool model_allowed(const NodeFree& node, const TypicalPod& m) {
  if (m.models.empty()) return true;
  if (node.model == nullptr) return false;
  const bool hashed = m.model_hashes.size() == m.models.size() && node.model_hash != 0;
  for (std::size_t i = 0; i < m.models.size(); ++i) {
    if (hashed && m.model_hashes[i] != node.model_hash) continue;  // most names differ: no string compare
    if (m.models[i] == *node.model) return true;
  }
  return false;
}

double fragment_for(const NodeFree& node, const TypicalPod& m) {
  std::int64_t all = 0;
  std::int64_t small = 0;
  int roomy = 0;
  for (std::int64_t free : node.gpu_milli) {
    all += free;
    if (free < m.milli.count()) {
      small += free;
    } else {
      ++roomy;
    }
  }
  if (m.gpus == 0 || m.milli.count() == 0) return static_cast<double>(all);  // a CPU pod uses no GPU
  if (roomy < m.gpus || node.cpu < m.cpu.count()) return static_cast<double>(all);
  // The model last: on a busy node most typical pods are ruled out above, without comparing names.
  return static_cast<double>(model_allowed(node, m) ? small : all);
}

double fragmentation(const NodeFree& node, const std::vector<TypicalPod>& workload) {
  double f = 0;
  for (const auto& m : workload) f += m.weight * fragment_for(node, m);
  return f;
}

FragmentationTotals::FragmentationTotals(const ClusterState& state, std::vector<TypicalPod> workload)
    : workload_(std::move(workload)),
      stamp_(state.node_count(), 0),
      frag_(state.node_count(), 0),
      free_(state.node_count(), 0) {
  for (std::size_t n = 0; n < state.node_count(); ++n) {
    stamp_[n] = state.node_stamp(n) + 1;  // differs: every node is computed once
    refresh(state, n);
  }
}

void FragmentationTotals::refresh(const ClusterState& state, std::size_t n) {
  if (stamp_[n] == state.node_stamp(n)) return;
  const NodeFree f = node_free(state, n);
  const double frag = fragmentation(f, workload_);
  const std::int64_t free = f.gpu_total();
  total_frag_ += frag - frag_[n];
  total_free_ += free - free_[n];
  frag_[n] = frag;
  free_[n] = free;
  stamp_[n] = state.node_stamp(n);
}

void FragmentationTotals::refresh(const ClusterState& state) {
  for (std::size_t n = 0; n < state.node_count(); ++n) refresh(state, n);
}

}  // namespace fracpack
