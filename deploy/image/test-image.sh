#!/usr/bin/env bash
# Starts the binary of the image build-image.sh made, as its user, inside its own root filesystem
# (chroot: no container runtime needed), and checks `fracpack --version` and GET /healthz.
# Usage (as root): deploy/image/test-image.sh [OUT]   (OUT as for build-image.sh; default build/image)
set -euo pipefail
cd "$(dirname "$0")/../.."
out="$(realpath "${1:-build/image}")"
tag="$(umoci ls --layout "$out/oci" | head -1)"
work="$(mktemp -d)"
cleanup() { [ -n "${server:-}" ] && kill "$server" 2> /dev/null; rm -rf "$work"; }
trap cleanup EXIT
umoci unpack --image "$out/oci:$tag" "$work/bundle" > /dev/null
rootfs="$work/bundle/rootfs"
user="$(jq -r '.process.user | "\(.uid):\(.gid)"' "$work/bundle/config.json")"
entry="$(jq -r '.process.args[0]' "$work/bundle/config.json")"
echo "image fracpack:$tag: entrypoint $entry, user $user, $(du -sh "$rootfs" | cut -f1) unpacked"
version="$(chroot --userspec="$user" "$rootfs" "$entry" --version)"
echo "--version: $version"
[[ "$version" == "fracpack $tag"* ]] || { echo "FAIL: --version says '$version', the image is tagged $tag" >&2; exit 1; }
port="${IMAGE_TEST_PORT:-24188}"
mkdir -p "$rootfs/tmp" && chmod 1777 "$rootfs/tmp"
chroot --userspec="$user" "$rootfs" "$entry" serve --http "127.0.0.1:$port" --state :memory: > "$work/serve.log" 2>&1 &
server=$!
for _ in $(seq 1 50); do
  if curl -fs "http://127.0.0.1:$port/healthz" > "$work/healthz" 2> /dev/null; then break; fi
  sleep 0.1
done
[ "$(cat "$work/healthz" 2> /dev/null)" = "ok" ] || { echo "FAIL: /healthz did not answer ok" >&2; cat "$work/serve.log" >&2; exit 1; }
echo "/healthz: ok (the server ran as $user inside the image)"
