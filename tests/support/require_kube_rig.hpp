// kube-rig for a test: the binary, or a skip (a failure under CI=true). Tests only (doctest).
#pragma once

#include <doctest/doctest.h>

#include "support/kube_rig.hpp"

namespace fracpack::test {

/// `rig`, or nullopt with a skip message (a test failure under CI=true) naming `where`.
inline std::optional<std::filesystem::path> required(std::optional<std::filesystem::path> rig, const char* where) {
  if (rig) return rig;
  const char* ci = std::getenv("CI");
  if (ci != nullptr && std::string(ci) == "true") FAIL("kube-rig is not found (" << where << "); CI=true needs it");
  MESSAGE("skipped: kube-rig is not found (" << where << "); under CI=true this fails");
  return std::nullopt;
}

/// kube-rig with kube-scheduler v1.20.5, or a skip.
inline std::optional<std::filesystem::path> require_kube_rig() {
  return required(kube_rig_binary(), "../shared/tools/kube-rig/kube-rig, or set FRACPACK_KUBE_RIG");
}

/// kube-rig with kube-scheduler v1.35.4, or a skip.
inline std::optional<std::filesystem::path> require_kube_rig_135() {
  return required(kube_rig_135_binary(), "../shared/tools/kube-rig-1.35/kube-rig, or set FRACPACK_KUBE_RIG_135");
}

}  // namespace fracpack::test
