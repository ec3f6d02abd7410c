#!/usr/bin/env python3
"""Failover time of a group of controllers on etcd (docs/design/ha.md, issue 18).

Starts one etcd member, three `gangway server --etcd` controllers and one agent with fake
GPUs on loopback ports in a temporary directory, then, RUNS times: SIGKILLs the leader,
submits a job to whichever controller takes it, and measures the time from the kill to the
job running (the new leader elected, caught up, loaded, the agent re-registered and the job
placed and started). The killed controller is started again as a standby before the next run.
Prints every run and p50/p99; nothing is asserted.

With `--standby-reads N` it first measures, N times, how long after the leader acknowledged a
job a standby's copy answers GET /v1/jobs/{id} (the leader's batch in etcd, the standby's
watch event, its read of the log and the job mirror), polling the standby every millisecond.

With `--output-copies N` it measures, N times, how long after the leader holds the whole
output of a finished job (GET /v1/jobs/{id}/logs says complete) a standby answers the same
bytes from its copy (log_follower.h: the leader's feed polled every 250 ms, then the bytes
fetched), for a job writing --output-bytes.

  bench/ha/failover.py [--gangway build/release/gangway] [--runs 10] [--lease-ttl 5]
                       [--standby-reads 0] [--output-copies 0] [--output-bytes 1048576]
"""

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import etcd_members

TOKEN = "bench-admin-token-0123456789abcdef"
JOIN = "bench-join-token-0123456789abcdef"


def http(method, url, body=None, timeout=1.0):
    req = urllib.request.Request(url, method=method, data=body)
    req.add_header("Authorization", "Bearer " + TOKEN)
    if body is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as res:
            return res.status, json.loads(res.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, {}
    except (OSError, ValueError):
        return 0, {}


def read_log(url, job_id):
    """The whole output of task 0 as one read, and whether the controller calls it complete."""
    req = urllib.request.Request("%s/v1/jobs/%d/logs?limit=16777216" % (url, job_id))
    req.add_header("Authorization", "Bearer " + TOKEN)
    try:
        with urllib.request.urlopen(req, timeout=1.0) as res:
            return res.read(), res.headers.get("X-Gangway-Log-Complete") == "true"
    except (OSError, ValueError):
        return b"", False


def wait(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    sys.exit("timed out waiting for " + what)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gangway", default="build/release/gangway")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--lease-ttl", type=int, default=5)
    ap.add_argument("--standby-reads", type=int, default=0)
    ap.add_argument("--output-copies", type=int, default=0)
    ap.add_argument("--output-bytes", type=int, default=1 << 20)
    args = ap.parse_args()
    gangway = os.path.abspath(args.gangway)
    work = tempfile.mkdtemp(prefix="gangway-ha-bench-")
    procs = []
    controllers = [None, None, None]
    try:
        members, clients = etcd_members.start(work, count=1)
        procs += members
        etcd_url = clients[0]
        with open(work + "/auth.yaml", "w") as f:
            f.write("joinToken: %s\nusers:\n  - name: admin\n    token: %s\n    role: admin\n"
                    % (JOIN, TOKEN))
        ports = [etcd_members.free_port() for _ in range(3)]
        urls = ["http://127.0.0.1:%d" % p for p in ports]

        def start(i):
            log = open("%s/c%d.log" % (work, i + 1), "a")
            controllers[i] = subprocess.Popen(
                [gangway, "server", "--data", "%s/c%d" % (work, i + 1),
                 "--listen", "127.0.0.1:%d" % ports[i], "--advertise", urls[i],
                 "--auth", work + "/auth.yaml", "--etcd", etcd_url,
                 "--lease-ttl", str(args.lease_ttl)],
                stdout=log, stderr=log)

        def leader():
            for i, url in enumerate(urls):
                if controllers[i] and controllers[i].poll() is None:
                    status, body = http("GET", url + "/healthz", timeout=0.5)
                    if status == 200 and body.get("role") == "leader":
                        return i + 1  # 1-based, so that 0 is "none"
            return 0

        for i in range(3):
            start(i)
        wait(leader, 30, "a leader")
        procs.append(subprocess.Popen(
            [gangway, "agent", "--server", ",".join(urls), "--join-token", JOIN,
             "--name", "n1", "--fake-gpus", "8xH100-80GB", "--data", work + "/agent"],
            stdout=subprocess.DEVNULL, stderr=open(work + "/agent.log", "w")))
        wait(lambda: any(http("GET", u + "/v1/nodes/n1")[0] == 200 for u in urls), 30, "the agent")

        if args.standby_reads:
            led = leader() - 1
            standby = urls[(led + 1) % 3]
            lags = []
            for _ in range(args.standby_reads):
                body = json.dumps({"name": "read", "gpu": 1, "command": ["true"]}).encode()
                status, answer = http("POST", urls[led] + "/v1/jobs", body)
                t0 = time.monotonic()
                if status != 201:
                    sys.exit("the leader refused a job: %s" % answer)
                path = "%s/v1/jobs/%d" % (standby, answer["job"]["id"])
                while http("GET", path)[0] != 200:
                    if time.monotonic() - t0 > 10:
                        sys.exit("the standby never showed job %d" % answer["job"]["id"])
                    time.sleep(0.001)
                lags.append(time.monotonic() - t0)
            lags.sort()
            p99 = lags[min(len(lags) - 1, int(round(0.99 * (len(lags) - 1))))]
            print("a job acknowledged by the leader is read from a standby after: p50 %.1f ms, "
                  "p99 %.1f ms, max %.1f ms (%d jobs)" %
                  (1000 * statistics.median(lags), 1000 * p99, 1000 * lags[-1], len(lags)),
                  flush=True)

        if args.output_copies:
            led = leader() - 1
            standby = urls[(led + 1) % 3]
            lags = []
            command = ["sh", "-c", "head -c %d /dev/urandom | base64" % (args.output_bytes * 3 // 4)]
            for _ in range(args.output_copies):
                body = json.dumps({"name": "output", "gpu": 1, "command": command}).encode()
                status, answer = http("POST", urls[led] + "/v1/jobs", body)
                if status != 201:
                    sys.exit("the leader refused a job: %s" % answer)
                job_id = answer["job"]["id"]
                t_leader = time.monotonic()
                while True:
                    data, complete = read_log(urls[led], job_id)
                    if complete:
                        break
                    if time.monotonic() - t_leader > 60:
                        sys.exit("the leader never had job %d's whole output" % job_id)
                    time.sleep(0.001)
                t_leader = time.monotonic()
                while read_log(standby, job_id) != (data, True):
                    if time.monotonic() - t_leader > 10:
                        sys.exit("the standby never had job %d's output" % job_id)
                    time.sleep(0.001)
                lags.append(time.monotonic() - t_leader)
            lags.sort()
            p99 = lags[min(len(lags) - 1, int(round(0.99 * (len(lags) - 1))))]
            print("a job's whole output (%d bytes) on the leader is read from a standby's copy "
                  "after: p50 %.1f ms, p99 %.1f ms, max %.1f ms (%d jobs)" %
                  (len(data), 1000 * statistics.median(lags), 1000 * p99, 1000 * lags[-1],
                   len(lags)), flush=True)

        job = json.dumps({"name": "after-failover", "gpu": 1, "command": ["true"]}).encode()
        times = []
        for run in range(args.runs):
            killed = leader() - 1
            controllers[killed].send_signal(signal.SIGKILL)
            controllers[killed].wait()
            t0 = time.monotonic()

            def submitted():
                for url in urls:
                    status, body = http("POST", url + "/v1/jobs", job)
                    if status == 201:
                        return url, body["job"]["id"]
                return None

            url, job_id = wait(submitted, 60, "a controller to take the job")

            def started():
                status, body = http("GET", "%s/v1/jobs/%d" % (url, job_id))
                return status == 200 and body["job"]["state"] in ("running", "succeeded")

            wait(started, 60, "the job to start")
            elapsed = time.monotonic() - t0
            times.append(elapsed)
            print("run %d: killed c%d; job %d running after %.2f s" %
                  (run + 1, killed + 1, job_id, elapsed), flush=True)
            start(killed)
            # The restarted one stands by before the next kill.
            wait(lambda: http("GET", urls[killed] + "/healthz")[1].get("status") == "standby",
                 30, "the restarted controller")
        if not times:
            return
        times.sort()
        p99 = times[min(len(times) - 1, int(round(0.99 * (len(times) - 1))))]
        print("lease TTL %d s, %d runs: p50 %.2f s, p99 %.2f s, min %.2f s, max %.2f s" %
              (args.lease_ttl, len(times), statistics.median(times), p99, times[0], times[-1]))
    finally:
        for p in controllers + procs:
            if p and p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in controllers + procs:
            if p:
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
