// Dividing one resource among sibling queues, the way KAI's proportion plugin does it
// (pkg/scheduler/plugins/proportion/resource_division/resource_division.go), in exact integers.
//
// 1. Deserved first: each queue gets min(deserved, requestable), where requestable is its request
//    capped by its limit; finite quotas are served before unlimited ones (quota -1, "everything"),
//    which share what the finite quotas leave.
// 2. What is left is shared among queues that still want more, the highest priority band first.
//    In rounds, each unsatisfied queue is offered (left at the start of the round) × its
//    over-quota weight ÷ the band's total weight of unsatisfied queues. A queue that wants no more
//    than its offer takes what it wants; another takes its offer rounded down to whole units (KAI
//    gives "round numbers": whole GPUs). Rounds repeat while some queue took less than offered.
//    Weight 0 gets nothing over its deserved share.
// 3. The units rounded away are handed out one unit at a time, largest leftover first (then
//    earlier creation, then name), never beyond what a queue still wants.
// 4. Lower priority bands share what the higher bands left.
//
// Two differences from KAI, both deliberate: every tie is broken by creation time, then name
// (KAI iterates a Go map, so its order is random); and when the deserved claims alone exceed
// what there is to divide (children whose quotas add up past their parent's share), each queue
// gets the same proportion of its claim, so children never hold more than their parent (KAI lets
// each keep its whole claim).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fracpack::queues {

inline constexpr std::int64_t kUnlimited = -1;

/// One sibling queue's terms for one resource, all in the resource's unit (milli-GPU, milli-CPU,
/// bytes) except the weight.
struct ShareTerms {
  std::int64_t deserved = 0;       ///< quota, or kUnlimited
  std::int64_t limit = kUnlimited; ///< kUnlimited, or a cap (0 blocks the resource)
  std::int64_t weight = 0;         ///< over-quota weight in thousandths (1.0 = 1000)
  std::int64_t request = 0;        ///< what the queue (and its subtree) asks for
  std::int32_t priority = 100;
  std::int64_t created = 0;        ///< creation time, seconds since the epoch (tie-break)
  std::string_view name;           ///< last tie-break (the caller keeps the text alive)
};

/// Fair shares of `total` (same unit) among `queues`, in input order. `unit` is the granularity
/// of over-quota rounds (1000 for GPUs in milli-GPU: whole GPUs; 1 otherwise). Never gives a
/// queue more than its requestable amount; the sum never exceeds `total`.
std::vector<std::int64_t> divide(std::int64_t total, const std::vector<ShareTerms>& queues, std::int64_t unit);

/// What a queue may ask for: its request capped by its limit.
constexpr std::int64_t requestable(const ShareTerms& q) {
  return q.limit == kUnlimited ? q.request : (q.request < q.limit ? q.request : q.limit);
}

}  // namespace fracpack::queues
