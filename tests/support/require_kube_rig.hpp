// kube-rig for a test: the binary, or a skip (a failure under CI=true). Tests only (doctest).
#pragma once

#include <doctest/doctest.h>

#include "support/kube_rig.hpp"

namespace fracpack::test {

/// The binary, or nullopt with a skip message; a test failure under CI=true.
inline std::optional<std::filesystem::path> require_kube_rig() {
  auto rig = kube_rig_binary();
  if (rig) return rig;
  const char* ci = std::getenv("CI");
  if (ci != nullptr && std::string(ci) == "true") {
    FAIL("kube-rig is not found (../shared/tools/kube-rig/kube-rig, or set FRACPACK_KUBE_RIG); CI=true needs it");
  }
  MESSAGE("skipped: kube-rig is not found (set FRACPACK_KUBE_RIG); under CI=true this fails");
  return std::nullopt;
}

}  // namespace fracpack::test
