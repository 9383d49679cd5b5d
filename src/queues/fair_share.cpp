#include "fracpack/queues/fair_share.hpp"

#include <algorithm>
#include <map>
#include <numeric>

namespace fracpack::queues {
namespace {

__extension__ using Wide = __int128;

/// A rounded-away leftover: `numerator` ÷ the round's weight sum, compared within one round.
struct Leftover {
  std::size_t queue;
  Wide numerator;
  Wide denominator;
};

/// One division in progress: each queue's share so far and what is still to give.
struct Division {
  const std::vector<ShareTerms>& queues;
  std::int64_t unit;
  std::vector<std::int64_t> fair;
  std::int64_t left;

  std::int64_t wants(std::size_t i) const { return requestable(queues[i]) - fair[i]; }
  void give(std::size_t i, std::int64_t amount) {
    fair[i] += amount;
    left -= amount;
  }
};

/// Claims beyond what is left (children whose quotas add up past their parent's share): each
/// gets the same proportion of its claim, largest remainders rounded up, so the shares add up to
/// exactly `left`. KAI lets every queue keep its whole claim here; fracpack never hands out more
/// than the parent has.
void scale_claims(const std::vector<std::size_t>& group, Wide claimed, std::int64_t left,
                  std::vector<std::int64_t>& fair) {
  std::vector<std::pair<Wide, std::size_t>> remainders;
  std::int64_t given = 0;
  for (std::size_t i : group) {
    const Wide scaled = static_cast<Wide>(fair[i]) * left;
    fair[i] = static_cast<std::int64_t>(scaled / claimed);
    given += fair[i];
    remainders.emplace_back(scaled % claimed, i);
  }
  std::stable_sort(remainders.begin(), remainders.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::size_t k = 0; given < left && k < remainders.size(); ++k, ++given) ++fair[remainders[k].second];
}

/// Step 1, deserved: finite quotas first, so a `quota: -1` sibling never eats into another's
/// guarantee; then the unlimited ones, from what is left.
void give_deserved(Division& d) {
  for (bool unlimited : {false, true}) {
    std::vector<std::size_t> group;
    Wide claimed = 0;
    for (std::size_t i = 0; i < d.queues.size(); ++i) {
      if ((d.queues[i].deserved == kUnlimited) != unlimited) continue;
      const std::int64_t deserved = unlimited ? d.left : d.queues[i].deserved;
      d.fair[i] = std::max<std::int64_t>(0, std::min(deserved, requestable(d.queues[i])));
      claimed += d.fair[i];
      group.push_back(i);
    }
    if (claimed > d.left) {
      scale_claims(group, claimed, d.left, d.fair);
      claimed = d.left;
    }
    d.left -= static_cast<std::int64_t>(claimed);
  }
}

/// Step 2, rounds of weighted offers within one priority band: each queue that still wants is
/// offered its weight's part of what is left, in whole units; a round that satisfies someone
/// frees the rest for another. Returns each queue's rounded-away part from its latest round.
std::map<std::size_t, Leftover> offer_rounds(Division& d, const std::vector<std::size_t>& band) {
  std::map<std::size_t, Leftover> leftovers;
  while (d.left > 0) {
    Wide weights = 0;
    for (std::size_t i : band) {
      if (d.wants(i) > 0) weights += d.queues[i].weight;
    }
    if (weights == 0) break;
    const std::int64_t offered_total = d.left;
    bool another_round = false;
    for (std::size_t i : band) {
      if (d.left == 0) break;
      const std::int64_t want = d.wants(i);
      if (want <= 0 || d.queues[i].weight == 0) continue;
      const Wide offer_num = static_cast<Wide>(offered_total) * d.queues[i].weight;  // offer = offer_num / weights
      std::int64_t give = 0;
      if (static_cast<Wide>(want) * weights <= offer_num) {
        give = want;  // satisfied
        leftovers.erase(i);
        another_round = true;
      } else {
        give = static_cast<std::int64_t>(offer_num / weights / d.unit) * d.unit;
        const Wide rest = offer_num - static_cast<Wide>(give) * weights;
        if (rest > 0) leftovers[i] = Leftover{i, rest, weights};
        else leftovers.erase(i);
      }
      d.give(i, std::min(give, d.left));
    }
    if (!another_round) break;
  }
  return leftovers;
}

/// Step 3, the rounded-away units: one unit each, largest leftover first, ties in `order`.
void give_rounded_away(Division& d, const std::map<std::size_t, Leftover>& leftovers,
                       const std::vector<std::size_t>& order) {
  std::vector<Leftover> rest;
  for (const auto& [i, l] : leftovers) rest.push_back(l);
  std::stable_sort(rest.begin(), rest.end(), [&](const Leftover& a, const Leftover& b) {
    const Wide lhs = a.numerator * b.denominator;
    const Wide rhs = b.numerator * a.denominator;
    if (lhs != rhs) return lhs > rhs;
    return std::find(order.begin(), order.end(), a.queue) < std::find(order.begin(), order.end(), b.queue);
  });
  for (const Leftover& l : rest) {
    if (d.left <= 0) break;
    const std::int64_t give = std::min({d.unit, d.left, d.wants(l.queue)});
    if (give > 0) d.give(l.queue, give);
  }
}

/// Tie order: earlier creation, then name.
std::vector<std::size_t> tie_order(const std::vector<ShareTerms>& queues) {
  std::vector<std::size_t> order(queues.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (queues[a].created != queues[b].created) return queues[a].created < queues[b].created;
    return queues[a].name < queues[b].name;
  });
  return order;
}

}  // namespace

std::vector<std::int64_t> divide(std::int64_t total, const std::vector<ShareTerms>& queues, std::int64_t unit) {
  Division d{queues, unit, std::vector<std::int64_t>(queues.size(), 0), std::max<std::int64_t>(0, total)};
  give_deserved(d);
  if (d.left <= 0) return d.fair;
  const std::vector<std::size_t> order = tie_order(queues);
  std::map<std::int32_t, std::vector<std::size_t>, std::greater<>> bands;
  for (std::size_t i : order) bands[queues[i].priority].push_back(i);
  for (const auto& [priority, band] : bands) {
    if (d.left <= 0) break;
    give_rounded_away(d, offer_rounds(d, band), order);
  }
  return d.fair;
}

}  // namespace fracpack::queues
