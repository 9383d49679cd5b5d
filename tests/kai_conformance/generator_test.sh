#!/usr/bin/env bash
# The scenario generator's own Go tests (tests/kai_conformance/generator), offline: the standard
# library only, Go's caches in BUILD_DIR. Usage: generator_test.sh BUILD_DIR
# Exit 77 (skip) when go is missing (Debian package golang-go); under CI=true that fails instead.
set -euo pipefail
build=$1
if ! command -v go > /dev/null; then
  echo "go not found (Debian package golang-go)" >&2
  [ "${CI:-}" = true ] && exit 1
  exit 77
fi
mkdir -p "$build"
export GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local GOCACHE="$build/go-cache" GOPATH="$build/gopath"
cd "$(dirname "$0")/generator"
go vet ./...
go test -count=1 ./...
