#!/usr/bin/env bash
# Installs what is missing, builds gangway (release) and runs it all-in-one on this machine:
# `gangway up` starts the controller (SQLite under ./gangway-data) and a local agent with 8
# fake H100 GPUs, submits the example jobs of examples/live/, and runs until Ctrl-C. Extra
# arguments go to `gangway up` (e.g. --port 0, --fake-gpus 4xA100-40GB, -v).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake --preset release -DGANGWAY_BUILD_TESTS=OFF -DGANGWAY_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build --preset release -j "$(nproc)" --target gangway
exec build/release/gangway up --submit examples/live/single-gpu.yaml \
  examples/live/nvlink-8gpu.yaml examples/live/inference-fractional.yaml \
  examples/live/gang-2x8.yaml "$@"
