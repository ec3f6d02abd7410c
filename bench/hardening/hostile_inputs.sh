#!/usr/bin/env bash
# Measures what the hardening issue's defects cost once fixed, against a real `gangway up`
# (controller + one agent with 8 fake GPUs) on 127.0.0.1:
#   1. 150 job bodies that are not UTF-8, then one good job: its submit-to-scheduled time and
#      the cycle time after them (before the fix: nothing started for 2.5 minutes);
#   2. controller memory (peak RSS) under a 300 MB chunked upload without a token, and with
#      one (before: 109 -> 435 MB);
#   3. a job with timeLimit: 2s running `sleep 20`: how long until it ends as timeout
#      (before: it ran the full 20 s);
#   4. on a second controller with --max-connections 16: 40 connections trickling their
#      headers (a byte every 2 s), from one address and then from 40, and meanwhile how long an
#      anonymous /healthz and an admin's /v1/jobs take (before: neither answered).
# Usage: bench/hardening/hostile_inputs.sh [path/to/gangway]   (default build/release/gangway)
set -euo pipefail
cd "$(dirname "$0")/../.."
gangway=$(realpath "${1:-build/release/gangway}")
repo=$(pwd)
work=$(mktemp -d)
port=$((20000 + RANDOM % 20000))
cleanup() {
  [[ -n "${slow_pid:-}" ]] && kill "$slow_pid" 2>/dev/null
  [[ -n "${up_pid:-}" ]] && kill "$up_pid" 2>/dev/null && wait "$up_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work"
"$gangway" up --port "$port" >up.log 2>&1 &
up_pid=$!
for _ in $(seq 300); do
  [[ -f gangway-data/client.json ]] && curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break
  sleep 0.1
done
token=$(python3 -c 'import json; print(json.load(open("gangway-data/client.json"))["token"])')
for _ in $(seq 300); do
  "$gangway" nodes 2>/dev/null | grep -q ready && break
  sleep 0.1
done
server_pid=$(pgrep -f "gangway server .*--listen 127.0.0.1:$port" | head -1)
api() { curl -s -H "Authorization: Bearer $token" "$@"; }
now_ms() { date +%s%3N; }
# The job's own state is the first "state" of its view (keys are sorted: "state" < "taskList").
state_of() { api "http://127.0.0.1:$port/v1/jobs/$1" | grep -o '"state":"[a-z]*"' | head -1 | cut -d'"' -f4; }

echo "== 1. 150 bodies that are not UTF-8, then a good job"
t0=$(now_ms)
codes=$(for i in $(seq 150); do
  printf 'name: bad%d\ngpu: 1\ncommand: [echo, "\xff"]\n# caf\xe9\n' "$i" |
    api -o /dev/null -w '%{http_code}\n' -H 'Content-Type: application/yaml' --data-binary @- \
      "http://127.0.0.1:$port/v1/jobs"
done | sort | uniq -c | tr '\n' ' ')
t1=$(now_ms)
echo "answers: $codes in $((t1 - t0)) ms"
t0=$(now_ms)
id=$(printf 'name: good\ngpu: 1\ncommand: [sleep, "30"]\n' |
  api -H 'Content-Type: application/yaml' --data-binary @- "http://127.0.0.1:$port/v1/jobs" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["job"]["id"])')
until [[ $(state_of "$id") != pending ]]; do
  (($(now_ms) - t0 < 60000)) || { echo "still pending after 60 s"; break; }
done
t1=$(now_ms)
echo "good job $id: submit to $(state_of "$id") $((t1 - t0)) ms (polled over HTTP)"
curl -s "http://127.0.0.1:$port/metrics" |
  grep -E '^gangway_scheduling_last_cycle_seconds|^gangway_jobs_submitted_total|^gangway_jobs\{state="pending"\}'

echo "== 2. 300 MB chunked uploads"
rss() { awk '/VmHWM/ {print $2 / 1024 " MB peak"} /VmRSS/ {print $2 / 1024 " MB now"}' "/proc/$server_pid/status" | tr '\n' ' '; }
echo "controller before: $(rss)"
for who in none token; do
  auth=()
  [[ $who == token ]] && auth=(-H "Authorization: Bearer $token")
  t0=$(now_ms)
  code=$(head -c 300000000 /dev/zero | curl -s -o /dev/null -w '%{http_code}' "${auth[@]}" \
    -H 'Content-Type: application/yaml' -H 'Transfer-Encoding: chunked' --data-binary @- \
    "http://127.0.0.1:$port/v1/jobs" || true)
  t1=$(now_ms)
  echo "chunked, $who: answer $code in $((t1 - t0)) ms; controller $(rss)"
done

echo "== 3. timeLimit: 2s running sleep 20"
t0=$(now_ms)
id=$(printf 'name: short\ngpu: 1\ntimeLimit: 2s\ncheckpoint: {grace: 5s}\ncommand: [sleep, "20"]\n' |
  api -H 'Content-Type: application/yaml' --data-binary @- "http://127.0.0.1:$port/v1/jobs" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["job"]["id"])')
until [[ $(state_of "$id") =~ ^(timeout|succeeded|failed|cancelled)$ ]]; do
  sleep 0.05
  (($(now_ms) - t0 < 30000)) || { echo "not stopped after 30 s"; break; }
done
t1=$(now_ms)
echo "job $id: submit to $(state_of "$id") in $((t1 - t0)) ms"
"$gangway" describe "$id" | grep -E "^State|^Message" | head -3

echo "== 4. 40 slow-header connections against --max-connections 16"
port4=$((port + 1))
"$gangway" server --data "$work/slow" --listen "127.0.0.1:$port4" --max-connections 16 \
  >slow.log 2>&1 &
slow_pid=$!
for _ in $(seq 300); do
  curl -sf "http://127.0.0.1:$port4/healthz" >/dev/null && break
  sleep 0.1
done
admin4=$(python3 -c "import json; print(json.load(open('$work/slow/client.json'))['token'])")
timed() {  # prints "<code> in <ms> ms" for a request given up on after 15 s
  local t0 code
  t0=$(now_ms)
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 15 "$@" || true)
  echo "$code in $(($(now_ms) - t0)) ms"
}
for addresses in 1 40; do
  python3 "$repo/bench/hardening/slow_clients.py" "$port4" 40 "$addresses" 14 >"slow-$addresses.json" &
  loris=$!
  sleep 2
  # Both at once: one waiting for a thread must not make the other's wait look short.
  timed "http://127.0.0.1:$port4/healthz" >anon.txt &
  anon=$!
  timed -H "Authorization: Bearer $admin4" "http://127.0.0.1:$port4/v1/jobs" >admin.txt
  wait "$anon"
  echo "40 slow connections from $addresses address(es):" \
    "anonymous /healthz $(cat anon.txt); admin /v1/jobs $(cat admin.txt)"
  wait "$loris"
  echo "  the slow clients saw: $(cat "slow-$addresses.json")"
done
curl -s --max-time 5 "http://127.0.0.1:$port4/metrics" | grep -E '^gangway_http_connections' || true
kill "$slow_pid"
wait "$slow_pid" 2>/dev/null || true
