#!/usr/bin/env bash
# Generates fracpack's gRPC clients from proto/ with Debian's protoc and plugins, into OUT only
# (nothing is written to the source tree; generated code is never committed).
# Usage: clients/generate.sh OUT [python] [go]      (no language: both)
#   python: OUT/python/fracpack/v1/*_pb2*.py, OUT/python/google/rpc/*_pb2.py, and a copy of
#           clients/python (the fracpack_client package, example.py). Run with PYTHONPATH=OUT/python.
#   go:     a GOPATH at OUT/go: OUT/go/src/fracpack/v1/*.pb.go (package fracpackv1) and a copy of
#           clients/go as OUT/go/src/fracpack/client (package client, example/). Build with
#           GO111MODULE=off GOPROXY=off GOPATH=OUT/go:/usr/share/gocode (docs/grpc.md).
# Run it again after editing clients/python or clients/go: it copies them afresh.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 OUT [python] [go]" >&2; exit 2; }
src="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$1"
out="$(cd "$1" && pwd)"
shift
langs=("$@")
[ ${#langs[@]} -gt 0 ] || langs=(python go)

need() { command -v "$1" > /dev/null || { echo "generate.sh: $1 not found (Debian package $2)" >&2; exit 3; }; }
need protoc protobuf-compiler
cd "$src/proto"

for lang in "${langs[@]}"; do
  case "$lang" in
    python)
      need grpc_python_plugin protobuf-compiler-grpc
      rm -rf "$out/python" && mkdir -p "$out/python"
      # Modules are named after the .proto paths, as protoc always does: fracpack.v1.extender_pb2,
      # google.rpc.status_pb2. fracpack_client (clients/python) re-exports them.
      protoc -I . --python_out="$out/python" fracpack/v1/types.proto google/rpc/status.proto google/rpc/error_details.proto
      protoc -I . --python_out="$out/python" \
        --grpc_python_out="$out/python" --plugin=protoc-gen-grpc_python="$(command -v grpc_python_plugin)" \
        fracpack/v1/extender.proto fracpack/v1/cluster.proto
      cp -R "$src/clients/python/." "$out/python/"
      echo "generate.sh: python client in $out/python"
      ;;
    go)
      need protoc-gen-go protoc-gen-go
      need protoc-gen-go-grpc protoc-gen-go-grpc
      rm -rf "$out/go/src/fracpack" && mkdir -p "$out/go/src"
      # The .proto files name no go_package: M options give them one, fracpack/v1 (package fracpackv1).
      # google/rpc is not generated for Go: grpc-go's status package decodes it with genproto's types.
      m=""
      for f in types extender cluster; do m="$m,Mfracpack/v1/$f.proto=fracpack/v1;fracpackv1"; done
      protoc -I . --go_out="$out/go/src" --go_opt="${m#,}" --go-grpc_out="$out/go/src" --go-grpc_opt="${m#,}" \
        fracpack/v1/types.proto fracpack/v1/extender.proto fracpack/v1/cluster.proto
      mkdir -p "$out/go/src/fracpack/client"
      cp -R "$src/clients/go/." "$out/go/src/fracpack/client/"
      echo "generate.sh: go client in $out/go (GOPATH)"
      ;;
    *) echo "generate.sh: unknown language $lang (python or go)" >&2; exit 2 ;;
  esac
done
