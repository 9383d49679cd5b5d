#!/usr/bin/env bash
# CI job "package": cmake --install the release build into a fresh prefix, then build
# examples/embed (core) and tests/package (queues, sim, server) against the installed package
# twice each (find_package, then pkg-config), run them, and compile every installed header on
# its own.
set -euo pipefail
cd "$(dirname "$0")/../.."
build_dir="${BUILD_DIR:-build}"
prefix="$build_dir/package/prefix"
rm -rf "$build_dir/package"
cmake --install "$build_dir" --prefix "$prefix" > /dev/null
prefix="$(cd "$prefix" && pwd)"
"$prefix/bin/fracpack" --version

echo "package: examples/embed with find_package(fracpack)"
cmake -S examples/embed -B "$build_dir/package/embed-cmake" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_DISABLE_FIND_PACKAGE_gRPC=TRUE -DCMAKE_DISABLE_FIND_PACKAGE_SQLite3=TRUE > /dev/null  # core needs neither
cmake --build "$build_dir/package/embed-cmake" > /dev/null
"$build_dir/package/embed-cmake/place_pods" examples/cluster.yaml examples/embed/pods.yaml | tee "$build_dir/package/cmake.out" || test $? -eq 1

echo "package: examples/embed with pkg-config"
PKG_CONFIG_PATH="$(dirname "$(find "$prefix" -name fracpack.pc)")"
export PKG_CONFIG_PATH
pkg-config --modversion fracpack
# shellcheck disable=SC2046 # the flags are words
g++ -O1 -o "$build_dir/package/place_pods-pc" examples/embed/place_pods.cpp $(pkg-config --cflags --libs --static fracpack-core)
"$build_dir/package/place_pods-pc" examples/cluster.yaml examples/embed/pods.yaml > "$build_dir/package/pkg-config.out" || test $? -eq 1
cmp "$build_dir/package/cmake.out" "$build_dir/package/pkg-config.out"
grep -q "^team-a/chat-0 -> " "$build_dir/package/cmake.out"
grep -q "^team-b/too-big does not fit: 0/" "$build_dir/package/cmake.out"

echo "package: every layer linked (tests/package), with find_package and with pkg-config"
cmake -S tests/package -B "$build_dir/package/every-layer" -DCMAKE_PREFIX_PATH="$prefix" > /dev/null
cmake --build "$build_dir/package/every-layer" > /dev/null
"$build_dir/package/every-layer/every_layer"
# shellcheck disable=SC2046 # the flags are words
g++ -O1 -o "$build_dir/package/every_layer-pc" tests/package/every_layer.cpp $(pkg-config --cflags --libs --static fracpack)
"$build_dir/package/every_layer-pc"

echo "package: every installed header compiles on its own"
count=0
while IFS= read -r header; do
  rel="${header#"$prefix/include/"}"
  printf '#include "%s"\n' "$rel" | g++ -std=c++20 -fsyntax-only -Wall -Wextra -I"$prefix/include" -x c++ - \
    || { echo "package: $rel does not compile on its own"; exit 1; }
  count=$((count + 1))
done < <(find "$prefix/include/fracpack" -name '*.hpp' | sort)
echo "package: $count headers, each self-contained"
