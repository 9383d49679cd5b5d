#!/usr/bin/env bash
# CI job "tsan": GCC with ThreadSanitizer; the tests that run threads or a server (locks, the
# fronts, the watch, leader election, the crash and soak runs, the clients).
#  1. The tests without a gRPC server: every report fails the test that caused it.
#  2. The tests with one: Debian's gRPC is not built with TSan, so its own inline code reports
#     races TSan cannot see the ordering of. The reports are logged, and tsan_triage.py fails the
#     job on every report in our code (docs/testing.md, "TSan and gRPC").
set -euo pipefail
cd "$(dirname "$0")/../.."
build_dir="${BUILD_DIR:-build-tsan}"
plain_tests="binpack/ledger_test;plugin_api/extender_core_test;plugin_api/store_test;plugin_api/reflector_test"
plain_tests+=";plugin_api/kube_binder_test;plugin_api/reservation_test;plugin_api/http_server_test"
plain_tests+=";plugin_api/leader_election_test;plugin_api/watch_core_test"
grpc_tests="plugin_api/grpc_front_test;plugin_api/serve_startup_test;plugin_api/access_test;plugin_api/crash_test;plugin_api/soak_test"
grpc_pattern="${grpc_tests//;/|}|^clients/"  # the CTest names of those, and the clients
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1" -DFRACPACK_UNITY=ON \
  -DFRACPACK_SANITIZE=thread -DFRACPACK_BUILD_BENCH=OFF -DFRACPACK_TEST_ONLY="$plain_tests;$grpc_tests"
cmake --build "$build_dir" -j"$(nproc)"
source scripts/ci/sanitizer-env.sh
ctest --test-dir "$build_dir" --output-on-failure -j"$(nproc)" -E "$grpc_pattern"

reports="$build_dir/tsan-reports"
rm -rf "$reports" && mkdir -p "$reports"
export TSAN_OPTIONS="${TSAN_OPTIONS/halt_on_error=1/halt_on_error=0}:exitcode=0:log_path=$(pwd)/$reports/report"
ctest --test-dir "$build_dir" --output-on-failure -j"$(nproc)" -R "$grpc_pattern"
shopt -s nullglob
python3 scripts/ci/tsan_triage.py "$(pwd)" /dev/null "$reports"/report.*
