#include "fracpack/binpack/node_index.hpp"

#include <algorithm>

namespace fracpack {
namespace {

using Field = std::int64_t NodeSummary::*;
constexpr Field kFields[] = {
    &NodeSummary::position,     &NodeSummary::free_cpu,       &NodeSummary::free_memory,
    &NodeSummary::free_pods,    &NodeSummary::idle_gpus,      &NodeSummary::free_slots,
    &NodeSummary::max_idle_free, &NodeSummary::free_milli,    &NodeSummary::free_ratio_ppm,
    &NodeSummary::cpu_ratio_ppm, &NodeSummary::takes_whole,   &NodeSummary::takes_fraction,
    &NodeSummary::takes_slots,  &NodeSummary::usable,
};

}  // namespace

SummaryRange SummaryRange::merge(const SummaryRange& a, const SummaryRange& b) {
  SummaryRange out;
  for (Field f : kFields) {
    out.lo.*f = std::min(a.lo.*f, b.lo.*f);
    out.hi.*f = std::max(a.hi.*f, b.hi.*f);
  }
  auto merge_array = [](auto& low, auto& high, const auto& alo, const auto& blo, const auto& ahi, const auto& bhi) {
    for (std::size_t i = 0; i < low.size(); ++i) {
      low[i] = std::min(alo[i], blo[i]);
      high[i] = std::max(ahi[i], bhi[i]);
    }
  };
  merge_array(out.lo.free_if_idle, out.hi.free_if_idle, a.lo.free_if_idle, b.lo.free_if_idle, a.hi.free_if_idle,
              b.hi.free_if_idle);
  merge_array(out.lo.free_if_idle_memory, out.hi.free_if_idle_memory, a.lo.free_if_idle_memory,
              b.lo.free_if_idle_memory, a.hi.free_if_idle_memory, b.hi.free_if_idle_memory);
  for (std::size_t m = 0; m < 2; ++m) {
    merge_array(out.lo.free_if_shared_memory[m], out.hi.free_if_shared_memory[m], a.lo.free_if_shared_memory[m],
                b.lo.free_if_shared_memory[m], a.hi.free_if_shared_memory[m], b.hi.free_if_shared_memory[m]);
  }
  for (std::size_t m = 0; m < out.lo.max_shared_free.size(); ++m) {
    out.lo.max_shared_free[m] = std::min(a.lo.max_shared_free[m], b.lo.max_shared_free[m]);
    out.hi.max_shared_free[m] = std::max(a.hi.max_shared_free[m], b.hi.max_shared_free[m]);
  }
  return out;
}

NodeIndex::NodeIndex(const std::vector<NodeSummary>& leaves) : size_(leaves.size()) {
  while (base_ < size_) base_ *= 2;
  ranges_.resize(2 * base_);
  count_.assign(2 * base_, 0);
  for (std::size_t i = 0; i < size_; ++i) {
    ranges_[base_ + i] = SummaryRange::of(leaves[i]);
    count_[base_ + i] = 1;
  }
  for (std::size_t k = base_ - 1; k >= 1; --k) {
    count_[k] = count_[2 * k] + count_[2 * k + 1];
    if (count_[2 * k + 1] == 0) {
      ranges_[k] = ranges_[2 * k];
    } else {
      ranges_[k] = SummaryRange::merge(ranges_[2 * k], ranges_[2 * k + 1]);
    }
  }
}

void NodeIndex::update(std::size_t i, const NodeSummary& summary) {
  ranges_[base_ + i] = SummaryRange::of(summary);
  update_path(base_ + i);
}

void NodeIndex::update_path(std::size_t k) {
  for (k /= 2; k >= 1; k /= 2) {
    count_[k] = count_[2 * k] + count_[2 * k + 1];
    ranges_[k] = count_[2 * k + 1] == 0 ? ranges_[2 * k]
                                         : SummaryRange::merge(ranges_[2 * k], ranges_[2 * k + 1]);
  }
}

void NodeIndex::push_back(const NodeSummary& summary) {
  if (size_ == base_ || ranges_.empty()) {  // full: rebuild with twice the room
    std::vector<NodeSummary> leaves;
    leaves.reserve(size_ + 1);
    for (std::size_t i = 0; i < size_; ++i) leaves.push_back(leaf(i));
    leaves.push_back(summary);
    *this = NodeIndex(leaves);
    return;
  }
  const std::size_t k = base_ + size_++;
  ranges_[k] = SummaryRange::of(summary);
  count_[k] = 1;
  update_path(k);
}

void NodeIndex::pop_back() {
  if (size_ == 0) return;
  const std::size_t k = base_ + --size_;
  count_[k] = 0;
  ranges_[k] = SummaryRange{};
  update_path(k);
}

}  // namespace fracpack
