#!/usr/bin/env bash
# Installs the Debian dependencies (idempotent), configures and builds fracpack into ./build.
# Usage: scripts/build.sh   (BUILD_DIR and BUILD_TYPE may be set in the environment)
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
build_dir="${BUILD_DIR:-build}"
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" -DFRACPACK_BUILD_TESTS=ON -DFRACPACK_BUILD_BENCH=ON
cmake --build "$build_dir" -j"$(nproc)"
