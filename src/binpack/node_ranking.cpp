#include "fracpack/binpack/node_ranking.hpp"

#include <limits>

namespace fracpack {

void NodeRanking::reset(std::size_t nodes) {
  base_ = 1;
  while (base_ < nodes) base_ *= 2;
  // A stamp no node carries: ClusterState hands out stamps counting up from 1.
  synced_.assign(nodes, std::numeric_limits<std::uint64_t>::max());
  slots_.assign(2 * base_, Slot{});
  fits_.assign(nodes, 0);
}

bool NodeRanking::before(const Slot& a, const Slot& b) {
  if (a.fits != b.fits) return a.fits;
  if (!a.fits) return false;
  if (a.key != b.key) return a.key < b.key;
  return a.node < b.node;
}

void NodeRanking::set(std::size_t n, const NodeKey& key) {
  Slot& s = slots_[base_ + n];
  if (fits_[n] != 0 && s.key == key) return;  // a change that kept the key (most do on a busy node)
  s.key = key;
  s.node = static_cast<std::uint32_t>(n);
  s.fits = true;
  fits_[n] = 1;
  update_path(base_ + n);
}

void NodeRanking::clear(std::size_t n) {
  if (fits_[n] == 0) return;
  fits_[n] = 0;
  slots_[base_ + n].fits = false;
  update_path(base_ + n);
}

void NodeRanking::update_path(std::size_t leaf) {
  for (std::size_t k = leaf / 2; k >= 1; k /= 2) {
    const Slot& left = slots_[2 * k];
    const Slot& right = slots_[2 * k + 1];
    slots_[k] = before(right, left) ? right : left;
  }
}

std::optional<std::size_t> NodeRanking::best() const {
  if (slots_.size() < 2 || !slots_[1].fits) return std::nullopt;
  return slots_[1].node;
}

}  // namespace fracpack
