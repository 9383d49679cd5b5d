#!/usr/bin/env bash
# The README's test command and CI's whole run: installs the Debian packages, then runs each CI
# job in turn, from nothing, and prints what each took.
#   release         GCC Release: build everything, the whole suite        (scripts/ci/release.sh)
#   package         cmake --install, examples/embed against it, headers   (scripts/ci/package.sh)
#   clang-sanitize  clang-16 -Werror, ASan+UBSan suite, libFuzzer targets (scripts/ci/sanitize.sh)
#   tsan            GCC ThreadSanitizer, the concurrency tests            (scripts/ci/tsan.sh)
# Usage: scripts/test.sh [JOB ...]   (default: all four, in this order)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=("$@")
[ "${#jobs[@]}" -gt 0 ] || jobs=(release package clang-sanitize tsan)
declare -A scripts=([release]=release.sh [package]=package.sh [clang-sanitize]=sanitize.sh [tsan]=tsan.sh)
./scripts/install-deps.sh
summary=()
status=0
for job in "${jobs[@]}"; do
  script="${scripts[$job]:-}"
  [ -n "$script" ] || { echo "test.sh: no job $job (release, package, clang-sanitize, tsan)"; exit 2; }
  echo "=== job $job"
  started=$(date +%s)
  if "./scripts/ci/$script"; then result=passed; else result=FAILED; status=1; fi
  summary+=("$(printf '%-15s %-7s %5d s' "$job" "$result" $(( $(date +%s) - started )))")
  [ "$result" = passed ] || break  # later jobs would only repeat the failure's cost
done
echo "=== CI jobs"
printf '%s\n' "${summary[@]}"
exit "$status"
