#!/usr/bin/env bash
# Side by side with a Python peer of the Tiresias family (issue 21): SymbioticLab/Tiresias'
# simulator (commit 959f9b0, the one ../shared/data/traces/README.md names) and gangway replay
# the same Philly jobs on 256 GPUs under FIFO, SRTF (`shortest`) and 2D-LAS (`dlas-gpu`), one
# run at a time, and print wall time, peak memory and average JCT of each.
#
#   bench/sim/tiresias_peer.sh TIRESIAS_DIR PYTHON2 [GANGWAY] [JOBS...]
#
# TIRESIAS_DIR is a checkout of https://github.com/SymbioticLab/Tiresias at 959f9b0 (its
# simulator/ folder is used); PYTHON2 a Python 2.7 interpreter (Debian 12 has none; pyenv
# builds one). Set PEER_NUMPY=1 if it has numpy. GANGWAY defaults to build/release/gangway;
# JOBS to "10000 20000": the first that many Philly jobs by submit time.
#
# Matching the peer: it places by GPU count alone (--scheme=count), so gangway gets one
# 256-GPU node; it loses no work when it preempts, so gangway checkpoints every second; it
# re-ranks at every event, so gangway runs a cycle at every event (--cycle-interval 0). Still
# different: a gangway job stops 30 s (its checkpoint grace) after it is preempted, the peer's
# at once. The profiles are bench/sim/tiresias/*.yaml. Each run is cut off after $LIMIT
# seconds (default 1800).
set -euo pipefail
cd "$(dirname "$0")/../.."
TIRESIAS=$(cd "$1/simulator" && pwd)
PYTHON2=$2
GANGWAY=$(realpath "${3:-build/release/gangway}")
shift $(( $# > 3 ? 3 : $# ))
SIZES=(10000 20000)
[ $# -eq 0 ] || SIZES=("$@")
LIMIT=${LIMIT:-1800}
T=${TRACES:-../shared/data/traces}
OUT=${OUT:-/tmp/gangway-tiresias-peer}
PROFILES=$PWD/bench/sim/tiresias
mkdir -p "$OUT/pyshim"
# The peer imports numpy for one numpy.mean of a list (jobs.py, a statistic its policies do
# not read); pip cannot reach PyPI here, so that one function is given as plain Python.
[ -n "${PEER_NUMPY:-}" ] || printf 'def mean(xs):\n    return float(sum(xs)) / len(xs)\n' \
  >"$OUT/pyshim/numpy.py"
printf 'num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n1,32,8,64,256\n' \
  >"$OUT/n32g8.csv"

# The first N Philly jobs by submit time, 1 to 256 GPUs, as Tiresias' CSV (times in seconds
# from the first submit; iterations and model are not used by these policies).
convert() {
  xz -dc "$T/philly/philly_jobs_pollux.csv.xz" | python3 -c '
import csv, sys
from datetime import datetime
n = int(sys.argv[1])
rows = []
for r in csv.DictReader(sys.stdin):
    g = int(r["num_gpus"]); d = int(float(r["duration"]))
    if 1 <= g <= 256 and d > 0:
        rows.append((datetime.strptime(r["timestamp"], "%Y-%m-%d %H:%M:%S"), g, d))
rows.sort(key=lambda r: r[0])
rows = rows[:n]
t0 = rows[0][0]
w = csv.writer(sys.stdout, lineterminator="\n")
w.writerow(["job_id", "num_gpu", "submit_time", "iterations", "model_name", "duration", "interval"])
for i, (t, g, d) in enumerate(rows):
    s = int((t - t0).total_seconds())
    nxt = int((rows[i + 1][0] - t0).total_seconds()) if i + 1 < len(rows) else s
    w.writerow([i, g, s, d, "resnet50", d, nxt - s])
' "$1"
}

# Average JCT in hours of the peer's job log, and how many jobs it holds.
peer_jct() {
  python3 -c '
import csv, sys
j = [int(r["JCT"]) for r in csv.DictReader(open(sys.argv[1]))]
print(f"{sum(j) / len(j) / 3600:.2f} {len(j)}")' "$1"
}

printf '%-6s %-9s %9s %9s %9s %9s %11s %11s %8s %8s\n' jobs policy peer_s gangway_s speedup \
  cycles peer_jct_h gw_jct_h peer_MB gw_MB
for n in "${SIZES[@]}"; do
  trace="$OUT/philly_$n.csv"
  convert "$n" >"$trace"
  for policy in fifo shortest dlas-gpu; do
    log="$OUT/peer_${n}_$policy"
    rm -rf "$log"
    set +e
    (cd "$TIRESIAS" && PYTHONPATH="$OUT/pyshim" /usr/bin/time -f "%e %M" -o "$OUT/peer_time.txt" timeout "$LIMIT" \
      "$PYTHON2" run_sim.py --cluster_spec="$OUT/n32g8.csv" --scheme=count \
      --trace_file="$trace" --schedule="$policy" --log_path="$log" >"$OUT/peer_stdout.txt" 2>&1)
    peer_rc=$?
    /usr/bin/time -f "%e %M" -o "$OUT/gw_time.txt" timeout "$LIMIT" "$GANGWAY" sim run \
      --nodes 1x256xV100-32GB --trace "$trace" --format tiresias \
      --policy "$PROFILES/$policy.yaml" --checkpoint-interval 1s --cycle-interval 0 \
      --threads 1 -o json >"$OUT/gw_summary.json" 2>"$OUT/gw_stderr.txt"
    gw_rc=$?
    set -e
    read -r peer_s peer_kb < <(tail -1 "$OUT/peer_time.txt")
    read -r gw_s gw_kb < <(tail -1 "$OUT/gw_time.txt")
    peer_jct=stopped
    if [ "$peer_rc" -eq 0 ]; then
      read -r peer_jct peer_done < <(peer_jct "$log/job.csv")
      [ "$peer_done" -eq "$n" ] || peer_jct="$peer_jct($peer_done)"
    fi
    read -r cycles gw_jct < <(python3 -c '
import json, sys
try:
    s = json.load(open(sys.argv[1]))
    print(s["cycles"], "%.2f" % (s["jct_s"]["avg"] / 3600))
except Exception:
    print("-", "stopped")' "$OUT/gw_summary.json")
    [ "$gw_rc" -eq 0 ] || gw_jct="stopped($gw_rc)"
    speedup=$(python3 -c "print(f'{$peer_s / max($gw_s, 0.01):.1f}x')")
    printf '%-6s %-9s %9s %9s %9s %9s %11s %11s %8s %8s\n' "$n" "$policy" "$peer_s" "$gw_s" \
      "$speedup" "$cycles" "$peer_jct" "$gw_jct" "$((peer_kb / 1024))" "$((gw_kb / 1024))"
  done
done
