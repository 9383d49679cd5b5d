#!/usr/bin/env bash
# Builds fracpack's image where no container registry can be reached: a Debian 12 root filesystem
# from Debian's own packages (debootstrap), the runtime libraries the binary links (found with ldd
# and dpkg), the binary, a non-root user, committed as an OCI image with umoci. Same content as
# the Dockerfile's final stage.
#
# Usage (as root): deploy/image/build-image.sh [BINARY] [OUT]
#   BINARY  default build/fracpack (./scripts/build.sh makes it)
#   OUT     default build/image: OUT/oci is an OCI image layout (tag fracpack:VERSION),
#           OUT/fracpack-VERSION.oci.tar the same as one file
#           (skopeo copy oci-archive:OUT/fracpack-VERSION.oci.tar docker://REGISTRY/fracpack:VERSION)
# Environment: DEBIAN_MIRROR (default http://deb.debian.org/debian).
set -euo pipefail
cd "$(dirname "$0")/../.."
binary="$(realpath "${1:-build/fracpack}")"
out="$(realpath -m "${2:-build/image}")"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
[ "$(id -u)" -eq 0 ] || { echo "build-image: run as root (debootstrap and umoci unpack need it)" >&2; exit 2; }
[ -x "$binary" ] || { echo "build-image: no binary at $binary (run ./scripts/build.sh)" >&2; exit 2; }

for tool in debootstrap umoci; do
  command -v "$tool" > /dev/null || { echo "build-image: installing $tool (Debian package)"; apt-get install -y -q --no-install-recommends "$tool"; }
done

version="$("$binary" --version | awk '{print $2}')"
# The Debian packages of every library the binary loads (a path may be known to dpkg under /lib
# or under /usr/lib: Debian 12 merges them).
packages=(ca-certificates)
while read -r lib; do
  for path in "$lib" "$(readlink -f "$lib")" "${lib/#\/usr\/lib/\/lib}" "${lib/#\/lib/\/usr\/lib}"; do
    if pkg="$(dpkg -S "$path" 2> /dev/null | head -1 | cut -d: -f1)" && [ -n "$pkg" ]; then packages+=("$pkg"); break; fi
  done
done < <(ldd "$binary" | awk '/=> \// {print $3}')
include="$(printf '%s\n' "${packages[@]}" | sort -u | paste -sd, -)"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "build-image: debootstrap bookworm (minbase + $include)"
debootstrap --variant=minbase --include="$include" bookworm "$work/rootfs" "$mirror" > "$work/debootstrap.log" 2>&1 \
  || { tail -20 "$work/debootstrap.log" >&2; exit 1; }
install -m 0755 "$binary" "$work/rootfs/usr/bin/fracpack"
strip "$work/rootfs/usr/bin/fracpack" 2> /dev/null || true
echo 'fracpack:x:65532:65532:fracpack:/nonexistent:/usr/sbin/nologin' >> "$work/rootfs/etc/passwd"
echo 'fracpack:x:65532:' >> "$work/rootfs/etc/group"
rm -rf "$work/rootfs/var/cache/apt/archives/"*.deb "$work/rootfs/var/lib/apt/lists/"* "$work/rootfs/usr/share/doc" "$work/rootfs/usr/share/man"

rm -rf "$out/oci" && mkdir -p "$out"
umoci init --layout "$out/oci"
umoci new --image "$out/oci:fracpack"
umoci unpack --image "$out/oci:fracpack" "$work/bundle" > /dev/null
cp -a "$work/rootfs/." "$work/bundle/rootfs/"
umoci repack --image "$out/oci:fracpack" "$work/bundle"
umoci config --image "$out/oci:fracpack" --tag "$version" --config.user 65532:65532 \
  --config.entrypoint /usr/bin/fracpack --config.cmd serve --config.cmd --help \
  --config.label "org.opencontainers.image.version=$version" --config.label "org.opencontainers.image.title=fracpack"
umoci rm --image "$out/oci:fracpack"
umoci gc --layout "$out/oci"
tar -C "$out/oci" -cf "$out/fracpack-$version.oci.tar" .
echo "build-image: $out/oci (fracpack:$version), $(du -sh "$out/fracpack-$version.oci.tar" | cut -f1) as $out/fracpack-$version.oci.tar"
