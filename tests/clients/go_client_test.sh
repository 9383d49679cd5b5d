#!/usr/bin/env bash
# The Go client against a live server: generates it from proto/ (clients/generate.sh), builds
# clients/go/example offline in GOPATH mode from Debian's Go sources (/usr/share/gocode), starts
# `fracpack serve --grpc 127.0.0.1:PORT --state :memory:` (PORT: the first free one of 24550-24599),
# runs the example and checks what it printed (tests/clients/lib.sh), stops the server.
# Usage: tests/clients/go_client_test.sh FRACPACK BUILD_DIR   (everything it writes, GOCACHE too: BUILD_DIR)
# Exit 77 (skip) when a Debian package it needs is missing; under CI=true that fails instead.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"  # also when started as `sh script`
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/lib.sh"
read_arguments "$@"  # fracpack, build, start

gocode=/usr/share/gocode/src
command -v protoc > /dev/null || missing "protoc not found (Debian package protobuf-compiler)"
command -v go > /dev/null || missing "go not found (Debian package golang-go)"
command -v protoc-gen-go > /dev/null || missing "protoc-gen-go not found (Debian package protoc-gen-go)"
command -v protoc-gen-go-grpc > /dev/null || missing "protoc-gen-go-grpc not found (Debian package protoc-gen-go-grpc)"
[ -d "$gocode/google.golang.org/grpc" ] || missing "no $gocode/google.golang.org/grpc (Debian package golang-google-grpc-dev)"
[ -d "$gocode/google.golang.org/protobuf" ] || missing "no $gocode/google.golang.org/protobuf (Debian package golang-google-protobuf-dev)"
# grpc-go marshals with github.com/golang/protobuf: only 1.5 (a wrapper of google.golang.org/protobuf)
# handles protoc-gen-go's messages; Debian's 1.3 panics on them ("protobuf tag not enough fields").
[ -f "$gocode/github.com/golang/protobuf/proto/registry.go" ] \
  || missing "github.com/golang/protobuf is not 1.5 (Debian package golang-github-golang-protobuf-1-5-dev)"

bash "$here/../../clients/generate.sh" "$build" go
echo "go build: $(go version)"
( export GO111MODULE=off GOPATH="$build/go:/usr/share/gocode" GOCACHE="$build/go-cache" GOPROXY=off GOFLAGS=
  cd "$build" && go build -o "$build/bin/example" fracpack/client/example ) || fail "go build of the example failed"
start_server "$fracpack" "$build/serve.log" 24550 24599
echo "serve: 127.0.0.1:$port (pid $server_pid)"
timeout 60 "$build/bin/example" "127.0.0.1:$port" > "$build/example.out" 2>&1 \
  || { cat "$build/example.out" >&2; fail "the example exited non-zero"; }
cat "$build/example.out"
check_example "$build/example.out" "$build/serve.log"
stop_server
echo "PASS: go client ($(( $(date +%s) - start )) s)"
