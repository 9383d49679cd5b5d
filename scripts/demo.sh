#!/usr/bin/env bash
# Starts `fracpack serve` on the bundled example cluster, replays the example workload through its
# gRPC API the way a scheduler calls an extender (Filter → Prioritize → Bind), then stops the server.
set -euo pipefail
cd "$(dirname "$0")/.."
port="${FRACPACK_DEMO_PORT:-18080}"       # HTTP/JSON (kube-scheduler) front
grpc_port="${FRACPACK_DEMO_GRPC_PORT:-18090}"
./build/fracpack serve --grpc "127.0.0.1:${grpc_port}" --http "127.0.0.1:${port}" --state :memory: \
  --cluster examples/cluster.yaml > /tmp/fracpack-demo-server.log 2>&1 &
server=$!
trap 'kill "$server" 2> /dev/null || true; wait "$server" 2> /dev/null || true' EXIT
for _ in $(seq 1 50); do
  curl -fs "http://127.0.0.1:${port}/healthz" > /dev/null 2>&1 && break
  sleep 0.1
done
./build/fracpack replay --server "grpc://127.0.0.1:${grpc_port}" --pods examples/workload.yaml
echo "(server log: /tmp/fracpack-demo-server.log; metrics were at http://127.0.0.1:${port}/metrics)"
