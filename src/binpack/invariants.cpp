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

}  // namespace

std::string ClusterState::check_invariants() const {
  if (std::string broken = check_tables(*this, allocations_.size()); !broken.empty()) return broken;
  if (index_.size() != nodes_.size() || node_stamp_.size() != nodes_.size() || usage_.size() != nodes_.size()) {
    return "the index, stamps or usage do not cover every node";
  }
  // 1. Usage must equal the sum of the allocations, field by field.
  std::vector<NodeUsage> expected(nodes_.size());
  std::vector<bool> adopted(nodes_.size(), false);
  for (std::size_t i = 0; i < nodes_.size(); ++i) expected[i].gpus.resize(nodes_[i].gpus.size());
  for (const auto& [key, a] : allocations_) {
    NodeUsage& u = expected[a.node];
    if (a.adopted) adopted[a.node] = true;
    u.cpu += a.cpu;
    u.memory += a.memory;
    u.pods += 1;
    for (const auto& [name, amount] : a.extended) u.extended[name] += amount;
    for (int g : a.fenced) u.gpus[static_cast<std::size_t>(g)].fences += 1;
    if (a.holder == Holder::kConflict && !a.choice.gpus.empty()) return fmt::format("conflict {} holds GPUs", key);
    if (a.infiniband && nodes_[a.node].sharing == SharingKind::kReplicas) {
      return fmt::format("InfiniBand pod {} sits on replica node {}", key, nodes_[a.node].name);
    }
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
  }
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const NodeSpec& node = nodes_[i];
    const NodeUsage& have = usage_[i];
    NodeUsage& want = expected[i];
    if (have.cpu != want.cpu || have.memory != want.memory || have.pods != want.pods ||
        have.extended != want.extended) {
      return fmt::format("node {}: usage differs from the sum of its allocations", node.name);
    }
    // Running pods adopted as they are may overcommit a node; the ledger itself never does.
    const bool adopted_here = adopted[i];
    if (!adopted_here && (have.cpu > node.cpu || have.memory > node.memory || have.pods > node.pods)) {
      return fmt::format("node {}: cpu, memory or pods over allocatable", node.name);
    }
    for (const auto& [name, amount] : have.extended) {
      auto it = node.extended.find(name);
      if (!adopted_here && (it == node.extended.end() || amount > it->second)) {
        return fmt::format("node {}: {} over allocatable", node.name, name);
      }
    }
    for (std::size_t g = 0; g < node.gpus.size(); ++g) {
      const GpuUsage& u = have.gpus[g];
      std::vector<std::string> a = u.holders;
      std::vector<std::string> b = want.gpus[g].holders;
      std::sort(a.begin(), a.end());
      std::sort(b.begin(), b.end());
      if (u.used != want.gpus[g].used || u.compute != want.gpus[g].compute || u.slots != want.gpus[g].slots || a != b ||
          u.fences != want.gpus[g].fences) {
        return fmt::format("node {} GPU {}: usage differs from the sum of its allocations", node.name, g);
      }
      const std::string where = fmt::format("node {} GPU {} ({})", node.name, g, gpu_state_name(u.state));
      // 2. One state per GPU, and what each state allows (docs/placement.md rules 1–5 and 12).
      if (u.state == GpuState::kIdle && !u.holders.empty()) return where + ": idle but held";
      if (u.state != GpuState::kIdle && u.holders.empty()) return where + ": not idle but nobody holds it";
      if (u.state == GpuState::kWhole) {
        if (u.holders.size() != 1) return where + ": held whole by more than one pod";
        if (node.sharing == SharingKind::kReplicas) return where + ": whole GPU on a replica node";
      }
      for (const auto& holder : u.holders) {
        const Allocation& h = allocations_.at(holder);
        const bool whole = h.choice.hold == GpuHold::kWhole;
        if (whole != (u.state == GpuState::kWhole)) return where + ": whole and shared holders mixed";
        if (shared(u.state) && shared_state(h.choice.mode) != u.state) return where + ": compute modes mixed";
      }
      if (node.sharing == SharingKind::kReplicas) {
        if (u.slots > node.replica.replicas) return where + ": more slots held than replicas";
        continue;
      }
      if (shared(u.state) && u.used > usable(i, g)) {
        return fmt::format("{}: {} MiB held, only {} MiB usable", where, u.used.count(), usable(i, g).count());
      }
      if (u.compute > 100) return fmt::format("{}: compute {} > 100", where, u.compute);
    }
    // 3. The index must describe the node as it is.
    if (!(index_.leaf(i) == binpack::summarize(*this, i))) {
      return fmt::format("node {}: index summary is stale", node.name);
    }
  }
  return {};
}

}  // namespace fracpack
