#!/usr/bin/env bash
# Checks Gangway on a real NVIDIA machine, in one run:
#
#   GANGWAY_BIN=path/to/gangway [GANGWAY_LOAD=path/to/gangway_live_load] scripts/device_check.sh
#
# 1. the driver's view (nvidia-smi) and `gangway agent --print-inventory`: what NVML reports as
#    the agent registers it (models, memory, UUIDs, NVLink domains, MIG mode and instances);
# 2. `gangway agent --try-gpus 0 -- ...`: one task launched as the agent launches tasks, with
#    CUDA_VISIBLE_DEVICES/NVIDIA_VISIBLE_DEVICES set to GPU 0's UUID; with PyTorch, the task
#    counts the CUDA devices it sees (expect 1);
# 3. the live loop on the real GPU: a controller and an NVML agent, `gangway run --gpus 1 -w`
#    of a PyTorch program that allocates on the GPU it was given;
# 4. with podman and a static busybox: a container job on the real GPU, the way the agent
#    gives it (CDI where /etc/cdi or /var/run/cdi hold NVIDIA's specs, else device nodes and
#    driver libraries): it lists the GPU devices and driver libraries it sees (the busybox
#    image has no glibc to run nvidia-smi or CUDA in);
# 5. with GANGWAY_LOAD: the live benchmarks of SPEC section 6 (latency, end-to-end throughput
#    of /bin/true jobs, 10,000 heartbeating agents), pinned to 2 cores with taskset, plus the
#    machine's raw fork+exec rate of /bin/true on one core for scale.
# Without GANGWAY_BIN it builds `gangway` (Release) if cmake and the build dependencies exist.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${GANGWAY_BIN:-}"
if [[ -z "$bin" ]]; then
  command -v cmake >/dev/null || { echo "device_check: no cmake; set GANGWAY_BIN" >&2; exit 2; }
  cmake -S "$repo" -B "$repo/build/device" -DCMAKE_BUILD_TYPE=Release -DGANGWAY_BUILD_TESTS=OFF \
    -DGANGWAY_BUILD_BENCHMARKS=OFF
  cmake --build "$repo/build/device" --target gangway -j "$(nproc)"
  bin="$repo/build/device/gangway"
fi

echo "== driver"
nvidia-smi --query-gpu=index,name,memory.total,uuid,mig.mode.current --format=csv || true
nvidia-smi topo -m || true

work="$(mktemp -d)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "== gangway agent --print-inventory"
"$bin" agent --name device --data "$work/inv" --print-inventory

echo "== a task on GPU 0"
"$bin" agent --name device --data "$work/inv" --try-gpus 0 -- \
  sh -c 'echo "CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"; echo "NVIDIA_VISIBLE_DEVICES=$NVIDIA_VISIBLE_DEVICES"; nvidia-smi -L'
if python3 -c 'import torch' 2>/dev/null; then
  "$bin" agent --name device --data "$work/inv" --try-gpus 0 -- python3 -c \
    'import torch; print("torch sees", torch.cuda.device_count(), "device(s):", torch.cuda.get_device_name(0))'
fi

echo "== controller + NVML agent + gangway run"
"$bin" server --data "$work/data" --listen 127.0.0.1:0 --heartbeat 1s >"$work/server.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [[ -f "$work/data/client.json" ]] && break; sleep 0.1; done
export GANGWAY_SERVER="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["server"])' "$work/data/client.json")"
export GANGWAY_TOKEN="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["token"])' "$work/data/client.json")"
"$bin" agent --server "$GANGWAY_SERVER" --join-token-file "$work/data/join.token" --name gpu-node \
  --data "$work/agent" >"$work/agent.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do "$bin" nodes 2>/dev/null | grep -q gpu-node && break; sleep 0.1; done
"$bin" nodes
if python3 -c 'import torch' 2>/dev/null; then
  "$bin" run --gpus 1 -w -- python3 -c 'import os, torch
x = torch.ones(1 << 20, device="cuda"); torch.cuda.synchronize()
print("rank", os.environ["RANK"], "of", os.environ["WORLD_SIZE"], "on", os.environ["CUDA_VISIBLE_DEVICES"],
      torch.cuda.get_device_name(0), "sum", float(x.sum()))'
else
  "$bin" run --gpus 1 -w -- sh -c 'echo "on $CUDA_VISIBLE_DEVICES"; nvidia-smi -L'
fi
"$bin" jobs --all-users
kill "${pids[@]}" 2>/dev/null || true
wait 2>/dev/null || true
pids=()

busybox="$(command -v busybox || true)"
if command -v podman >/dev/null && [[ -n "$busybox" ]] &&
  ldd "$busybox" 2>&1 | grep -q "not a dynamic"; then
  echo "== a container on GPU 0 (podman $(podman --version | awk '{print $3}'))"
  ls /etc/cdi /var/run/cdi 2>/dev/null || echo "no CDI specs: device nodes and driver libraries"
  mkdir -p "$work/rootfs/bin"
  cp "$busybox" "$work/rootfs/bin/busybox"
  for t in sh ls echo cat; do ln -s busybox "$work/rootfs/bin/$t"; done
  tar -C "$work/rootfs" -c . | podman import -q - localhost/gangway-device-check:1 >/dev/null
  "$bin" server --data "$work/data2" --listen 127.0.0.1:0 --heartbeat 1s >"$work/server2.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do [[ -f "$work/data2/client.json" ]] && break; sleep 0.1; done
  export GANGWAY_SERVER="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["server"])' "$work/data2/client.json")"
  export GANGWAY_TOKEN="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["token"])' "$work/data2/client.json")"
  "$bin" agent --server "$GANGWAY_SERVER" --join-token-file "$work/data2/join.token" \
    --name gpu-box --data "$work/agent2" --scratch-root "$work/scratch" \
    --podman-arg="--ulimit=nofile=$(ulimit -n):$(ulimit -Hn)" \
    --podman-arg=--ulimit=nproc=4096:4096 >"$work/agent2.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do "$bin" nodes 2>/dev/null | grep -q gpu-box && break; sleep 0.1; done
  grep "containers get their GPUs" "$work/agent2.log" || true
  "$bin" run --gpus 1 --image localhost/gangway-device-check:1 -w -- sh -c \
    'echo "CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"; ls /dev | grep nvidia; ls /usr/local/nvidia/lib64 /usr/lib/x86_64-linux-gnu 2>/dev/null | grep -E "libcuda|libnvidia-ml"' \
    || { echo "container job failed; agent log:"; tail -20 "$work/agent2.log"; }
  kill "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  pids=()
  podman rmi -f localhost/gangway-device-check:1 >/dev/null 2>&1 || true
else
  echo "== containers: skipped (needs podman and a static busybox)"
fi

if [[ -n "${GANGWAY_LOAD:-}" ]]; then
  echo "== raw fork+exec of /bin/true on one core"
  start=$(date +%s.%N)
  taskset -c 0 sh -c 'i=0; while [ $i -lt 2000 ]; do /bin/true; i=$((i+1)); done'
  end=$(date +%s.%N)
  python3 -c "print('%.0f /bin/true per second on one core' % (2000 / ($end - $start)))"
  echo "== live benchmarks on 2 cores (taskset -c 0,1)"
  taskset -c 0,1 "$GANGWAY_LOAD" --gangway "$bin" --mode latency --samples 100
  taskset -c 0,1 "$GANGWAY_LOAD" --gangway "$bin" --mode throughput --jobs 10000
  taskset -c 0,1 "$GANGWAY_LOAD" --gangway "$bin" --mode heartbeats --simulated-agents 10000 --seconds 20
  echo "== throughput on all $(nproc) cores"
  "$GANGWAY_LOAD" --gangway "$bin" --mode throughput --jobs 10000
  echo "== 10,000 agents over TLS, a handshake per report (the load generator gets the other cores)"
  "$GANGWAY_LOAD" --gangway "$bin" --mode heartbeats --tls ecdsa --simulated-agents 10000 --seconds 20
fi
echo "== done"
