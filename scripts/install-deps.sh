#!/usr/bin/env bash
# Installs fracpack's build and test dependencies from Debian 12 packages (apt-get only).
# Idempotent: when every package is already installed it does nothing and touches no network.
# Run as root (or with sudo available).
set -euo pipefail

packages=(
  build-essential cmake pkg-config curl
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libfmt-dev doctest-dev
  libyaml-dev nlohmann-json3-dev libcli11-dev libspdlog-dev
  libsqlite3-dev libcpp-httplib-dev libbenchmark-dev
  openssl libcsv-dev libre2-dev libsimdjson-dev
  libboost-dev libssl-dev zlib1g-dev
  coinor-libclp-dev
  # the CI matrix: clang-16 (-Werror, ASan+UBSan, libFuzzer), GCC's TSan runtime
  clang-16 libclang-rt-16-dev llvm-16 libtsan2
  # the generated clients (clients/): Python and Go, offline from Debian's sources
  # (golang-github-golang-protobuf-1-5-dev: grpc-go 1.33 needs 1.5 to marshal protoc-gen-go 1.28's messages)
  python3 python3-grpcio python3-protobuf
  golang-go golang-google-grpc-dev golang-google-genproto-dev golang-google-protobuf-dev
  golang-github-golang-protobuf-1-5-dev protoc-gen-go protoc-gen-go-grpc
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
