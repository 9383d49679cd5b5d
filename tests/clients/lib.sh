# Shared by python_client_test.sh and go_client_test.sh (sourced, bash): start a `fracpack serve`
# on a free loopback port, check what an example printed, stop the server.

fail() { echo "FAIL: $*" >&2; exit 1; }

# A tool the test needs is missing: skip (exit 77), except under CI=true, where it is a failure.
missing() {
  if [ "${CI:-}" = true ]; then fail "$* (CI=true: a missing tool fails instead of skipping)"; fi
  echo "SKIP: $*" >&2
  exit 77
}

server_pid=""
stop_server_on_exit() { [ -z "$server_pid" ] || kill "$server_pid" 2> /dev/null || true; }
trap stop_server_on_exit EXIT

# start_server FRACPACK LOG FIRST_PORT LAST_PORT: sets port and server_pid. A port in use makes
# serve exit at once ("cannot listen there"): then the next port is tried.
start_server() {
  local bin="$1" log="$2" first="$3" last="$4" p i
  for p in $(seq "$first" "$last"); do
    "$bin" serve --grpc "127.0.0.1:$p" --state :memory: > "$log" 2>&1 &
    server_pid=$!
    for i in $(seq 1 100); do
      if grep -q "serving gRPC fracpack.v1 on 127.0.0.1:$p" "$log"; then port=$p; return 0; fi
      kill -0 "$server_pid" 2> /dev/null || break
      sleep 0.1
    done
    if kill -0 "$server_pid" 2> /dev/null; then cat "$log" >&2; fail "serve did not start within 10 s"; fi
    wait "$server_pid" || true
    server_pid=""
    grep -q "cannot listen there" "$log" || { cat "$log" >&2; fail "serve exited at start"; }
  done
  fail "no free port in $first-$last"
}

# stop_server: SIGTERM, and serve must exit 0 (it drains and closes the state).
stop_server() {
  local rc=0
  kill -TERM "$server_pid"
  wait "$server_pid" || rc=$?
  server_pid=""
  [ "$rc" -eq 0 ] || fail "serve exited $rc on SIGTERM"
}

# check_example OUTPUT SERVE_LOG: the outcomes the example must print (clients/*/example*), and
# the server's own log of the bind.
check_example() {
  local out="$1" log="$2" gpu
  expect() { grep -Eq "$1" "$out" || { cat "$out" >&2; fail "the example did not print /$1/ ($2)"; }; }
  expect '^applied: h200-01$' "Apply"
  expect '^gpu: h200-01/[0-9]+ ' "the applied node is in the Snapshot"
  [ "$(grep -c '^gpu: h200-01/' "$out")" -eq 2 ] || fail "the Snapshot does not list the node's 2 GPUs"
  expect '^filter: h200-01$' "Filter names the node that fits"
  expect '^bind: team-a/chat-0 node=h200-01 gpus=\[[0-9]+\] mib=\[16384\] mode=COMPUTE_MODE_TIME_SLICING$' "Bind"
  gpu="$(sed -nE 's/^bind: team-a\/chat-0 node=h200-01 gpus=\[([0-9]+)\].*/\1/p' "$out")"
  expect "^gpu: h200-01/$gpu GPU_STATE_SHARED_TIME_SLICING used=16384/[0-9]+MiB holders=\[team-a/chat-0\]$" \
    "the Snapshot holds the pod on GPU $gpu"
  expect '^gpu: h200-01/[0-9]+ GPU_STATE_IDLE used=0/[0-9]+MiB holders=\[\]$' "the other GPU is idle"
  expect "^binding: team-a/chat-0 node=h200-01 gpus=\[$gpu\] standing=bound$" "the Snapshot's binding"
  expect '^refused: (INVALID_ARGUMENT|InvalidArgument): pod team-a/bad-0: annotation "gpu-fraction"' "a bad pod is refused"
  expect '^detail: google.rpc.BadRequest field=pod: ' "the refusal's google.rpc.BadRequest detail"
  grep -q "bind team-a/chat-0 to h200-01 GPUs \[$gpu\]" "$log" || { cat "$log" >&2; fail "the server did not log the bind"; }
}

# read_arguments FRACPACK BUILD_DIR: sets fracpack and build (absolute paths; BUILD_DIR is made)
# and start (the epoch second the test began).
read_arguments() {
  [ $# -eq 2 ] || { echo "usage: $0 FRACPACK BUILD_DIR" >&2; exit 2; }
  [ -x "$1" ] || fail "$1: no fracpack binary there"
  fracpack="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
  mkdir -p "$2"
  build="$(cd "$2" && pwd)"
  start=$(date +%s)
}
