#!/usr/bin/env bash
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
# Builds the fuzz preset (clang, libFuzzer, ASan + UBSan; installs what is missing) and runs each
# target (all by default; "job_file" or "job_file_fuzzer") for SECONDS (60) on a copy of its
# seed corpus fuzz/corpus/<target>, FUZZ_JOBS (default: the number of cores) at a time. Prints
# each target's executions per second and any crash file; exits non-zero if one crashed.
# Everything a run writes (logs, the grown corpus, crash files) stays in build/fuzz/runs/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=60
if [[ $# -gt 0 && $1 =~ ^[0-9]+$ ]]; then
  seconds=$1
  shift
fi
targets=()
for t in "$@"; do targets+=("${t%_fuzzer}_fuzzer"); done
if ((${#targets[@]} == 0)); then
  for d in fuzz/corpus/*/; do targets+=("$(basename "$d")"); done
fi
for t in "${targets[@]}"; do
  [[ -d fuzz/corpus/$t ]] || { echo "fuzz.sh: no target $t (see fuzz/corpus/)" >&2; exit 2; }
done

scripts/deps.sh
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "$(nproc)"

run_dir=build/fuzz/runs/$(date +%Y%m%d-%H%M%S)
mkdir -p "$run_dir"
# One target: fuzz a copy of its corpus, then one summary line.
run_one() {
  local t=$1 dir=$run_dir/$1
  mkdir -p "$dir/corpus"
  cp fuzz/corpus/"$t"/* "$dir/corpus/"
  local rc=0 dict=()
  [[ ! -f fuzz/dicts/$t.dict ]] || dict=(-dict="fuzz/dicts/$t.dict")
  build/fuzz/fuzz/"$t" -max_total_time="$seconds" -timeout=25 -print_final_stats=1 "${dict[@]}" \
    -artifact_prefix="$dir/" "$dir/corpus" >"$dir/log" 2>&1 || rc=$?
  local execs speed crash
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | tail -1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$dir/log" | tail -1)
  crash=$(find "$dir" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
          -o -name 'oom-*' \) | head -1)
  printf '%-24s %8s execs/s %10s runs  corpus %3d -> %4d' "$t" "${speed:-?}" "${execs:-?}" \
    "$(ls fuzz/corpus/"$t" | wc -l)" "$(ls "$dir/corpus" | wc -l)"
  if ((rc != 0)); then
    printf '  FAILED (exit %d)%s, log %s\n' "$rc" "${crash:+: $crash}" "$dir/log"
    touch "$dir/failed"
  else
    printf '  ok\n'
  fi
}

echo "fuzzing ${#targets[@]} targets for ${seconds} s each in $run_dir"
parallel=${FUZZ_JOBS:-$(nproc)}
for t in "${targets[@]}"; do
  while (($(jobs -rp | wc -l) >= parallel)); do wait -n || true; done
  run_one "$t" &
done
wait
if compgen -G "$run_dir/*/failed" >/dev/null; then exit 1; fi
