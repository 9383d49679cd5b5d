// Priority classes and preemptibility (docs/requests.md rules 18–19).
//
// KAI ships four priority classes: train 50, build-preemptible 75, build 100, inference 125
// (KAI docs/priority). A pod is preemptible when its label `kai.scheduler/preemptibility` says
// "preemptible", non-preemptible when it says "non-preemptible", and otherwise when its priority is
// below 100 (KAI pkg/common/constants: PriorityBuildNumber).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "fracpack/core/status.hpp"

namespace fracpack {

inline constexpr std::int32_t kNonPreemptibleThreshold = 100;
inline constexpr std::string_view kPreemptibilityLabel = "kai.scheduler/preemptibility";

/// Known PriorityClass objects, name → value. Starts with KAI's built-in classes; PriorityClass
/// objects found in the input are added with add().
class PriorityClasses {
 public:
  PriorityClasses();
  void add(std::string name, std::int32_t value) { values_[std::move(name)] = value; }
  [[nodiscard]] std::optional<std::int32_t> find(const std::string& name) const;

 private:
  std::map<std::string, std::int32_t> values_;
};

struct PriorityDecision {
  std::int32_t priority = 0;
  bool preemptible = true;
};

/// Resolves a pod's priority: spec.priority when set, else its class's value, else 0 (Kubernetes'
/// default without a globalDefault class). Preemptibility from the label, else priority < 100.
/// kInvalidArgument (naming `who`) for an unknown class without spec.priority, or a label value
/// other than preemptible / non-preemptible.
Result<PriorityDecision> resolve_priority(const std::string& who, const std::string& class_name,
                                          std::optional<std::int32_t> spec_priority,
                                          std::optional<std::string> preemptibility_label,
                                          const PriorityClasses& classes);

}  // namespace fracpack
