#include "min_runtime_flags.hpp"

#include <chrono>
#include <optional>

#include "fracpack/core/quoting.hpp"
#include "fracpack/k8s/time.hpp"

namespace fracpack::cli {
namespace {

Result<std::chrono::nanoseconds> flag_duration(const std::string& text, const char* flag) {
  const auto d = k8s::parse_go_duration(text);
  if (!d || d->count() < 0) {
    return invalid_argument("{} {}: must be a duration of 0 or more, such as 10m or 1h30m (Go's syntax)", flag, excerpt(text));
  }
  return *d;
}

}  // namespace

void MinRuntimeFlags::add(CLI::App& app) {
  app.add_option("--default-preempt-min-runtime", preempt_,
                 "A pod younger than this is not preempted, where no Queue on its path sets preemptMinRuntime "
                 "(KAI's defaultPreemptMinRuntime; docs/queues.md rule 13)")
      ->capture_default_str();
  app.add_option("--default-reclaim-min-runtime", reclaim_,
                 "A pod younger than this is not reclaimed, where no Queue sets reclaimMinRuntime (KAI's "
                 "defaultReclaimMinRuntime)")
      ->capture_default_str();
  app.add_option("--reclaim-min-runtime-resolve", resolve_,
                 "Which Queue's reclaimMinRuntime applies: lca (below the queues' lowest common ancestor, KAI's "
                 "default) or queue (the victim's)")
      ->check(CLI::IsMember({"lca", "queue"}))
      ->capture_default_str();
}

Status MinRuntimeFlags::apply(queues::MinRuntimeDefaults& defaults) const {
  auto preempt = flag_duration(preempt_, "--default-preempt-min-runtime");
  if (!preempt) return preempt.status();
  auto reclaim = flag_duration(reclaim_, "--default-reclaim-min-runtime");
  if (!reclaim) return reclaim.status();
  const auto resolve = queues::parse_reclaim_min_runtime_resolve(resolve_);
  if (!resolve) return invalid_argument("--reclaim-min-runtime-resolve {}: must be lca or queue", excerpt(resolve_));
  defaults = {*preempt, *reclaim, *resolve};
  return Status::ok();
}

}  // namespace fracpack::cli
