#include "fracpack/cluster_state.hpp"

#include <atomic>

#include <algorithm>

#include <fmt/format.h>

#include "binpack/fit.hpp"
#include "binpack/gpu_choice.hpp"
#include "binpack/node_summary.hpp"

namespace fracpack {

std::string_view gpu_state_name(GpuState state) {
  switch (state) {
    case GpuState::kIdle: return "idle";
    case GpuState::kWhole: return "whole";
    case GpuState::kSharedTimeSlicing: return "shared-time-slicing";
    case GpuState::kSharedSmSharing: return "shared-sm-sharing";
  }
  return "unknown";
}

GpuState shared_state(ComputeMode mode) {
  return mode == ComputeMode::kSmSharing ? GpuState::kSharedSmSharing : GpuState::kSharedTimeSlicing;
}

namespace {
/// The last node stamp handed out, process-wide: a stamp names one usage of one node.
std::atomic<std::uint64_t> g_last_stamp{0};
}  // namespace

Result<ClusterState> ClusterState::create(std::vector<NodeSpec> nodes, PlacementConfig config) {
  ClusterState s;
  s.config_ = std::move(config);
  std::sort(nodes.begin(), nodes.end(), [](const NodeSpec& a, const NodeSpec& b) { return a.name < b.name; });
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (i > 0 && nodes[i].name == nodes[i - 1].name) {
      return invalid_argument("node {}: the name appears twice in the cluster", nodes[i].name);
    }
    for (std::size_t g = 0; g < nodes[i].gpus.size(); ++g) {
      if (nodes[i].gpus[g].index != static_cast<int>(g)) {
        return invalid_argument("node {}: GPU at position {} has index {}; indices must be 0..N-1 in order",
                                nodes[i].name, g, nodes[i].gpus[g].index);
      }
    }
    if (nodes[i].sharing == SharingKind::kReplicas && nodes[i].replica.replicas < 2) {
      return invalid_argument("node {}: replica sharing needs at least 2 replicas", nodes[i].name);
    }
  }
  s.nodes_ = std::move(nodes);
  s.usage_.resize(s.nodes_.size());
  for (std::size_t i = 0; i < s.nodes_.size(); ++i) {
    s.by_name_.emplace(s.nodes_[i].name, i);
    s.usage_[i].gpus.resize(s.nodes_[i].gpus.size());
  }
  for (const auto& node : s.nodes_) {
    s.max_node_cpu_ = std::max(s.max_node_cpu_, node.cpu.count());
    s.max_node_gpu_milli_ = std::max<std::int64_t>(s.max_node_gpu_milli_, 1000 * static_cast<std::int64_t>(node.gpus.size()));
  }
  for (std::size_t i = 0; i < s.nodes_.size(); ++i) {
    if (!binpack::takes_fractions(s, i)) continue;
    for (std::size_t g = 0; g < s.nodes_[i].gpus.size(); ++g) {
      const MiB usable = s.usable(i, g);
      if (usable.count() <= 0) continue;  // takes no fraction: not a candidate size
      if (s.min_usable_gpu_memory_.count() == 0 || usable < s.min_usable_gpu_memory_) s.min_usable_gpu_memory_ = usable;
    }
  }
  std::vector<NodeSummary> summaries;
  summaries.reserve(s.nodes_.size());
  for (std::size_t i = 0; i < s.nodes_.size(); ++i) summaries.push_back(binpack::summarize(s, i));
  s.index_ = NodeIndex(summaries);
  s.generation_ = ++g_last_stamp;
  s.node_stamp_.assign(s.nodes_.size(), s.generation_);  // a new ledger: nothing cached applies
  return s;
}

std::optional<std::size_t> ClusterState::find_node(std::string_view name) const {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

const Allocation* ClusterState::allocation(const std::string& pod_key) const {
  auto it = allocations_.find(pod_key);
  return it == allocations_.end() ? nullptr : &it->second;
}

std::vector<std::string> ClusterState::allocated_pods() const {
  std::vector<std::string> out;
  out.reserve(allocations_.size());
  for (const auto& [key, _] : allocations_) out.push_back(key);
  std::sort(out.begin(), out.end());
  return out;
}

void ClusterState::refresh(std::size_t node) {
  ++version_;
  node_stamp_[node] = ++g_last_stamp;
  index_.update(node, binpack::summarize(*this, node));
}

Status ClusterState::check_gpus(const PodRequest& pod, std::size_t n, const std::vector<int>& gpus) const {
  const std::string key = pod.key();
  const NodeSpec& node = nodes_[n];
  const PodTraits traits = binpack::traits_of(pod, *this);
  if (gpus.size() != static_cast<std::size_t>(traits.devices)) {
    return invalid_argument("pod {} on node {}: {} GPU(s) chosen, the pod needs {}", key, node.name, gpus.size(),
                            traits.devices);
  }
  std::vector<int> per_gpu(node.gpus.size(), 0);
  for (int g : gpus) {
    if (g < 0 || static_cast<std::size_t>(g) >= node.gpus.size()) {
      return {Code::kNotFound, fmt::format("pod {} on node {}: GPU {} does not exist (node has {})", key, node.name,
                                           g, node.gpus.size())};
    }
    ++per_gpu[static_cast<std::size_t>(g)];
  }
  for (std::size_t g = 0; g < per_gpu.size(); ++g) {
    if (per_gpu[g] == 0) continue;
    if (per_gpu[g] > 1 && traits.hold != GpuHold::kSlot) {
      return invalid_argument("pod {} on node {}: GPU {} chosen twice; devices must be distinct", key, node.name, g);
    }
    if (binpack::gpu_capacity_for(*this, n, g, pod, traits) < per_gpu[g]) {
      const GpuUsage& u = usage_[n].gpus[g];
      return {Code::kUnschedulable,
              fmt::format("pod {} on node {}: GPU {} cannot take it ({}{}, {} of {} MiB usable held)", key, node.name, g,
                          gpu_state_name(u.state), u.fenced ? ", fenced" : "", u.used.count(), usable(n, g).count())};
    }
  }
  return Status::ok();
}

Status ClusterState::reserve(const PodRequest& pod, std::size_t n, const GpuChoice& requested) {
  if (n >= nodes_.size()) return {Code::kNotFound, fmt::format("pod {}: node #{} does not exist", pod.key(), n)};
  if (Status held = check_held(pod, n, requested.gpus); !held.is_ok() || allocation(pod.key()) != nullptr) return held;
  // Node-level rules, then the exact GPUs asked for, all against the current state.
  const PodTraits traits = binpack::traits_of(pod, *this);
  Verdict verdict = binpack::check_node(*this, n, pod, traits, binpack::Detail::kFull);
  if (!verdict.fits()) {
    return {verdict.code, fmt::format("pod {} on node {}: {}", pod.key(), nodes_[n].name, verdict.text())};
  }
  if (Status st = check_gpus(pod, n, requested.gpus); !st.is_ok()) return st;
  apply(pod, n, requested.gpus, /*adopted=*/false);
  return Status::ok();
}

Status ClusterState::adopt(const PodRequest& original, std::size_t n, std::optional<std::vector<int>> devices) {
  if (n >= nodes_.size()) return {Code::kNotFound, fmt::format("pod {}: node #{} does not exist", original.key(), n)};
  PodRequest pod = original;
  // On a replica node a running nvidia.com/gpu pod holds slots, whatever its nodeSelector said.
  if (auto* whole = std::get_if<WholeGpus>(&pod.gpu)) {
    whole->shared_slot = nodes_[n].sharing == SharingKind::kReplicas;  // what it really holds there
  }
  const PodTraits traits = binpack::traits_of(pod, *this);
  std::vector<int> gpus;
  if (devices) {
    gpus = *devices;
  } else {  // no allocation annotation: the lowest-index GPUs that can take it
    for (std::size_t g = 0; g < nodes_[n].gpus.size() && static_cast<int>(gpus.size()) < traits.devices; ++g) {
      for (int k = binpack::gpu_capacity_for(*this, n, g, pod, traits); k > 0 && static_cast<int>(gpus.size()) < traits.devices; --k) {
        gpus.push_back(static_cast<int>(g));
      }
    }
  }
  if (Status held = check_held(pod, n, gpus); !held.is_ok() || allocation(pod.key()) != nullptr) return held;
  if (!devices && static_cast<int>(gpus.size()) < traits.devices) {
    Verdict v = binpack::check_node(*this, n, pod, traits, binpack::Detail::kFull);
    return {Code::kUnschedulable,
            fmt::format("pod {} on node {}: it names no GPUs (no gpus.devices annotation) and only {} of the {} it "
                        "needs can take it: {}",
                        pod.key(), nodes_[n].name, gpus.size(), traits.devices, v.text())};
  }
  if (Status st = check_gpus(pod, n, gpus); !st.is_ok()) return st;
  const NodeUsage& u = usage_[n];
  std::int64_t cpu_sum = 0;
  std::int64_t memory_sum = 0;
  if (__builtin_add_overflow(u.cpu.count(), pod.cpu.count(), &cpu_sum) ||
      __builtin_add_overflow(u.memory.count(), pod.memory.count(), &memory_sum)) {
    return invalid_argument("pod {} on node {}: its cpu or memory request overflows the node's count", pod.key(),
                            nodes_[n].name);
  }
  apply(pod, n, gpus, /*adopted=*/true);
  return Status::ok();
}

void ClusterState::fence(std::size_t n, const std::vector<int>& gpus) {
  for (int g : gpus) {
    if (g >= 0 && static_cast<std::size_t>(g) < usage_[n].gpus.size()) usage_[n].gpus[static_cast<std::size_t>(g)].fenced = true;
  }
  refresh(n);
}

Status ClusterState::check_held(const PodRequest& pod, std::size_t n, std::vector<int> gpus) const {
  const Allocation* held = allocation(pod.key());
  if (held == nullptr) return Status::ok();
  std::sort(gpus.begin(), gpus.end());
  if (held->node == n && held->choice.gpus == gpus) return Status::ok();
  return {Code::kAlreadyExists, fmt::format("pod {} is already placed on node {} (GPUs {})", pod.key(),
                                            nodes_[held->node].name, fmt::join(held->choice.gpus, ","))};
}

void ClusterState::apply(const PodRequest& pod, std::size_t n, const std::vector<int>& gpus, bool adopted) {
  const std::string key = pod.key();
  const PodTraits traits = binpack::traits_of(pod, *this);
  // Everything fits: apply. Nothing below can fail.
  Allocation a;
  a.pod = key;
  a.node = n;
  a.choice = binpack::make_choice(*this, n, pod, traits, gpus);
  a.adopted = adopted;
  a.cpu = pod.cpu;
  a.memory = pod.memory;
  a.extended = pod.extended;
  for (const auto& [name, amount] : pod.rdma) a.extended[name] = saturating_add(a.extended[name], amount);
  a.infiniband = pod.infiniband();
  a.preemptible = pod.preemptible;
  a.priority = pod.priority;
  a.queue = pod.queue;

  add_usage(a);
  allocations_.emplace(key, std::move(a));
  refresh(n);
}

void ClusterState::add_usage(const Allocation& a) {
  NodeUsage& u = usage_[a.node];
  u.cpu = MilliCpu(saturating_add(u.cpu.count(), a.cpu.count()));
  u.memory = Bytes(saturating_add(u.memory.count(), a.memory.count()));
  u.pods += 1;
  for (const auto& [name, amount] : a.extended) u.extended[name] = saturating_add(u.extended[name], amount);
  for (std::size_t k = 0; k < a.choice.gpus.size(); ++k) {
    GpuUsage& gpu = u.gpus[static_cast<std::size_t>(a.choice.gpus[k])];
    gpu.used += a.choice.memory[k];
    switch (a.choice.hold) {
      case GpuHold::kWhole:
        gpu.state = GpuState::kWhole;
        break;
      case GpuHold::kFraction:
        gpu.state = shared_state(a.choice.mode);
        if (a.choice.mode == ComputeMode::kSmSharing) gpu.compute += a.choice.compute[k];
        break;
      case GpuHold::kSlot:
        gpu.state = shared_state(a.choice.mode);
        gpu.compute += a.choice.compute[k];
        gpu.slots += 1;
        break;
      case GpuHold::kNone:
        break;
    }
    gpu.holders.push_back(a.pod);
  }
}

std::optional<Allocation> ClusterState::take(const std::string& pod_key) {
  auto it = allocations_.find(pod_key);
  if (it == allocations_.end()) return std::nullopt;
  Allocation a = it->second;
  release(pod_key);
  return a;
}

void ClusterState::restore(Allocation allocation) {
  const std::size_t node = allocation.node;
  add_usage(allocation);
  std::string key = allocation.pod;
  allocations_.emplace(std::move(key), std::move(allocation));
  refresh(node);
}

bool ClusterState::release(const std::string& pod_key) {
  auto it = allocations_.find(pod_key);
  if (it == allocations_.end()) return false;
  const Allocation& a = it->second;
  NodeUsage& u = usage_[a.node];
  u.cpu -= a.cpu;
  u.memory -= a.memory;
  u.pods -= 1;
  for (const auto& [name, amount] : a.extended) {
    if ((u.extended[name] -= amount) == 0) u.extended.erase(name);
  }
  for (std::size_t k = 0; k < a.choice.gpus.size(); ++k) {
    GpuUsage& gpu = u.gpus[static_cast<std::size_t>(a.choice.gpus[k])];
    gpu.used -= a.choice.memory[k];
    if (a.choice.hold == GpuHold::kSlot) {
      gpu.slots -= 1;
      gpu.compute -= a.choice.compute[k];
    } else if (a.choice.hold == GpuHold::kFraction && a.choice.mode == ComputeMode::kSmSharing) {
      gpu.compute -= a.choice.compute[k];
    }
    gpu.holders.erase(std::find(gpu.holders.begin(), gpu.holders.end(), pod_key));
    if (gpu.holders.empty()) {
      const bool fenced = gpu.fenced;
      gpu = GpuUsage{};
      gpu.fenced = fenced;
    }
  }
  const std::size_t node = a.node;
  allocations_.erase(it);
  refresh(node);
  return true;
}

}  // namespace fracpack
