#!/usr/bin/env bash
# The Python client against a live server: generates it from proto/ (clients/generate.sh), starts
# `fracpack serve --grpc 127.0.0.1:PORT --state :memory:` (PORT: the first free one of 24500-24549),
# runs clients/python/example.py and checks what it printed (tests/clients/lib.sh), stops the server.
# Usage: tests/clients/python_client_test.sh FRACPACK BUILD_DIR   (everything it writes: BUILD_DIR)
# Exit 77 (skip) when a Debian package it needs is missing; under CI=true that fails instead.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"  # also when started as `sh script`
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/lib.sh"
read_arguments "$@"  # fracpack, build, start

python="${PYTHON:-/usr/bin/python3}"  # Debian's: its grpcio and protobuf are Debian's packages
command -v protoc > /dev/null || missing "protoc not found (Debian package protobuf-compiler)"
command -v grpc_python_plugin > /dev/null || missing "grpc_python_plugin not found (Debian package protobuf-compiler-grpc)"
[ -x "$python" ] || missing "$python not found (Debian package python3)"
"$python" -c "import grpc" 2> /dev/null || missing "$python cannot import grpc (Debian package python3-grpcio)"
"$python" -c "import google.protobuf" 2> /dev/null || missing "$python cannot import google.protobuf (Debian package python3-protobuf)"

bash "$here/../../clients/generate.sh" "$build" python
start_server "$fracpack" "$build/serve.log" 24500 24549
echo "serve: 127.0.0.1:$port (pid $server_pid)"
PYTHONPATH="$build/python" timeout 60 "$python" "$build/python/example.py" "127.0.0.1:$port" > "$build/example.out" 2>&1 \
  || { cat "$build/example.out" >&2; fail "example.py exited non-zero"; }
cat "$build/example.out"
check_example "$build/example.out" "$build/serve.log"
stop_server
echo "PASS: python client ($(( $(date +%s) - start )) s)"
