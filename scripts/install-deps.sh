#!/usr/bin/env bash
# Installs fracpack's build and test dependencies from Debian 12 packages (apt-get only).
# Idempotent: when every package is already installed it does nothing and touches no network.
# Run as root (or with sudo available).
set -euo pipefail

packages=(
  build-essential cmake pkg-config curl
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libboost-graph-dev libfmt-dev librange-v3-dev doctest-dev
  libyaml-cpp-dev nlohmann-json3-dev libcli11-dev libspdlog-dev
  libsqlite3-dev libcpp-httplib-dev libbenchmark-dev
  openssl libcsv-dev libre2-dev libsimdjson-dev
  libboost-dev libssl-dev zlib1g-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
