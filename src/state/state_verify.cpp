// SchedulingState::verify(): the state compared with one built from scratch.
#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

#include "fracpack/queues/scheduling_state.hpp"

namespace fracpack {

SchedulingState::DebugCheck::~DebugCheck() {
#ifndef NDEBUG
  if (const std::string broken = s_.check_invariants(); !broken.empty()) {
    std::fprintf(stderr, "fracpack: scheduling state invariant broken: %s\n", broken.c_str());
    std::abort();
  }
#endif
}

std::string SchedulingState::verify() const {
  if (std::string broken = check_invariants(); !broken.empty()) return broken;
  SchedulingState fresh(options_);
  ObjectChange all;
  for (std::size_t n = 0; n < cluster_.node_count(); ++n) all.nodes.push_back(cluster_.node(n));
  for (const auto& [_, q] : queue_specs_) all.queues.push_back(q);
  for (const auto& [_, g] : groups_) all.groups.push_back(g);
  fresh.classes_ = classes_;
  if (Status st = fresh.validate(all); !st.is_ok()) return fmt::format("the objects do not validate again: {}", st.message());
  (void)fresh.apply(all);
  // Who wins a GPU two running pods claim is decided by the order they were held in: replay the
  // holders in that order, then the rest.
  std::vector<std::string> order;  // the records (pod_keys() also names Succeeded pods, which hold none)
  order.reserve(pods_.size());
  for (const auto& [key, _] : pods_) order.push_back(key);
  std::sort(order.begin(), order.end(), [&](const std::string& a, const std::string& b) {
    const Allocation* x = cluster_.allocation(a);
    const Allocation* y = cluster_.allocation(b);
    if ((x == nullptr) != (y == nullptr)) return x != nullptr;
    return x != nullptr ? x->seq < y->seq : a < b;
  });
  for (const auto& key : order) {
    const PodRecord& r = pods_.at(key);
    if (r.unreadable) {
      (void)fresh.observe_unreadable(key, r.raw.bound->node, r.raw.bound->devices, r.unreadable_reason);
    } else {
      (void)fresh.observe(r.raw);
      if (!r.claim_fence.empty()) (void)fresh.fence_claim(key, r.claim_fence);
    }
  }
  for (const auto& key : order) {
    const PodRecord& a = pods_.at(key);
    const PodRecord& b = fresh.pods_.at(key);
    if (a.standing != b.standing) {
      return fmt::format("pod {}: {} here, {} when rebuilt", key, standing_name(a.standing), standing_name(b.standing));
    }
    const Allocation* x = cluster_.allocation(key);
    const Allocation* y = fresh.cluster_.allocation(key);
    if (x != nullptr && cluster_.node(x->node).name != fresh.cluster_.node(y->node).name) {
      return fmt::format("pod {}: on node {} here, {} when rebuilt", key, cluster_.node(x->node).name, fresh.cluster_.node(y->node).name);
    }
    // A running pod that names no devices holds GPUs the ledger chose when it adopted it: which
    // ones depends on what was free then, how many does not.
    const bool guessed = !a.unreadable && a.raw.bound && a.raw.bound->devices.empty();
    if (x != nullptr && guessed && (x->choice.gpus.size() != y->choice.gpus.size() || x->fenced.size() != y->fenced.size())) {
      return fmt::format("pod {}: {} GPUs here, {} when rebuilt", key, x->choice.gpus.size(), y->choice.gpus.size());
    }
    if (x != nullptr && !guessed && (x->choice.gpus != y->choice.gpus || x->fenced != y->fenced)) {
      return fmt::format("pod {}: GPUs {} here, {} when rebuilt", key, fmt::join(x->choice.gpus, ","), fmt::join(y->choice.gpus, ","));
    }
    if (x != nullptr && x->started != y->started) {  // min-runtime protection counts from it
      return fmt::format("pod {}: started at {} here, {} when rebuilt", key, x->started.value_or(-1), y->started.value_or(-1));
    }
  }
  if (!(total() == fresh.total())) return "what queues divide differs from a rebuild";
  if ((tree_ == nullptr) != (fresh.tree_ == nullptr)) return "the queue tree differs from a rebuild";
  if (tree_ != nullptr) {
    for (std::size_t q = 0; q < tree_->size(); ++q) {
      const std::string& name = tree_->queue(q).name;
      const std::size_t fq = *fresh.tree_->find(name);
      if (!(book()->allocated(q) == fresh.book()->allocated(fq))) return fmt::format("queue {}: allocation differs from a rebuild", name);
      if (!(book()->fair_share(q) == fresh.book()->fair_share(fq))) return fmt::format("queue {}: fair share differs from a rebuild", name);
    }
  }
  return {};
}

}  // namespace fracpack
