// Runs of a grid on a few threads, results in the grid's order. Internal to src/density/.
#pragma once

#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

#include "core/parallel.hpp"
#include "fracpack/binpack/policy.hpp"
#include "fracpack/core/status.hpp"

namespace fracpack::density {

/// Refuses an unknown policy name before any run (make_policy()'s message); `workload` is what
/// fgd, fgd-cpu and fgd-lp need.
inline Status check_policies(const std::vector<std::string>& policies, const std::vector<TypicalPod>& workload) {
  PolicyOptions check;
  check.workload = std::make_shared<const std::vector<TypicalPod>>(workload);
  for (const auto& p : policies) {
    if (auto made = make_policy(p, check); !made) return made.status();
  }
  return Status::ok();
}

/// `run(i)` for i in [0, count), `threads` at a time; `progress(done, count)` after each, one call
/// at a time. The results in order, or the first run's error (in order).
template <class T, class Run>
Result<std::vector<T>> run_all(std::size_t count, unsigned threads, const std::function<void(std::size_t, std::size_t)>& progress,
                               Run&& run) {
  std::vector<std::optional<Result<T>>> results(count);
  std::mutex mu;
  std::size_t done = 0;
  parallel_for(count, threads, [&](std::size_t i) {
    auto r = run(i);
    std::lock_guard lock(mu);
    results[i].emplace(std::move(r));
    ++done;
    if (progress) progress(done, count);
  });
  std::vector<T> out;
  out.reserve(count);
  for (auto& r : results) {
    if (!r->is_ok()) return r->status();
    out.push_back(std::move(**r));
  }
  return out;
}

}  // namespace fracpack::density
