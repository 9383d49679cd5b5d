// Decoding KAI Queue (scheduling.run.ai/v2) and PodGroup (scheduling.run.ai/v2alpha2) objects.
#pragma once

#include <chrono>
#include <cstdint>

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fracpack/binpack/gang.hpp"
#include "fracpack/queues/queue.hpp"
#include "fracpack/core/status.hpp"

namespace fracpack::queues {

/// Decodes a Queue, strictly (docs/requests.md rule 24): apiVersion must be scheduling.run.ai/v2,
/// and a field KAI's Queue type does not have is an error. Numbers may be JSON numbers or decimal
/// strings ("0.5"). kInvalidArgument, naming the queue and the field, for: a missing name, an
/// unknown field, a negative value other than -1, NaN or infinity, a non-numeric value, a weight of
/// -1, a priority that is not a 32-bit integer, a preemptMinRuntime or reclaimMinRuntime that is
/// not a Go duration string. displayName, which fracpack does not act on, adds a warning to
/// `warnings`, when given.
Result<QueueSpec> decode_queue(const nlohmann::json& queue, std::vector<std::string>* warnings = nullptr);

/// A PodGroup: its gang's rule (minMember, minSubGroup, subGroups, topologyConstraint: the
/// GangRule it is), queue, priority class and preemptibility.
struct PodGroupSpec : GangRule {
  std::string namespace_name = "default";
  std::string name;
  std::optional<std::string> queue;       ///< spec.queue
  std::optional<std::string> priority_class;
  std::optional<std::string> preemptibility;  ///< "preemptible" or "non-preemptible"
  std::optional<std::int64_t> created;        ///< metadata.creationTimestamp, seconds since the epoch
  /// spec.preemptionDelay (KAI #1886): for that long after the PodGroup's creation its job may not
  /// evict or move others (consolidation, reclaim, preempt skip it: KAI's
  /// FilterWithinPreemptionDelay, pkg/scheduler/actions/utils/input_jobs.go). Unset or ≤ 0: none.
  std::optional<std::chrono::nanoseconds> preemption_delay;
  /// The first moment its job may evict others (seconds since the epoch), or nullopt for none:
  /// creation (else `fallback`, its first pod's) plus preemption_delay.
  [[nodiscard]] std::optional<std::int64_t> evicts_from(std::int64_t fallback) const {
    if (!preemption_delay || preemption_delay->count() <= 0) return std::nullopt;
    const auto seconds = std::chrono::ceil<std::chrono::seconds>(*preemption_delay).count();
    return created.value_or(fallback) + seconds;
  }
  [[nodiscard]] std::string key() const { return namespace_name + "/" + name; }
};

/// Decodes a PodGroup, strictly (apiVersion scheduling.run.ai/v2alpha2, no unknown field:
/// docs/requests.md rule 24); kInvalidArgument naming the group and field, for a field of the wrong
/// type and for a rule check_gang_rule() refuses (docs/placement.md rules 18 and 19). A
/// topologyConstraint without a level adds a warning to `warnings`, when given.
Result<PodGroupSpec> decode_pod_group(const nlohmann::json& group, std::vector<std::string>* warnings = nullptr);

}  // namespace fracpack::queues
