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

}  // namespace

std::vector<std::int64_t> divide(std::int64_t total, const std::vector<ShareTerms>& queues, std::int64_t unit) {
  const std::size_t n = queues.size();
  std::vector<std::int64_t> fair(n, 0);
  std::int64_t left = std::max<std::int64_t>(0, total);
  // 1. Deserved: finite quotas first, so a `quota: -1` sibling never eats into another's
  //    guarantee; then the unlimited ones, from what is left.
  for (bool unlimited : {false, true}) {
    std::vector<std::size_t> group;
    Wide claimed = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if ((queues[i].deserved == kUnlimited) != unlimited) continue;
      const std::int64_t deserved = unlimited ? left : queues[i].deserved;
      fair[i] = std::max<std::int64_t>(0, std::min(deserved, requestable(queues[i])));
      claimed += fair[i];
      group.push_back(i);
    }
    if (claimed > left) {
      // The claims exceed what there is (children whose quotas add up past their parent's share):
      // each gets the same proportion of its claim, so the shares add up to exactly what is left.
      // KAI lets every queue keep its whole claim here; fracpack never hands out more than the
      // parent has.
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
      claimed = left;
    }
    left -= static_cast<std::int64_t>(claimed);
  }
  if (left <= 0) return fair;

  // Tie order: earlier creation, then name.
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (queues[a].created != queues[b].created) return queues[a].created < queues[b].created;
    return queues[a].name < queues[b].name;
  });
  std::map<std::int32_t, std::vector<std::size_t>, std::greater<>> bands;
  for (std::size_t i : order) bands[queues[i].priority].push_back(i);

  const auto wants = [&](std::size_t i) { return requestable(queues[i]) - fair[i]; };
  for (auto& [priority, band] : bands) {
    if (left <= 0) break;
    std::map<std::size_t, Leftover> leftovers;  // latest round's rounded-away part, per queue
    // 2. Rounds of weighted offers.
    while (left > 0) {
      Wide weights = 0;
      for (std::size_t i : band) {
        if (wants(i) > 0) weights += queues[i].weight;
      }
      if (weights == 0) break;
      const std::int64_t offered_total = left;
      bool another_round = false;
      for (std::size_t i : band) {
        if (left == 0) break;
        const std::int64_t want = wants(i);
        if (want <= 0 || queues[i].weight == 0) continue;
        const Wide offer_num = static_cast<Wide>(offered_total) * queues[i].weight;  // offer = offer_num / weights
        std::int64_t give = 0;
        if (static_cast<Wide>(want) * weights <= offer_num) {
          give = want;  // satisfied
          leftovers.erase(i);
          another_round = true;
        } else {
          give = static_cast<std::int64_t>(offer_num / weights / unit) * unit;
          const Wide rest = offer_num - static_cast<Wide>(give) * weights;
          if (rest > 0) leftovers[i] = Leftover{i, rest, weights};
          else leftovers.erase(i);
        }
        give = std::min(give, left);
        fair[i] += give;
        left -= give;
      }
      if (!another_round) break;
    }
    // 3. Rounded-away units, largest leftover first.
    std::vector<Leftover> rest;
    for (auto& [i, l] : leftovers) rest.push_back(l);
    std::stable_sort(rest.begin(), rest.end(), [&](const Leftover& a, const Leftover& b) {
      const Wide lhs = a.numerator * b.denominator;
      const Wide rhs = b.numerator * a.denominator;
      if (lhs != rhs) return lhs > rhs;
      return std::find(order.begin(), order.end(), a.queue) < std::find(order.begin(), order.end(), b.queue);
    });
    for (const Leftover& l : rest) {
      if (left <= 0) break;
      const std::int64_t give = std::min({unit, left, wants(l.queue)});
      if (give <= 0) continue;
      fair[l.queue] += give;
      left -= give;
    }
  }
  return fair;
}

}  // namespace fracpack::queues
