#include "fracpack/k8s/priority.hpp"

#include <fmt/format.h>

#include "fracpack/core/quoting.hpp"

namespace fracpack {

PriorityClasses::PriorityClasses()
    : values_{{"train", 50}, {"build-preemptible", 75}, {"build", 100}, {"inference", 125}} {}

std::optional<std::int32_t> PriorityClasses::find(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

Result<PriorityDecision> resolve_priority(const std::string& who, const std::string& class_name,
                                          std::optional<std::int32_t> spec_priority,
                                          std::optional<std::string> preemptibility_label,
                                          const PriorityClasses& classes) {
  PriorityDecision out;
  if (spec_priority) {
    out.priority = *spec_priority;
  } else if (!class_name.empty()) {
    auto value = classes.find(class_name);
    if (!value) {
      return invalid_argument(
          "{}: spec.priorityClassName \"{}\" is not a known PriorityClass (built in: train 50, "
          "build-preemptible 75, build 100, inference 125; add a PriorityClass object to the input)",
          who, excerpt(class_name));
    }
    out.priority = *value;
  }
  out.preemptible = out.priority < kNonPreemptibleThreshold;
  if (preemptibility_label) {
    if (*preemptibility_label == "preemptible") {
      out.preemptible = true;
    } else if (*preemptibility_label == "non-preemptible") {
      out.preemptible = false;
    } else {
      return invalid_argument(
          "{}: label \"{}\" = \"{}\": must be \"preemptible\" or \"non-preemptible\"", who,
          kPreemptibilityLabel, excerpt(*preemptibility_label));
    }
  }
  return out;
}

}  // namespace fracpack
