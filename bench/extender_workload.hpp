// The pod mix both extender benchmarks schedule: full kubectl-shaped v1 Pods (~3 KB of JSON).
#pragma once

#include <random>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/kube_payloads.hpp"

namespace fracpack::bench {

/// The mix: 70 % fractions (4–40 GiB, a tenth of them sm-sharing), 20 % one whole GPU, 10 % 2–8.
inline nlohmann::json extender_workload_pod(std::mt19937& rng, const std::string& name) {
  const int kind = static_cast<int>(rng() % 10);
  if (kind < 7) {
    const int gib = 4 + static_cast<int>(rng() % 37);
    const bool mps = rng() % 10 == 0;
    return test::kube_pod(name, fmt::format(R"({{"nvidia.com/container.server.gpu-memory.request": "{}Gi"{}}})", gib,
                                            mps ? R"(, "nvidia.com/container.server.gpu-compute.mode": "sm-sharing")" : ""));
  }
  nlohmann::json pod = test::kube_pod(name);
  const int gpus = kind < 9 ? 1 : 2 + static_cast<int>(rng() % 7);
  pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = std::to_string(gpus);
  pod["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = std::to_string(gpus);
  return pod;
}

}  // namespace fracpack::bench
