// KAI's proportion plugin, reclaim half (reclaimable.hpp): reclaimable.go, filter_victims.go and
// strategies/strategies.go.
#include "fracpack/queues/reclaimable.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <map>

namespace fracpack::queues {
namespace {

using Involved = std::array<bool, kResourceCount>;  ///< the resources a release or a request names

/// KAI compareQuantities: -1 (unlimited) is above every finite amount.
bool at_most(std::int64_t amount, std::int64_t bound) {
  if (bound == kUnlimited) return true;
  if (amount == kUnlimited) return false;
  return amount <= bound;
}

bool all_at_most(const Amounts& amount, const Amounts& bound) {
  return std::all_of(kResources.begin(), kResources.end(), [&](Resource r) { return at_most(amount[r], bound[r]); });
}

Amounts allocatable(const QueueBook& book, std::size_t q) {
  Amounts out;
  for (Resource r : kResources) out[r] = book.allocatable(q, r);
  return out;
}

Involved involved(const Amounts& amount) {
  Involved out{};
  for (Resource r : kResources) out[static_cast<std::size_t>(r)] = amount[r] > 0;
  return out;
}

/// KAI getLeveledQueues: the reclaimer's and the victim's queues at the level where their
/// branches meet (the two top-level queues when they share no ancestor).
std::pair<std::size_t, std::size_t> leveled(const QueueTree& tree, std::size_t reclaimer, std::size_t victim) {
  const auto& mine = tree.path_to_root(reclaimer);  // leaf first
  const auto& theirs = tree.path_to_root(victim);
  const std::size_t common = std::min(mine.size(), theirs.size());
  std::size_t i = 0;
  for (; i < common; ++i) {
    if (mine[mine.size() - 1 - i] != theirs[theirs.size() - 1 - i]) break;
  }
  if (i == common) i = common - 1;  // one path holds the other: the last queue they share
  return {mine[mine.size() - 1 - i], theirs[theirs.size() - 1 - i]};
}

/// KAI FitsMaintainFairShare: the queue, holding `remaining`, is over its allocatable share.
bool keeps_fair_share(const QueueBook& book, std::size_t q, const Amounts& remaining) {
  return !all_at_most(remaining, allocatable(book, q));
}

/// KAI AllocatedPlusResourcesLessEqualDeserved.
bool within_deserved(const QueueBook& book, std::size_t q, const Amounts& extra) {
  return all_at_most(book.allocated(q) + extra, book.deserved(q));
}

/// KAI FitsReclaimStrategy: MaintainFairShareStrategy, else GuaranteeDeservedQuotaStrategy.
bool fits_strategy(const QueueBook& book, const Reclaimer& reclaimer, std::size_t reclaimer_level,
                   std::size_t victim_level, const Amounts& remaining) {
  if (keeps_fair_share(book, victim_level, remaining)) return true;
  return within_deserved(book, reclaimer_level, reclaimer.request) && !all_at_most(remaining, book.deserved(victim_level));
}

/// KAI fairShareSaturationRatio.
double saturation(std::int64_t allocated, std::int64_t fair_share) {
  if (fair_share == 0) return allocated > 0 ? std::numeric_limits<double>::infinity() : 0.0;
  return static_cast<double>(allocated) / static_cast<double>(fair_share);
}

/// KAI isFairShareSaturationLowerPerResource, for the resources `names`.
bool saturation_lower(const Involved& names, const Amounts& mine, const Amounts& my_share, const Amounts& theirs,
                      const Amounts& their_share, double multiplier) {
  for (Resource r : kResources) {
    if (!names[static_cast<std::size_t>(r)]) continue;
    const double ratio = saturation(mine[r], my_share[r]);
    if (ratio > 1 && their_share[r] > 0 && ratio * multiplier >= saturation(theirs[r], their_share[r])) return false;
  }
  return true;
}

/// What the victims leave each queue they touch (leaf and ancestors), and which resources.
struct Remaining {
  std::map<std::size_t, Amounts> left;
  std::map<std::size_t, Involved> names;
  std::vector<std::size_t> order;  ///< queues in order of first touch (KAI: a Go map)

  Amounts& at(const QueueBook& book, std::size_t q) {
    auto [it, fresh] = left.try_emplace(q, book.allocated(q));
    if (fresh) order.push_back(q);
    return it->second;
  }
  void name(std::size_t q, const Involved& n) {
    Involved& mine = names[q];
    for (std::size_t i = 0; i < n.size(); ++i) mine[i] = mine[i] || n[i];
  }
};

/// KAI reclaimingQueuesRemainWithinBoundaries.
bool within_boundaries(const QueueBook& book, const Reclaimer& reclaimer, Remaining& rest, const ReclaimTerms& terms) {
  const QueueTree& tree = book.tree();
  const Involved asked = involved(reclaimer.request);
  for (std::size_t q : tree.path_to_root(reclaimer.queue)) {
    const auto found = rest.left.find(q);
    const Amounts mine = (found != rest.left.end() ? found->second : book.allocated(q)) + reclaimer.request;
    for (std::size_t sibling : rest.order) {
      if (sibling == q || tree.parent(sibling) != tree.parent(q)) continue;
      Involved names = rest.names[sibling];
      for (std::size_t i = 0; i < names.size(); ++i) names[i] = names[i] || asked[i];
      if (!saturation_lower(names, mine, book.fair_share(q), rest.left.at(sibling), book.fair_share(sibling),
                            terms.saturation_multiplier)) {
        return false;
      }
    }
    if (!reclaimer.preemptible && !all_at_most(book.allocated_non_preemptible(q) + reclaimer.request, book.deserved(q))) {
      return false;
    }
  }
  return true;
}

}  // namespace

bool can_reclaim(const QueueBook& book, const Reclaimer& reclaimer) {
  if (!all_at_most(book.allocated(reclaimer.queue) + reclaimer.request, book.fair_share(reclaimer.queue))) return false;
  return reclaimer.preemptible ||
         all_at_most(book.allocated_non_preemptible(reclaimer.queue) + reclaimer.request, book.deserved(reclaimer.queue));
}

bool may_take_from(const QueueBook& book, const Reclaimer& reclaimer, std::size_t victim_queue) {
  const auto [mine, theirs] = leveled(book.tree(), reclaimer.queue, victim_queue);
  if (!within_deserved(book, mine, reclaimer.request)) return keeps_fair_share(book, theirs, book.allocated(theirs));
  // KAI canBeDeservedQuotaReclaimCandidate, over the resources the job asks for.
  bool under = false;
  for (Resource r : kResources) {
    const std::int64_t quota = book.deserved(theirs)[r];
    if (reclaimer.request[r] <= 0 || quota == kUnlimited) continue;
    if (book.allocated(theirs)[r] > quota) return true;
    if (book.allocated(theirs)[r] < quota) under = true;
  }
  return !under;
}

bool reclaimable(const QueueBook& book, const Reclaimer& reclaimer, const std::vector<Release>& releases,
                 const ReclaimTerms& terms) {
  const QueueTree& tree = book.tree();
  // KAI groups the releases by queue: a queue's are tested together, in victim order.
  std::vector<const Release*> grouped;
  for (const Release& release : releases) {
    const auto same = std::find_if(grouped.rbegin(), grouped.rend(), [&](const Release* r) { return r->queue == release.queue; });
    grouped.insert(same == grouped.rend() ? grouped.end() : same.base(), &release);
  }
  Remaining rest;
  for (const Release* r : grouped) {
    const Release& release = *r;
    const auto [mine, theirs] = leveled(tree, reclaimer.queue, release.queue);
    const Involved names = involved(release.amount);
    rest.name(release.queue, names);
    if (!fits_strategy(book, reclaimer, mine, theirs, rest.at(book, theirs))) return false;
    for (std::size_t q : tree.path_to_root(release.queue)) {
      rest.at(book, q) -= release.amount;
      rest.name(q, names);
    }
  }
  return within_boundaries(book, reclaimer, rest, terms);
}

}  // namespace fracpack::queues
