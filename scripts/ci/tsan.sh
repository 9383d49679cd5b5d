#!/usr/bin/env bash
# CI job "tsan": GCC with ThreadSanitizer; the tests that run threads or an HTTP server (locks,
# the JSON front, the watch, leader election). The tests that start a gRPC server are left to the
# ASan job: Debian's gRPC is not built with TSan (docs/testing.md says what that costs).
set -euo pipefail
cd "$(dirname "$0")/../.."
build_dir="${BUILD_DIR:-build-tsan}"
concurrency_tests="binpack/ledger_test;plugin_api/extender_core_test;plugin_api/store_test;plugin_api/reflector_test"
concurrency_tests+=";plugin_api/kube_binder_test;plugin_api/reservation_test;plugin_api/http_server_test"
concurrency_tests+=";plugin_api/leader_election_test;plugin_api/watch_core_test"
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1" -DFRACPACK_UNITY=ON \
  -DFRACPACK_SANITIZE=thread -DFRACPACK_BUILD_BENCH=OFF -DFRACPACK_TEST_ONLY="$concurrency_tests"
cmake --build "$build_dir" -j"$(nproc)"
source scripts/ci/sanitizer-env.sh
ctest --test-dir "$build_dir" --output-on-failure -E "^clients/"  # the clients start a gRPC server
