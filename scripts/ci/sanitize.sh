#!/usr/bin/env bash
# CI job "clang-sanitize": clang-16 with -Werror, AddressSanitizer + UndefinedBehaviorSanitizer
# (UB aborts), and libFuzzer. One build serves three checks: it compiles the whole tree with a
# second compiler and no warning, runs the whole suite under ASan+UBSan (the `fracpack` the
# tests start is instrumented too), and fuzzes every parser for FRACPACK_FUZZ_SECONDS each.
set -euo pipefail
cd "$(dirname "$0")/../.."
build_dir="${BUILD_DIR:-build-clang-sanitize}"
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++-16 \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1" -DFRACPACK_UNITY=ON -DFRACPACK_WERROR=ON -DFRACPACK_SANITIZE=address,undefined \
  -DFRACPACK_BUILD_FUZZ=ON -DFRACPACK_BUILD_BENCH=OFF -DFRACPACK_FUZZ_SECONDS="${FRACPACK_FUZZ_SECONDS:-20}"
cmake --build "$build_dir" -j"$(nproc)"
source scripts/ci/sanitizer-env.sh
ctest --test-dir "$build_dir" --output-on-failure -j"$(nproc)"
