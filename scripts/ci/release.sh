#!/usr/bin/env bash
# CI job "release": the GCC Release build (library, command, tests, benchmarks) and the whole
# suite, as scripts/build.sh builds it for users. Also replays every fuzz corpus once.
set -euo pipefail
cd "$(dirname "$0")/../.."
./scripts/build.sh
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j"$(nproc)"
