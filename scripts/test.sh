#!/usr/bin/env bash
# Installs what is missing, builds under AddressSanitizer + UBSan and runs the whole suite; then
# builds the fuzz targets with clang (fuzz/) and runs each a few seconds on its seed corpus.
# Arguments go to the first ctest; with any (say -R Controller) the fuzz step is left out.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
jobs=$(nproc)
cmake --preset asan-ubsan >/dev/null
cmake --build --preset asan-ubsan -j "$jobs"
ctest --preset asan-ubsan -j "$jobs" "$@"
if (($# == 0)); then
  cmake --preset fuzz >/dev/null
  cmake --build --preset fuzz -j "$jobs"
  ctest --preset fuzz -j "$jobs"
fi
