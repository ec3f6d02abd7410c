#!/usr/bin/env bash
# Checks the agent's NVML discovery and GPU isolation on a real NVIDIA machine.
#
#   scripts/device_nvml_check.sh [BUILD_DIR]     (default build/nvml-check)
#
# 1. builds only the `gangway` binary with the agent part (Release, no tests, no benchmarks)
#    unless $GANGWAY_BIN names a binary already built;
# 2. `gangway agent --print-inventory`: what NVML reports, as the agent would register it
#    (models, memory, UUIDs, NVLink domains, MIG mode and instances);
# 3. `gangway agent --try-gpus 0 -- nvidia-smi -L`: one task launched as the agent launches
#    tasks, with CUDA_VISIBLE_DEVICES/NVIDIA_VISIBLE_DEVICES = GPU 0's UUID; nvidia-smi -L lists
#    every GPU regardless, so the task also prints the variable;
# 4. if python3 with torch is there, a task with GPUs 0,1 counts the CUDA devices it sees
#    (should be 2).
# Exits non-zero at the first step that fails. Needs no network and no controller.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$repo/build/nvml-check}"
bin="${GANGWAY_BIN:-}"

if [[ -z "$bin" ]]; then
  if ! command -v cmake >/dev/null; then
    echo "device_nvml_check: cmake is not installed; build gangway elsewhere and set GANGWAY_BIN" >&2
    exit 2
  fi
  generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  jobs="$(nproc 2>/dev/null || echo 4)"
  echo "== building gangway in $build (-j$jobs)"
  if ! cmake -S "$repo" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DGANGWAY_BUILD_TESTS=OFF -DGANGWAY_BUILD_BENCHMARKS=OFF -DGANGWAY_LIVE_PARTS=agent; then
    echo "device_nvml_check: cmake configure failed (missing build dependencies? see" \
         "scripts/deps.sh: yaml-cpp, nlohmann-json, CLI11, fmt, spdlog, cpp-httplib, sqlite3," \
         "liblzma); build gangway elsewhere and set GANGWAY_BIN" >&2
    exit 2
  fi
  cmake --build "$build" --target gangway -j "$jobs"
  bin="$build/gangway"
fi

echo "== driver"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=index,name,memory.total,uuid,mig.mode.current --format=csv || true
  nvidia-smi topo -m || true
else
  echo "(nvidia-smi not in PATH)"
fi

data="$(mktemp -d)"
trap 'rm -rf "$data"' EXIT

echo "== gangway agent --print-inventory"
"$bin" agent --name nvml-check --data "$data" --print-inventory | tee "$data/inventory.json"

echo "== task on GPU 0: nvidia-smi -L"
"$bin" agent --name nvml-check --data "$data" --try-gpus 0 -- \
  sh -c 'echo "CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"; echo "NVIDIA_VISIBLE_DEVICES=$NVIDIA_VISIBLE_DEVICES"; nvidia-smi -L'

if command -v python3 >/dev/null && python3 -c 'import torch' 2>/dev/null; then
  echo "== task on GPUs 0,1: torch.cuda.device_count() (expect 2)"
  "$bin" agent --name nvml-check --data "$data" --try-gpus 0,1 -- \
    python3 -c 'import torch; print(torch.cuda.device_count(), [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())])'
else
  echo "== (no python3 with torch: skipped the device-count check)"
fi
echo "== done"
