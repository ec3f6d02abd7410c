#!/usr/bin/env bash
# The synthetic month of issue 21: generates a million jobs on 10,000 nodes (sim generate) and
# replays them under every profile in examples/sim/philly and examples/sim/gavel, one run at a
# time, printing wall time, peak memory, cycles and the summary of each.
#
#   bench/sim/synthetic_month.sh [GANGWAY] [OUT_DIR] [extra generate flags, e.g. --load 0.6]
#
# GANGWAY defaults to build/release/gangway; OUT_DIR to /tmp/gangway-month. Each replay is cut
# off after $LIMIT seconds (default 900) and reported as such.
set -euo pipefail
cd "$(dirname "$0")/../.."
GANGWAY=${1:-build/release/gangway}
OUT=${2:-/tmp/gangway-month}
shift $(( $# > 2 ? 2 : $# ))
LIMIT=${LIMIT:-900}
T=${TRACES:-../shared/data/traces}
mkdir -p "$OUT"

/usr/bin/time -f "generate: %e s, peak %M KB" "$GANGWAY" sim generate \
  --philly-trace "$T/philly/philly_jobs_pollux.csv.xz" \
  --openb-pods "$T/alibaba-gpu-v2023-openb/openb_pod_list_default.csv" \
  --openb-nodes "$T/alibaba-gpu-v2023-openb/openb_node_list_gpu_node.csv" \
  --jobs 1000000 --nodes 10000 --span 30d --seed 1 --out-dir "$OUT" "$@"

printf '%-14s %8s %9s %8s %10s %9s %9s %9s\n' profile wall_s peak_MB cycles us/cycle completed avg_jct preempt
for profile in examples/sim/philly/*.yaml examples/sim/gavel/{fifo,drf,quota}.yaml; do
  name=$(basename "$(dirname "$profile")")/$(basename "$profile" .yaml)
  set +e
  /usr/bin/time -f "%e %M" -o "$OUT/time.txt" timeout "$LIMIT" "$GANGWAY" sim run \
    --cluster "$OUT/cluster.yaml" --trace "$OUT/trace.csv" --policy "$profile" \
    --cycle-interval 60 -o json --threads 1 >"$OUT/summary.json" 2>"$OUT/stderr.txt"
  rc=$?
  set -e
  read -r wall peak < <(tail -1 "$OUT/time.txt")
  if [ "$rc" -ne 0 ]; then
    printf '%-14s %8s %9s  %s\n' "$name" "$wall" "$((peak / 1024))" "stopped (exit $rc)"
    continue
  fi
  python3 - "$name" "$wall" "$peak" "$OUT/summary.json" <<'PY'
import json, sys
name, wall, peak, path = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
s = json.load(open(path))
cycles = s["cycles"]
print(f'{name:<14} {wall:8.1f} {peak // 1024:9d} {cycles:8d} {1e6 * wall / max(cycles, 1):10.0f} '
      f'{s["jobs"]["completed"]:9d} {s["jct_s"]["avg"] / 3600:8.2f}h {s["preemptions"]:9d}')
PY
done
