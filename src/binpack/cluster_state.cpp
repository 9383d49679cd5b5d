#include "fracpack/binpack/cluster_state.hpp"

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

namespace {
/// Order labels: node i of create() gets (i + 1) · kLabelStep, so appended names and names between
/// two others find room without relabelling; labels stay below kLabelEnd.
constexpr std::int64_t kLabelStep = std::int64_t{1} << 32;
constexpr std::int64_t kLabelEnd = std::int64_t{1} << 62;
}  // namespace

Status ClusterState::validate_node(const NodeSpec& node) {
  if (node.name.empty()) return invalid_argument("node: the name is empty");
  for (std::size_t g = 0; g < node.gpus.size(); ++g) {
    if (node.gpus[g].index != static_cast<int>(g)) {
      return invalid_argument("node {}: GPU at position {} has index {}; indices must be 0..N-1 in order", node.name, g,
                              node.gpus[g].index);
    }
  }
  if (node.sharing == SharingKind::kReplicas && node.replica.replicas < 2) {
    return invalid_argument("node {}: replica sharing needs at least 2 replicas", node.name);
  }
  return Status::ok();
}

Result<ClusterState> ClusterState::create(std::vector<NodeSpec> nodes, PlacementConfig config) {
  ClusterState s;
  s.config_ = std::move(config);
  std::sort(nodes.begin(), nodes.end(), [](const NodeSpec& a, const NodeSpec& b) { return a.name < b.name; });
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (i > 0 && nodes[i].name == nodes[i - 1].name) {
      return invalid_argument("node {}: the name appears twice in the cluster", nodes[i].name);
    }
    if (Status st = validate_node(nodes[i]); !st.is_ok()) return st;
  }
  if (static_cast<std::int64_t>(nodes.size()) >= kLabelEnd / kLabelStep - 1) {
    return invalid_argument("cluster: {} nodes is more than fracpack can order", nodes.size());
  }
  s.nodes_ = std::move(nodes);
  s.usage_.resize(s.nodes_.size());
  s.pods_on_.resize(s.nodes_.size());
  for (std::size_t i = 0; i < s.nodes_.size(); ++i) {
    s.by_name_.emplace(s.nodes_[i].name, i);
    s.by_order_.emplace(s.nodes_[i].name, i);
    s.order_.push_back(static_cast<std::int64_t>(i + 1) * kLabelStep);
    s.usage_[i].gpus.resize(s.nodes_[i].gpus.size());
  }
  s.refresh_extremes();
  std::vector<NodeSummary> summaries;
  summaries.reserve(s.nodes_.size());
  for (std::size_t i = 0; i < s.nodes_.size(); ++i) summaries.push_back(binpack::summarize(s, i));
  s.index_ = NodeIndex(summaries);
  s.generation_ = ++g_last_stamp;
  s.node_stamp_.assign(s.nodes_.size(), s.generation_);  // a new ledger: nothing cached applies
  return s;
}

void ClusterState::refresh_extremes() {
  std::int64_t cpu = 1;
  std::int64_t gpu_milli = 1;
  MiB smallest{0};
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    cpu = std::max(cpu, nodes_[i].cpu.count());
    gpu_milli = std::max<std::int64_t>(gpu_milli, 1000 * static_cast<std::int64_t>(nodes_[i].gpus.size()));
    if (!binpack::takes_fractions(*this, i)) continue;
    for (std::size_t g = 0; g < nodes_[i].gpus.size(); ++g) {
      const MiB m = usable(i, g);
      if (m.count() <= 0) continue;  // takes no fraction: not a candidate size
      if (smallest.count() == 0 || m < smallest) smallest = m;
    }
  }
  if (cpu != max_node_cpu_ || gpu_milli != max_node_gpu_milli_ || smallest != min_usable_gpu_memory_ || traits_epoch_ == 0) {
    max_node_cpu_ = cpu;
    max_node_gpu_milli_ = gpu_milli;
    min_usable_gpu_memory_ = smallest;
    traits_epoch_ = ++g_last_stamp;
  }
}

void ClusterState::label(std::size_t n) {
  const std::string& name = nodes_[n].name;
  auto it = by_order_.find(name);
  const std::int64_t before = it == by_order_.begin() ? 0 : order_[std::prev(it)->second];
  const auto after_it = std::next(it);
  const std::int64_t after = after_it == by_order_.end() ? kLabelEnd : order_[after_it->second];
  if (after_it == by_order_.end() && before + kLabelStep < kLabelEnd) {
    order_[n] = before + kLabelStep;
  } else if (after - before >= 2) {
    order_[n] = before + (after - before) / 2;
  } else {  // no room left between the neighbours: spread every label again
    std::int64_t next = 0;
    const std::int64_t step = kLabelEnd / static_cast<std::int64_t>(by_order_.size() + 1);
    for (const auto& [_, position] : by_order_) order_[position] = next += step;
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      if (i != n) refresh(i);
    }
  }
}

std::vector<std::size_t> ClusterState::nodes_in_name_order() const {
  std::vector<std::size_t> out;
  out.reserve(by_order_.size());
  for (const auto& [_, position] : by_order_) out.push_back(position);
  return out;
}

Result<std::size_t> ClusterState::add_node(NodeSpec node) {
  if (Status st = validate_node(node); !st.is_ok()) return st;
  if (by_name_.contains(node.name)) return Status(Code::kAlreadyExists, fmt::format("node {} is already in the cluster", node.name));
  const std::size_t n = nodes_.size();
  by_name_.emplace(node.name, n);
  by_order_.emplace(node.name, n);
  usage_.emplace_back().gpus.resize(node.gpus.size());
  nodes_.push_back(std::move(node));
  pods_on_.emplace_back();
  order_.push_back(0);
  node_stamp_.push_back(0);
  label(n);
  generation_ = ++g_last_stamp;  // a new position: remembered name lists no longer apply
  // A new node can only raise the maxima and lower the minimum: no scan of the others.
  const NodeSpec& added = nodes_[n];
  std::int64_t cpu = std::max(max_node_cpu_, added.cpu.count());
  std::int64_t gpu_milli = std::max<std::int64_t>(max_node_gpu_milli_, 1000 * static_cast<std::int64_t>(added.gpus.size()));
  MiB smallest = min_usable_gpu_memory_;
  if (binpack::takes_fractions(*this, n)) {
    for (std::size_t g = 0; g < added.gpus.size(); ++g) {
      const MiB m = usable(n, g);
      if (m.count() > 0 && (smallest.count() == 0 || m < smallest)) smallest = m;
    }
  }
  if (cpu != max_node_cpu_ || gpu_milli != max_node_gpu_milli_ || smallest != min_usable_gpu_memory_) {
    max_node_cpu_ = cpu;
    max_node_gpu_milli_ = gpu_milli;
    min_usable_gpu_memory_ = smallest;
    traits_epoch_ = ++g_last_stamp;
  }
  index_.push_back(binpack::summarize(*this, n));
  refresh(n);
  return n;
}

std::vector<Allocation> ClusterState::take_all(std::size_t n) {
  std::vector<Allocation> out;
  out.reserve(pods_on_[n].size());
  for (const std::string& key : pods_on_[n]) {
    auto it = allocations_.find(key);
    out.push_back(std::move(it->second));
    allocations_.erase(it);
  }
  pods_on_[n].clear();
  std::sort(out.begin(), out.end(), [](const Allocation& a, const Allocation& b) { return a.seq < b.seq; });
  NodeUsage& u = usage_[n];
  u = NodeUsage{};
  u.gpus.resize(nodes_[n].gpus.size());
  return out;
}

Result<std::vector<Allocation>> ClusterState::update_node(std::size_t n, NodeSpec node) {
  if (Status st = validate_node(node); !st.is_ok()) return st;
  if (node.name != nodes_[n].name) {
    return invalid_argument("node {}: an update cannot rename it to {}", nodes_[n].name, node.name);
  }
  const NodeSpec& old = nodes_[n];
  const bool same_gpus = old.gpus == node.gpus && old.sharing == node.sharing && old.replica == node.replica &&
                         old.gpu_memory_known == node.gpu_memory_known;
  std::vector<Allocation> taken;
  if (!same_gpus) taken = take_all(n);
  if (node.cpu < usage_[n].cpu || node.memory < usage_[n].memory || node.pods < usage_[n].pods) {
    for (const std::string& key : pods_on_[n]) allocations_.find(key)->second.adopted = true;  // facts now, not our choices
  }
  nodes_[n] = std::move(node);
  if (!same_gpus) {  // nothing is held on the node now: its GPUs are the new ones, all idle
    usage_[n] = NodeUsage{};
    usage_[n].gpus.resize(nodes_[n].gpus.size());
  }
  refresh_extremes();
  refresh(n);
  return taken;
}

std::vector<Allocation> ClusterState::remove_node(std::size_t n) {
  std::vector<Allocation> taken = take_all(n);
  const std::size_t last = nodes_.size() - 1;
  by_name_.erase(nodes_[n].name);
  by_order_.erase(nodes_[n].name);
  if (n != last) {  // the last node moves into the freed position
    nodes_[n] = std::move(nodes_[last]);
    usage_[n] = std::move(usage_[last]);
    pods_on_[n] = std::move(pods_on_[last]);
    order_[n] = order_[last];
    by_name_.find(nodes_[n].name)->second = n;
    by_order_.find(nodes_[n].name)->second = n;
    for (const std::string& key : pods_on_[n]) allocations_.find(key)->second.node = n;
  }
  nodes_.pop_back();
  usage_.pop_back();
  pods_on_.pop_back();
  order_.pop_back();
  node_stamp_.pop_back();
  index_.pop_back();
  generation_ = ++g_last_stamp;
  ++version_;
  refresh_extremes();
  if (n != last) refresh(n);
  return taken;
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

Status ClusterState::hold_conflict(const std::string& pod_key, std::size_t n, const PodRequest* pod, const std::vector<int>& gpus) {
  if (n >= nodes_.size()) return {Code::kNotFound, fmt::format("pod {}: node #{} does not exist", pod_key, n)};
  if (allocation(pod_key) != nullptr) {
    return {Code::kAlreadyExists, fmt::format("pod {} already holds resources on node {}", pod_key, nodes_[allocation(pod_key)->node].name)};
  }
  Allocation a;
  a.pod = pod_key;
  a.node = n;
  a.holder = Holder::kConflict;
  a.adopted = true;
  a.preemptible = false;
  if (pod != nullptr) {
    a.cpu = pod->cpu;
    a.memory = pod->memory;
    a.extended = pod->extended;
    for (const auto& [name, amount] : pod->rdma) a.extended[name] = saturating_add(a.extended[name], amount);
    a.priority = pod->priority;
    a.queue = pod->queue;
    a.started = pod->started;
  }
  for (int g : gpus) {
    if (g >= 0 && static_cast<std::size_t>(g) < nodes_[n].gpus.size() && std::find(a.fenced.begin(), a.fenced.end(), g) == a.fenced.end()) {
      a.fenced.push_back(g);
    }
  }
  a.seq = ++next_seq_;
  add_usage(a);
  pods_on_[n].push_back(pod_key);
  allocations_.emplace(pod_key, std::move(a));
  refresh(n);
  return Status::ok();
}

bool ClusterState::set_fences(const std::string& pod_key, const std::vector<int>& gpus) {
  auto it = allocations_.find(pod_key);
  if (it == allocations_.end() || it->second.holder == Holder::kConflict) return false;
  Allocation& a = it->second;
  NodeUsage& u = usage_[a.node];
  for (int g : a.fenced) u.gpus[static_cast<std::size_t>(g)].fences -= 1;
  a.fenced.clear();
  for (int g : gpus) {
    const bool known = g >= 0 && static_cast<std::size_t>(g) < nodes_[a.node].gpus.size();
    const bool held = std::find(a.choice.gpus.begin(), a.choice.gpus.end(), g) != a.choice.gpus.end();
    if (known && !held && std::find(a.fenced.begin(), a.fenced.end(), g) == a.fenced.end()) a.fenced.push_back(g);
  }
  for (int g : a.fenced) u.gpus[static_cast<std::size_t>(g)].fences += 1;
  refresh(a.node);
  return true;
}

void ClusterState::set_holder(const std::string& pod_key, Holder holder) {
  if (auto it = allocations_.find(pod_key); it != allocations_.end()) it->second.holder = holder;
}

void ClusterState::set_job_terms(const std::string& pod_key, const std::string& queue, std::int32_t priority, bool preemptible) {
  auto it = allocations_.find(pod_key);
  if (it == allocations_.end()) return;
  it->second.queue = queue;
  it->second.priority = priority;
  it->second.preemptible = preemptible;
}

void ClusterState::set_started(const std::string& pod_key, std::int64_t started) {
  if (auto it = allocations_.find(pod_key); it != allocations_.end()) it->second.started = started;
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
                          gpu_state_name(u.state), u.fenced() ? ", fenced" : "", u.used.count(), usable(n, g).count())};
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
  a.started = pod.started;
  a.seq = ++next_seq_;

  add_usage(a);
  pods_on_[n].push_back(key);
  allocations_.emplace(key, std::move(a));
  refresh(n);
}

namespace {
/// Adds `amount` to `total` as far as it fits in 64 bits, and returns what was added: the
/// allocation keeps that, so taking it away again restores `total` exactly (a running pod may ask
/// for absurd amounts; the count must never wrap, nor drift when the pod goes).
std::int64_t add_within(std::int64_t& total, std::int64_t amount) {
  const std::int64_t added = amount > 0 ? std::min(amount, INT64_MAX - std::max<std::int64_t>(total, 0)) : amount;
  total += added;
  return added;
}
}  // namespace

void ClusterState::add_usage(Allocation& a) {
  NodeUsage& u = usage_[a.node];
  std::int64_t cpu = u.cpu.count();
  a.cpu = MilliCpu(add_within(cpu, a.cpu.count()));
  u.cpu = MilliCpu(cpu);
  std::int64_t memory = u.memory.count();
  a.memory = Bytes(add_within(memory, a.memory.count()));
  u.memory = Bytes(memory);
  u.pods += 1;
  for (auto& [name, amount] : a.extended) amount = add_within(u.extended[name], amount);
  for (int g : a.fenced) u.gpus[static_cast<std::size_t>(g)].fences += 1;
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
  pods_on_[node].push_back(allocation.pod);
  std::string key = allocation.pod;
  allocations_.emplace(std::move(key), std::move(allocation));
  refresh(node);
}

void ClusterState::remove_usage(const Allocation& a) {
  NodeUsage& u = usage_[a.node];
  u.cpu -= a.cpu;
  u.memory -= a.memory;
  u.pods -= 1;
  for (const auto& [name, amount] : a.extended) {
    if ((u.extended[name] -= amount) == 0) u.extended.erase(name);
  }
  for (int g : a.fenced) u.gpus[static_cast<std::size_t>(g)].fences -= 1;
  for (std::size_t k = 0; k < a.choice.gpus.size(); ++k) {
    GpuUsage& gpu = u.gpus[static_cast<std::size_t>(a.choice.gpus[k])];
    gpu.used -= a.choice.memory[k];
    if (a.choice.hold == GpuHold::kSlot) {
      gpu.slots -= 1;
      gpu.compute -= a.choice.compute[k];
    } else if (a.choice.hold == GpuHold::kFraction && a.choice.mode == ComputeMode::kSmSharing) {
      gpu.compute -= a.choice.compute[k];
    }
    gpu.holders.erase(std::find(gpu.holders.begin(), gpu.holders.end(), a.pod));
    if (gpu.holders.empty()) {
      const int fences = gpu.fences;
      gpu = GpuUsage{};
      gpu.fences = fences;
    }
  }
}

bool ClusterState::release(const std::string& pod_key) {
  auto it = allocations_.find(pod_key);
  if (it == allocations_.end()) return false;
  const std::size_t node = it->second.node;
  remove_usage(it->second);
  auto& here = pods_on_[node];
  here.erase(std::find(here.begin(), here.end(), pod_key));
  allocations_.erase(it);
  refresh(node);
  return true;
}

}  // namespace fracpack
