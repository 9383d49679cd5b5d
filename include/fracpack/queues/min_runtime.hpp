// Min-runtime protection: a job that started less than its queue's min runtime ago is not a
// victim (docs/queues.md rule 13).
//
// Following KAI's minruntime plugin (pkg/scheduler/plugins/minruntime: minruntime.go,
// resolver.go):
//   preempt   the victim's queue's spec.preemptMinRuntime; unset: its parent's, and so on up to a
//             top-level queue; none set: the default (KAI's defaultPreemptMinRuntime, 0).
//   reclaim   with kLowestCommonAncestor (KAI's default, "lca"): on the victim's path from the top,
//             the queue one step below the lowest common ancestor of the reclaimer's and the
//             victim's queues (the victim's own top-level queue when they share none), then up from
//             there, the first spec.reclaimMinRuntime set; none: the default. Siblings under one
//             parent thus honour each other's setting while cousins honour their branch's. With
//             kVictimQueue ("queue"): the victim's queue, then up, like preempt.
//   protected while now < started + min runtime; a job with no start time is never protected
//             (KAI: LastStartTimestamp nil), and a zero or negative min runtime protects nothing.
// fracpack's job is a pod (a gang's members each carry their bind time).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "fracpack/queues/queue_tree.hpp"

namespace fracpack::queues {

enum class ReclaimMinRuntimeResolve : std::uint8_t {
  kLowestCommonAncestor,  ///< "lca"
  kVictimQueue,           ///< "queue"
};

/// "lca" or "queue"; nullopt otherwise.
std::optional<ReclaimMinRuntimeResolve> parse_reclaim_min_runtime_resolve(std::string_view text);

/// The minruntime plugin's arguments in KAI's scheduler configuration.
struct MinRuntimeDefaults {
  std::chrono::nanoseconds preempt{0};  ///< defaultPreemptMinRuntime
  std::chrono::nanoseconds reclaim{0};  ///< defaultReclaimMinRuntime
  ReclaimMinRuntimeResolve reclaim_resolve = ReclaimMinRuntimeResolve::kLowestCommonAncestor;  ///< reclaimResolveMethod
};

/// The min runtime that shields a pod of `victim` (a queue of `tree`) from preemption.
std::chrono::nanoseconds preempt_min_runtime(const QueueTree& tree, std::size_t victim, const MinRuntimeDefaults& defaults);

/// The min runtime that shields a pod of `victim` from a reclaim by a pod of `reclaimer`.
std::chrono::nanoseconds reclaim_min_runtime(const QueueTree& tree, std::size_t reclaimer, std::size_t victim,
                                             const MinRuntimeDefaults& defaults);

/// Whether a pod that started at `started` (seconds since the epoch) is still shielded by
/// `min_runtime` at `now` (seconds since the epoch). Never without a start time, never by a min
/// runtime ≤ 0.
bool shielded(std::optional<std::int64_t> started, std::chrono::nanoseconds min_runtime, std::int64_t now);

/// The first whole second at which a pod started at `started` is no longer shielded by
/// `min_runtime` (> 0).
std::int64_t shield_lapse(std::int64_t started, std::chrono::nanoseconds min_runtime);

}  // namespace fracpack::queues
