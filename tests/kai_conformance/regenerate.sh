#!/usr/bin/env bash
# Regenerates tests/kai_conformance/scenarios/*.json from a KAI Scheduler commit.
#
# Usage: tests/kai_conformance/regenerate.sh <kai-git-dir> <commit>
#   <kai-git-dir>  a KAI Scheduler git repository (bare or not)
#   <commit>       the commit to convert (any rev; the full sha is recorded)
#
# Works offline: the generator uses only the Go standard library, and Go's
# caches are pointed at a temporary directory that is removed afterwards.
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: $0 <kai-git-dir> <commit>" >&2
  exit 2
fi
kai_git=$1
commit=$(git -C "$kai_git" rev-parse --verify "$2^{commit}")

here=$(cd "$(dirname "$0")" && pwd)
out="$here/scenarios"
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT

# Only pkg/ (the tests and the constants they use) and go.mod are needed.
mkdir "$tmp/kai"
git -C "$kai_git" archive "$commit" go.mod pkg | tar -x -C "$tmp/kai"

export GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local
export GOCACHE="$tmp/gocache" GOPATH="$tmp/gopath"
(cd "$here/generator" && go run . --kai "$tmp/kai" --commit "$commit" --out "$tmp/out")

# Replace the old files only once generation has succeeded, so that files of
# tests dropped from the list do not linger.
mkdir -p "$out"
rm -f "$out"/*.json
cp "$tmp/out"/*.json "$out/"
echo "wrote $(ls "$out"/*.json | wc -l) files to $out for KAI $commit"
