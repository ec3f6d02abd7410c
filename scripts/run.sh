#!/usr/bin/env bash
# Installs what is missing, builds gangway (release) and runs one scheduling pass over the
# bundled example cluster and jobs. Extra arguments go to `gangway plan`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake --preset release -DGANGWAY_BUILD_TESTS=OFF -DGANGWAY_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build --preset release -j "$(nproc)" --target gangway
exec build/release/gangway plan --cluster examples/cluster.yaml --jobs examples/jobs.yaml \
  --policy examples/policy.yaml "$@"
