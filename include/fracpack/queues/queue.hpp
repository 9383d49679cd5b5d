// KAI Queue objects (scheduling.run.ai/v2, KAI pkg/apis/scheduling/v2/queue_types.go).
//
// Units, as KAI writes them in the Queue spec, and as fracpack holds them:
//   gpu     devices, fractions allowed (0.5)   → milli-GPU, rounded to the nearest thousandth
//   cpu     millicores                         → milli-CPU
//   memory  megabytes of 10^6 bytes            → bytes
// Special values: quota -1 = unlimited (deserved = everything); limit -1 = no limit; limit 0, or
// an unset limit, blocks the resource (KAI's MaxAllowed of 0); quota unset = 0; overQuotaWeight
// unset = 0 (no share of what is left over).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "fracpack/queues/fair_share.hpp"

namespace fracpack::queues {

enum class Resource : std::uint8_t { kGpu = 0, kCpu = 1, kMemory = 2 };
inline constexpr std::array<Resource, 3> kResources{Resource::kGpu, Resource::kCpu, Resource::kMemory};
inline constexpr std::size_t kResourceCount = kResources.size();

/// "gpu", "cpu", "memory" — the keys under spec.resources.
std::string_view resource_name(Resource r);

/// Amounts per resource in fracpack's units: milli-GPU, milli-CPU, bytes.
class Amounts {
 public:
  constexpr Amounts() = default;
  constexpr Amounts(std::int64_t gpu_milli, std::int64_t cpu_milli, std::int64_t memory_bytes)
      : v_{gpu_milli, cpu_milli, memory_bytes} {}
  [[nodiscard]] constexpr std::int64_t operator[](Resource r) const { return v_[static_cast<std::size_t>(r)]; }
  constexpr std::int64_t& operator[](Resource r) { return v_[static_cast<std::size_t>(r)]; }
  constexpr Amounts& operator+=(const Amounts& o) {
    for (std::size_t i = 0; i < v_.size(); ++i) v_[i] += o.v_[i];
    return *this;
  }
  constexpr Amounts& operator-=(const Amounts& o) {
    for (std::size_t i = 0; i < v_.size(); ++i) v_[i] -= o.v_[i];
    return *this;
  }
  friend constexpr Amounts operator+(Amounts a, const Amounts& b) { return a += b; }
  friend constexpr Amounts operator-(Amounts a, const Amounts& b) { return a -= b; }
  constexpr bool operator==(const Amounts&) const = default;

 private:
  std::array<std::int64_t, kResourceCount> v_{};
};

/// An amount in the unit KAI writes it in: "1.5" GPUs, "4000" millicores, "16000" MB.
std::string format_amount(Resource r, std::int64_t amount);

/// spec.resources.<r> of a Queue.
struct QueueResource {
  std::int64_t quota = 0;           ///< kUnlimited for -1
  std::int64_t limit = 0;           ///< kUnlimited for -1; 0 (also when unset) blocks
  std::int64_t over_quota_weight = 0;  ///< thousandths (1 = 1000)
  bool limit_set = false;           ///< for messages: "unset" reads better than "0"
  friend bool operator==(const QueueResource&, const QueueResource&) = default;
};

struct QueueSpec {
  std::string name;
  std::string parent;                    ///< "" for a top-level queue
  std::int32_t priority = 100;           ///< KAI's default
  std::int64_t created = 0;              ///< metadata.creationTimestamp, seconds since the epoch
  std::array<QueueResource, kResourceCount> resources{};
  /// spec.preemptMinRuntime / spec.reclaimMinRuntime (metav1.Duration): a job of this queue (or
  /// of a queue below it that sets none) that started less than this long ago is not a victim of
  /// preemption / reclaim (queues/min_runtime.hpp). Unset: the parent's, then the default.
  std::optional<std::chrono::nanoseconds> preempt_min_runtime{};
  std::optional<std::chrono::nanoseconds> reclaim_min_runtime{};
  [[nodiscard]] const QueueResource& resource(Resource r) const { return resources[static_cast<std::size_t>(r)]; }
  QueueResource& resource(Resource r) { return resources[static_cast<std::size_t>(r)]; }
  friend bool operator==(const QueueSpec&, const QueueSpec&) = default;
};

}  // namespace fracpack::queues
