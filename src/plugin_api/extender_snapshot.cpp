// What the extender core reports: the ledger snapshot (gRPC Snapshot, /snapshot) and the gauges
// /metrics reads.
#include <algorithm>
#include <mutex>


#include "plugin_api/extender_impl.hpp"

namespace fracpack::api {
namespace {

/// A queue amount's GPUs (the book counts thousandths).
double gpus(const queues::Amounts& amounts) { return static_cast<double>(amounts[queues::Resource::kGpu]) / 1000.0; }

}  // namespace

LedgerSnapshot ExtenderImpl::snapshot() const {
  std::shared_lock lock(mu_);
  const ClusterState& cluster = state_.cluster();
  LedgerSnapshot out;
  out.nodes.reserve(cluster.node_count());
  for (std::size_t n : cluster.nodes_in_name_order()) {
    LedgerSnapshot::Node& node = out.nodes.emplace_back();
    node.name = cluster.node(n).name;
    for (std::size_t g = 0; g < cluster.node(n).gpus.size(); ++g) {
      const GpuUsage& u = cluster.usage(n).gpus[g];
      LedgerSnapshot::Gpu& gpu =
          node.gpus.emplace_back(LedgerSnapshot::Gpu{static_cast<int>(g), u.state, cluster.node(n).gpus[g].memory, u.used, u.fenced(), u.holders, {}, {}});
      if (auto e = book_ ? book_->at(node.name, static_cast<int>(g)) : std::nullopt; e && !e->pod.empty()) {
        gpu.reservation = book_->key(e->pod);
        gpu.device = e->device;
      }
    }
  }
  std::vector<const Allocation*> held;
  for (std::size_t n = 0; n < cluster.node_count(); ++n) {
    for (const auto& key : cluster.pods_on(n)) held.push_back(cluster.allocation(key));
  }
  std::sort(held.begin(), held.end(), [](const Allocation* a, const Allocation* b) { return a->seq < b->seq; });
  for (const Allocation* a : held) {
    const PodRecord& record = *state_.pod(a->pod);
    LedgerSnapshot::Binding& b = out.bindings.emplace_back();
    b.pod = a->pod;
    b.uid = record.raw.uid;
    b.node = cluster.node(a->node).name;
    // The ledger's devices: a running pod adopted without a devices annotation got its GPUs then.
    b.gpus = a->holder == Holder::kConflict ? a->fenced : a->choice.gpus;
    b.standing = std::string(standing_name(record.standing));
    b.note = record.note;
    b.ours = record.ours;
    b.gpus_guessed = record.standing == PodStanding::kBound && !record.raw.cpu_only() && record.raw.bound->devices.empty();
    b.assumed = assumed_.contains(a->pod);
  }
  if (const queues::QueueBook* book = state_.book()) {
    for (std::size_t q : state_.tree()->top_down()) {
      out.queues.push_back({state_.tree()->queue(q).name, gpus(book->allocated(q)), gpus(book->allocated_non_preemptible(q)),
                            gpus(book->fair_share(q))});
    }
  }
  return out;
}

LedgerGauges ExtenderImpl::gauges() const {
  std::shared_lock lock(mu_);
  const ClusterState& cluster = state_.cluster();
  LedgerGauges g;
  for (GpuState s : {GpuState::kIdle, GpuState::kWhole, GpuState::kSharedTimeSlicing, GpuState::kSharedSmSharing}) {
    g.gpus_by_state[std::string(gpu_state_name(s))] = 0;
  }
  for (std::size_t n = 0; n < cluster.node_count(); ++n) {
    for (const auto& u : cluster.usage(n).gpus) ++g.gpus_by_state[std::string(gpu_state_name(u.state))];
  }
  if (const queues::QueueBook* book = state_.book()) {
    for (std::size_t q : state_.tree()->top_down()) {
      g.queues.push_back({state_.tree()->queue(q).name, gpus(book->allocated(q)), gpus(book->fair_share(q))});
    }
  }
  for (std::size_t n = 0; n < cluster.node_count(); ++n) {
    for (const auto& key : cluster.pods_on(n)) {
      (cluster.allocation(key)->holder == Holder::kConflict ? g.pods_conflicting : g.pods_bound) += 1;
    }
  }
  g.pods_pending = state_.pending_count();
  g.binds_assumed = assumed_.size();
  g.pods_claim_edited = claim_edits_.size();
  g.claim_edits_by_writer = claim_edit_writers_;
  g.synced = synced_;
  return g;
}

}  // namespace fracpack::api
