#!/usr/bin/env bash
# CI job "tsan": GCC with ThreadSanitizer; the tests that run threads or a server (locks, the
# fronts, the watch, leader election, crash recovery), and the `fracpack` they start, instrumented.
set -euo pipefail
cd "$(dirname "$0")/../.."
build_dir="${BUILD_DIR:-build-tsan}"
concurrency_tests="binpack/ledger_test;plugin_api/extender_core_test;plugin_api/store_test;plugin_api/reflector_test"
concurrency_tests+=";plugin_api/kube_binder_test;plugin_api/reservation_test;plugin_api/http_server_test"
concurrency_tests+=";plugin_api/grpc_front_test;plugin_api/access_test;plugin_api/leader_election_test"
concurrency_tests+=";plugin_api/crash_test;plugin_api/soak_test;plugin_api/pod_caches_test;plugin_api/watch_core_test"
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1" -DFRACPACK_UNITY=ON \
  -DFRACPACK_SANITIZE=thread -DFRACPACK_BUILD_BENCH=OFF -DFRACPACK_TEST_ONLY="$concurrency_tests"
cmake --build "$build_dir" -j"$(nproc)"
source scripts/ci/sanitizer-env.sh
FRACPACK_SOAK_SECONDS="${FRACPACK_SOAK_SECONDS:-30}" ctest --test-dir "$build_dir" --output-on-failure
