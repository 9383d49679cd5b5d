// ClusterState::check_invariants(): the ledger's rules of docs/placement.md (rules 1–6, 12 and the
// node resources of 13) re-derived from the allocations.
#include <algorithm>

#include <fmt/format.h>

#include "binpack/node_summary.hpp"
#include "fracpack/binpack/cluster_state.hpp"

namespace fracpack {
namespace {

bool shared(GpuState s) { return s == GpuState::kSharedTimeSlicing || s == GpuState::kSharedSmSharing; }

/// The node tables agree: names ↔ positions, order labels strictly increasing by name, the per-node
/// pod lists ↔ the allocations.
std::string check_tables(const ClusterState& state, std::size_t allocations) {
  std::size_t listed = 0;
  const auto order = state.nodes_in_name_order();
  if (order.size() != state.node_count()) return "the name order lists a different number of nodes";
  for (std::size_t k = 0; k < order.size(); ++k) {
    const std::size_t n = order[k];
    if (state.find_node(state.node(n).name) != n) return fmt::format("node {}: not found at its position", state.node(n).name);
    if (k > 0 && !(state.node(order[k - 1]).name < state.node(n).name && state.order_label(order[k - 1]) < state.order_label(n))) {
      return fmt::format("node {}: name order and order labels disagree", state.node(n).name);
    }
    for (const auto& key : state.pods_on(n)) {
      const Allocation* a = state.allocation(key);
      if (a == nullptr || a->node != n) return fmt::format("node {}: lists pod {}, which holds nothing there", state.node(n).name, key);
    }
    listed += state.pods_on(n).size();
  }
  if (listed != allocations) return "the per-node pod lists and the allocations differ in number";
  return {};
}

/// Adds one allocation's GPUs to `u`; a GPU held twice by a non-slot pod breaks rule 1.
std::string add_gpus(const std::string& key, const Allocation& a, NodeUsage& u) {
  std::vector<int> seen;
  for (std::size_t k = 0; k < a.choice.gpus.size(); ++k) {
    const int g = a.choice.gpus[k];
    if (a.choice.hold != GpuHold::kSlot && std::count(seen.begin(), seen.end(), g) > 0) {
      return fmt::format("pod {} holds GPU {} twice", key, g);
    }
    seen.push_back(g);
    GpuUsage& gpu = u.gpus[static_cast<std::size_t>(g)];
    gpu.used += a.choice.memory[k];
    if (a.choice.hold == GpuHold::kSlot || (a.choice.hold == GpuHold::kFraction && a.choice.mode == ComputeMode::kSmSharing)) {
      gpu.compute += a.choice.compute[k];
    }
    if (a.choice.hold == GpuHold::kSlot) gpu.slots += 1;
    gpu.holders.push_back(key);
  }
  return {};
}

/// What every node's usage must be: the sum of its allocations, field by field, and whether it
/// holds adopted pods. Returns the first broken rule met on the way.
struct Expected {
  std::vector<NodeUsage> usage;
  std::vector<bool> adopted;
};
std::string sum_allocations(const std::vector<NodeSpec>& nodes,
                            const std::unordered_map<std::string, Allocation>& allocations, Expected& out) {
  out.usage.assign(nodes.size(), NodeUsage{});
  out.adopted.assign(nodes.size(), false);
  for (std::size_t i = 0; i < nodes.size(); ++i) out.usage[i].gpus.resize(nodes[i].gpus.size());
  for (const auto& [key, a] : allocations) {
    NodeUsage& u = out.usage[a.node];
    if (a.adopted) out.adopted[a.node] = true;
    u.cpu += a.cpu;
    u.memory += a.memory;
    u.pods += 1;
    for (const auto& [name, amount] : a.extended) u.extended[name] += amount;
    for (int g : a.fenced) u.gpus[static_cast<std::size_t>(g)].fences += 1;
    if (a.holder == Holder::kConflict && !a.choice.gpus.empty()) return fmt::format("conflict {} holds GPUs", key);
    if (a.infiniband && nodes[a.node].sharing == SharingKind::kReplicas) {
      return fmt::format("InfiniBand pod {} sits on replica node {}", key, nodes[a.node].name);
    }
    if (std::string broken = add_gpus(key, a, u); !broken.empty()) return broken;
  }
  return {};
}

/// A node's cpu, memory, pods and extended resources: as summed, and within allocatable unless
/// running pods were adopted as they are (they may overcommit a node; the ledger itself never does).
std::string check_node_totals(const NodeSpec& node, const NodeUsage& have, const NodeUsage& want, bool adopted) {
  if (have.cpu != want.cpu || have.memory != want.memory || have.pods != want.pods || have.extended != want.extended) {
    return fmt::format("node {}: usage differs from the sum of its allocations", node.name);
  }
  if (!adopted && (have.cpu > node.cpu || have.memory > node.memory || have.pods > node.pods)) {
    return fmt::format("node {}: cpu, memory or pods over allocatable", node.name);
  }
  for (const auto& [name, amount] : have.extended) {
    auto it = node.extended.find(name);
    if (!adopted && (it == node.extended.end() || amount > it->second)) {
      return fmt::format("node {}: {} over allocatable", node.name, name);
    }
  }
  return {};
}

/// One GPU: as summed, one state, and what that state allows (docs/placement.md rules 1–5, 12).
std::string check_gpu(const ClusterState& state, std::size_t i, std::size_t g, const GpuUsage& want) {
  const NodeSpec& node = state.node(i);
  const GpuUsage& u = state.usage(i).gpus[g];
  std::vector<std::string> a = u.holders;
  std::vector<std::string> b = want.holders;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  if (u.used != want.used || u.compute != want.compute || u.slots != want.slots || a != b || u.fences != want.fences) {
    return fmt::format("node {} GPU {}: usage differs from the sum of its allocations", node.name, g);
  }
  const std::string where = fmt::format("node {} GPU {} ({})", node.name, g, gpu_state_name(u.state));
  if (u.state == GpuState::kIdle && !u.holders.empty()) return where + ": idle but held";
  if (u.state != GpuState::kIdle && u.holders.empty()) return where + ": not idle but nobody holds it";
  if (u.state == GpuState::kWhole) {
    if (u.holders.size() != 1) return where + ": held whole by more than one pod";
    if (node.sharing == SharingKind::kReplicas) return where + ": whole GPU on a replica node";
  }
  for (const auto& holder : u.holders) {
    const Allocation& h = *state.allocation(holder);
    const bool whole = h.choice.hold == GpuHold::kWhole;
    if (whole != (u.state == GpuState::kWhole)) return where + ": whole and shared holders mixed";
    if (shared(u.state) && shared_state(h.choice.mode) != u.state) return where + ": compute modes mixed";
  }
  if (node.sharing == SharingKind::kReplicas) {
    return u.slots > node.replica.replicas ? where + ": more slots held than replicas" : std::string();
  }
  if (shared(u.state) && u.used > state.usable(i, g)) {
    return fmt::format("{}: {} MiB held, only {} MiB usable", where, u.used.count(), state.usable(i, g).count());
  }
  if (u.compute > 100) return fmt::format("{}: compute {} > 100", where, u.compute);
  return {};
}

}  // namespace

std::string ClusterState::check_invariants() const {
  if (std::string broken = check_tables(*this, allocations_.size()); !broken.empty()) return broken;
  if (index_.size() != nodes_.size() || node_stamp_.size() != nodes_.size() || usage_.size() != nodes_.size()) {
    return "the index, stamps or usage do not cover every node";
  }
  // 1. Usage must equal the sum of the allocations, field by field.
  Expected expected;
  if (std::string broken = sum_allocations(nodes_, allocations_, expected); !broken.empty()) return broken;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const NodeUsage& want = expected.usage[i];
    if (std::string broken = check_node_totals(nodes_[i], usage_[i], want, expected.adopted[i]); !broken.empty()) {
      return broken;
    }
    // 2. One state per GPU, and what each state allows.
    for (std::size_t g = 0; g < nodes_[i].gpus.size(); ++g) {
      if (std::string broken = check_gpu(*this, i, g, want.gpus[g]); !broken.empty()) return broken;
    }
    // 3. The index must describe the node as it is.
    if (!(index_.leaf(i) == binpack::summarize(*this, i))) {
      return fmt::format("node {}: index summary is stale", nodes_[i].name);
    }
  }
  return {};
}

}  // namespace fracpack
